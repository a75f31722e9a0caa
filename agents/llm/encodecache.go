package llm

import "sync"

// EncodeCache keeps what a provider made of a chat's messages on the wire between the
// requests of that chat, so that a request encodes only the messages that are new since
// the last one and sends the bytes of the others as they are. A chat only ever grows at
// its end, and a message that changes (the last one, merged with the next of the same
// role) gets a new Content slice: an entry holds for a message while its Content is the
// very slice (same first element, same length) it was encoded from. An entry is the
// encoding of one owner (a provider and model); another owner's requests start the cache
// afresh. The zero value is empty and ready; a nil *EncodeCache keeps nothing. Safe for
// concurrent use.
//
// The entries of the messages a request has asked for joined (Join) are kept in one
// buffer, comma-separated, so that the history of a long chat is one slice a request body
// sends without copying it. Bytes handed out are never written again: a change to a
// joined message starts a new buffer, since a request still being sent may read the old.
type EncodeCache struct {
	mu      sync.Mutex
	owner   string
	entries []encoded
	// joined holds the encodings of entries[:nJoined] that are not empty, comma-separated;
	// those entries' data are slices of it.
	joined  []byte
	nJoined int
	// envKey and env are the last request envelope kept (CachedEnvelope).
	envKey, env any
}

type encoded struct {
	first *Block // &Content[0] of the message encoded
	n     int    // len(Content)
	data  []byte
	end   int // for a joined entry: len(joined) after it
}

// Get returns the bytes owner stored for message i of the chat, if m is still the
// message they were encoded from.
func (c *EncodeCache) Get(owner string, i int, m Message) ([]byte, bool) {
	if c == nil || len(m.Content) == 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owner != owner || i >= len(c.entries) || !c.entries[i].holds(m) {
		return nil, false
	}
	return c.entries[i].data, true
}

// Put stores data as owner's encoding of message i, m. The entries from i on are
// replaced (what followed a changed message is not trusted either); a gap before i
// stores nothing.
func (c *EncodeCache) Put(owner string, i int, m Message, data []byte) {
	if c == nil || len(m.Content) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owner != owner {
		c.reset(owner)
	}
	if i > len(c.entries) {
		return
	}
	c.truncate(i)
	c.entries = append(c.entries, encoded{first: &m.Content[0], n: len(m.Content), data: data})
}

// Join returns the encodings of msgs[:n] that are not empty, comma-separated, as owner
// encodes them: from the cache where it holds them, and from encode (called with the
// message's index) where it does not, keeping what encode returns. The result is the
// cache's own memory: read it, never write it. A message without content is encoded
// every time, and left out of the cache after it.
func (c *EncodeCache) Join(owner string, msgs []Message, n int, encode func(int, Message) ([]byte, error)) ([]byte, error) {
	if c == nil {
		return joinUncached(msgs[:n], encode)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owner != owner {
		c.reset(owner)
	}
	valid := min(n, len(c.entries))
	for i := range valid {
		if !c.entries[i].holds(msgs[i]) {
			valid = i
			break
		}
	}
	if valid < min(n, len(c.entries)) {
		c.truncate(valid)
	}
	for i := len(c.entries); i < n; i++ {
		if len(msgs[i].Content) == 0 {
			// Nothing to key an entry on: this and what follows are encoded each time.
			rest, err := joinUncached(msgs[i:n], func(j int, m Message) ([]byte, error) { return encode(i+j, m) })
			if err != nil {
				return nil, err
			}
			return joinBytes(c.prefix(len(c.entries)), rest), nil
		}
		data, err := encode(i, msgs[i])
		if err != nil {
			return nil, err
		}
		c.entries = append(c.entries, encoded{first: &msgs[i].Content[0], n: len(msgs[i].Content), data: data})
	}
	for i := c.nJoined; i < n; i++ {
		e := &c.entries[i]
		if len(e.data) > 0 {
			if len(c.joined) > 0 {
				c.joined = append(c.joined, ',')
			}
			start := len(c.joined)
			c.joined = append(c.joined, e.data...)
			e.data = c.joined[start:len(c.joined):len(c.joined)]
		}
		e.end = len(c.joined)
		c.nJoined = i + 1
	}
	return c.prefix(n), nil
}

// prefix is the joined encoding of entries[:n] (n ≤ nJoined), capped so that an append
// to it cannot write into the buffer.
func (c *EncodeCache) prefix(n int) []byte {
	if n == 0 {
		return nil
	}
	end := c.entries[n-1].end
	return c.joined[:end:end]
}

// CachedEnvelope returns what build makes of key, a comparable description of a request
// without its messages (model, system prompt, the identity of the tool list): from c when
// the chat's last request had the same key, else from build, which c keeps. A nil c
// keeps nothing.
func CachedEnvelope[K comparable, V any](c *EncodeCache, key K, build func() (V, error)) (V, error) {
	if c == nil {
		return build()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.envKey.(K); ok && k == key {
		return c.env.(V), nil
	}
	v, err := build()
	if err != nil {
		return v, err
	}
	c.envKey, c.env = key, v
	return v, nil
}

func (c *EncodeCache) reset(owner string) {
	c.owner, c.entries, c.joined, c.nJoined = owner, nil, nil, 0
}

// truncate drops the entries from i on. The joined buffer is cut too, and capped, so the
// next entry joined starts a new buffer instead of writing over bytes handed out.
func (c *EncodeCache) truncate(i int) {
	c.entries = c.entries[:i]
	if i < c.nJoined {
		c.nJoined = i
		end := 0
		if i > 0 {
			end = c.entries[i-1].end
		}
		c.joined = c.joined[:end:end]
	}
}

func (e *encoded) holds(m Message) bool {
	return len(m.Content) > 0 && e.first == &m.Content[0] && e.n == len(m.Content)
}

// joinUncached encodes msgs and joins the encodings that are not empty.
func joinUncached(msgs []Message, encode func(int, Message) ([]byte, error)) ([]byte, error) {
	var out []byte
	for i, m := range msgs {
		data, err := encode(i, m)
		if err != nil {
			return nil, err
		}
		out = joinBytes(out, data)
	}
	return out, nil
}

// joinBytes is a and b comma-separated, either left out when empty; a new slice when
// both are not.
func joinBytes(a, b []byte) []byte {
	switch {
	case len(b) == 0:
		return a
	case len(a) == 0:
		return b
	}
	out := make([]byte, 0, len(a)+1+len(b))
	return append(append(append(out, a...), ','), b...)
}
