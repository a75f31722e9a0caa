package llm

import (
	"io"
	"net"
	"net/http"
	"slices"
)

// RequestBody is a request's body in pieces, sent one after the other as they are: a
// long chat's history is the EncodeCache's own buffer, never copied into one body.
type RequestBody struct {
	parts [][]byte
	size  int64
}

// NewRequestBody is the body of parts in order (empty ones are fine).
func NewRequestBody(parts ...[]byte) *RequestBody {
	b := &RequestBody{parts: slices.DeleteFunc(parts, func(p []byte) bool { return len(p) == 0 })}
	for _, p := range b.parts {
		b.size += int64(len(p))
	}
	return b
}

// NewJSONBody is head, the items comma-separated (empty ones left out), then tail: a JSON
// value whose array of items is sent from the items' own bytes.
func NewJSONBody(head []byte, items [][]byte, tail []byte) *RequestBody {
	parts := make([][]byte, 0, 2*len(items)+2)
	parts = append(parts, head)
	sep := []byte{','}
	for _, it := range items {
		if len(it) == 0 {
			continue
		}
		if len(parts) > 1 {
			parts = append(parts, sep)
		}
		parts = append(parts, it)
	}
	return NewRequestBody(append(parts, tail)...)
}

// Len is the body's length in bytes.
func (b *RequestBody) Len() int64 { return b.size }

// Bytes is the body in one new slice.
func (b *RequestBody) Bytes() []byte {
	out := make([]byte, 0, b.size)
	for _, p := range b.parts {
		out = append(out, p...)
	}
	return out
}

// Attach makes b the body of r, for every attempt (GetBody) and with its length. A
// provider SDK's middleware calls it on each attempt, after the SDK has put its own
// (placeholder) body in.
func (b *RequestBody) Attach(r *http.Request) {
	r.ContentLength = b.size
	r.GetBody = func() (io.ReadCloser, error) {
		bufs := net.Buffers(slices.Clone(b.parts)) // Read consumes the slice it reads
		return io.NopCloser(&bufs), nil
	}
	r.Body, _ = r.GetBody()
}
