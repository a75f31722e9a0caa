package openaitest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"sync"
)

// cacheIncrement is the granularity of OpenAI's cache hits: cached_tokens is always a
// multiple of it.
const cacheIncrement = 128

// promptUsage is the input side of a response's usage when the prefix cache is on.
type promptUsage struct {
	prompt int64 // prompt_tokens: the whole prompt
	cached int64 // prompt_tokens_details.cached_tokens: the part read from the cache
}

// prefixCache simulates OpenAI's automatic prompt caching. A prompt is the model name,
// the tools array and the messages, each message as the exact bytes the client sent;
// an entry is the hash of the model, the tools and messages[0..i], for every message
// boundary i of every request seen. There is no expiry and no eviction. It is safe for
// concurrent use.
type prefixCache struct {
	minTokens int64 // shorter hits report nothing, as with the API's 1024

	mu   sync.Mutex
	seen map[[sha256.Size]byte]struct{}
}

func newPrefixCache(minTokens int64) *prefixCache {
	return &prefixCache{minTokens: minTokens, seen: map[[sha256.Size]byte]struct{}{}}
}

// tokenEstimate estimates the tokens of n bytes (bytes/4, as the scripted provider does).
func tokenEstimate(n int64) int64 { return n / 4 }

// account looks the prompt up, then remembers every message-boundary prefix of it.
// prompt is the token estimate of the tools and all messages; cached is that of the
// longest prefix ending at a message boundary that an earlier request also had,
// rounded down to a multiple of 128 tokens, or 0 when that is less than minTokens.
func (c *prefixCache) account(model string, tools json.RawMessage, msgs []json.RawMessage) promptUsage {
	sums := make([][sha256.Size]byte, len(msgs)) // sums[i]: the prefix ending with msgs[i]
	ends := make([]int64, len(msgs))             // ends[i]: its size in bytes
	h := sha256.New()
	writeField(h, []byte(model))
	writeField(h, tools)
	size := int64(len(tools))
	for i, m := range msgs {
		writeField(h, m)
		h.Sum(sums[i][:0])
		size += int64(len(m))
		ends[i] = size
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	var hit int64
	for i := len(msgs) - 1; i >= 0; i-- {
		if _, ok := c.seen[sums[i]]; ok {
			hit = tokenEstimate(ends[i])
			break
		}
	}
	for _, sum := range sums {
		c.seen[sum] = struct{}{}
	}
	cached := hit - hit%cacheIncrement
	if cached < c.minTokens {
		cached = 0
	}
	return promptUsage{prompt: tokenEstimate(size), cached: cached}
}

// writeField writes b to h with its length first, so that message boundaries are part
// of the hash.
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}
