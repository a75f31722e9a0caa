package llm

import "sync"

// EncodeCache keeps what a provider made of a chat's messages on the wire between the
// requests of that chat, so that a request encodes only the messages that are new since
// the last one and copies the bytes of the others. A chat only ever grows at its end, and
// a message that changes (the last one, merged with the next of the same role) gets a
// new Content slice: an entry holds for a message while its Content is the very slice
// (same first element, same length) it was encoded from. An entry is the encoding of one
// owner (a provider and model); another owner's requests start the cache afresh. The zero
// value is empty and ready; a nil *EncodeCache keeps nothing. Safe for concurrent use.
type EncodeCache struct {
	mu      sync.Mutex
	owner   string
	entries []encoded
}

type encoded struct {
	first *Block // &Content[0] of the message encoded
	n     int    // len(Content)
	data  []byte
}

// Get returns the bytes owner stored for message i of the chat, if m is still the
// message they were encoded from.
func (c *EncodeCache) Get(owner string, i int, m Message) ([]byte, bool) {
	if c == nil || len(m.Content) == 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owner != owner || i >= len(c.entries) {
		return nil, false
	}
	e := c.entries[i]
	if e.first != &m.Content[0] || e.n != len(m.Content) {
		return nil, false
	}
	return e.data, true
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
		c.owner, c.entries = owner, c.entries[:0]
	}
	if i > len(c.entries) {
		return
	}
	c.entries = append(c.entries[:i], encoded{first: &m.Content[0], n: len(m.Content), data: data})
}
