package anthropictest

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"sync"

	"github.com/stoke-cli/stoke/agents/llm"
)

// lookback is how many block boundaries before a breakpoint the simulated cache
// searches for an earlier entry, as the API does ("about 20 blocks").
const lookback = 20

// element is one block of a prompt in cache order (tools, system, messages): its exact
// request bytes without the cache_control key, its kind (with the message role and
// whether a new turn starts there), and whether it carried a breakpoint.
type element struct {
	kind       string
	raw        []byte
	breakpoint bool
}

// promptCache simulates the Messages API prompt cache. An entry is the hash of the
// model name and of every element from the start of the prompt up to and including a
// block that carried cache_control; there is no expiry. It is safe for concurrent use.
type promptCache struct {
	minTokens int64 // shorter prefixes are not written, as with the API's minimum

	mu      sync.Mutex
	entries map[[sha256.Size]byte]struct{}
}

func newPromptCache(minTokens int64) *promptCache {
	return &promptCache{minTokens: minTokens, entries: map[[sha256.Size]byte]struct{}{}}
}

// tokens estimates the tokens of n bytes, as the scripted provider does.
func tokens(n int64) int64 { return n / 4 }

// account looks the prompt up, writes its new breakpoints, and returns the input side
// of its usage:
//   - cache_read_input_tokens: the longest prefix already in the cache that ends at a
//     breakpoint of this request or at most lookback blocks before one;
//   - cache_creation_input_tokens: from there to the last breakpoint written now;
//   - input_tokens: the rest of the prompt.
//
// The three add up to the tokens of the whole prompt. A request without breakpoints
// neither reads nor writes.
func (c *promptCache) account(model string, elems []element) llm.Usage {
	n := len(elems)
	sums := make([][sha256.Size]byte, n) // sums[i]: the prefix ending with elems[i]
	ends := make([]int64, n)             // ends[i]: its size in bytes
	h := sha256.New()
	writeField(h, []byte(model))
	var size int64
	for i, e := range elems {
		writeField(h, []byte(e.kind))
		writeField(h, e.raw)
		h.Sum(sums[i][:0])
		size += int64(len(e.raw))
		ends[i] = size
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	read := -1 // index of the last element of the prefix read from the cache
	for p, e := range elems {
		if !e.breakpoint {
			continue
		}
		for i := p; i >= 0 && i >= p-lookback && i > read; i-- {
			if _, ok := c.entries[sums[i]]; ok {
				read = i
				break
			}
		}
	}
	written := read // index of the last element of the prefix written now
	for p, e := range elems {
		if e.breakpoint && p > read && tokens(ends[p]) >= c.minTokens {
			c.entries[sums[p]] = struct{}{}
			written = p
		}
	}
	at := func(i int) int64 {
		if i < 0 {
			return 0
		}
		return tokens(ends[i])
	}
	return llm.Usage{
		CacheReadInputTokens:     at(read),
		CacheCreationInputTokens: at(written) - at(read),
		InputTokens:              tokens(size) - at(written),
	}
}

// writeField writes b to h with its length first, so that element boundaries are
// part of the hash.
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}
