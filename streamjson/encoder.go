package streamjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/google/uuid"
)

// flusher is the optional ability of a writer to push out what it buffers (bufio.Writer).
type flusher interface{ Flush() error }

// maxRetainedBuffer bounds the line buffer an Encoder keeps between events, so that one huge
// event (a long tool result) does not pin its memory for the rest of the run.
const maxRetainedBuffer = 1 << 20

// Encoder writes events as NDJSON, one event per line.
//
// Encode may be called from many goroutines at once: each line is marshalled and written
// with a single Write call while the Encoder's lock is held, so lines never interleave and
// appear in the order the calls took the lock. Events are never dropped; Encode blocks for
// as long as the writer does.
type Encoder struct {
	w       io.Writer
	flush   flusher // nil when w cannot flush
	newUUID func() string

	mu        sync.Mutex
	sessionID string
	buf       bytes.Buffer
	enc       *json.Encoder // marshals into buf, without HTML escaping
	err       error         // the first write or flush error; returned by every later Encode
}

// NewEncoder returns an Encoder writing to w. sessionID is stamped on events that have none
// (it may be "" and set later with SetSessionID). newUUID makes the uuid of events that have
// none; nil means random v4 UUIDs. newUUID is called with the Encoder's lock held, so it need
// not be safe for concurrent use, and the ids it returns follow line order.
//
// If w has a Flush() error method (a bufio.Writer), it is flushed after every line.
func NewEncoder(w io.Writer, sessionID string, newUUID func() string) *Encoder {
	if newUUID == nil {
		newUUID = uuid.NewString
	}
	e := &Encoder{w: w, newUUID: newUUID, sessionID: sessionID}
	e.flush, _ = w.(flusher)
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}

// Encode stamps ev's uuid and session_id when they are empty (ev is modified), then writes it
// as one line. ev must be a non-nil pointer to an event type of this package.
//
// A marshalling error is returned and nothing is written. A write or flush error is returned
// and remembered: every later Encode returns it without writing, since the stream is broken.
// Safe for concurrent use.
func (e *Encoder) Encode(ev Event) error {
	if ev == nil {
		return errors.New("encode event: nil event")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return e.err
	}
	env := ev.envelope()
	if env.UUID == "" {
		env.UUID = e.newUUID()
	}
	if env.SessionID == "" {
		env.SessionID = e.sessionID
	}

	e.buf.Reset()
	defer e.releaseBuffer()
	if err := e.enc.Encode(ev); err != nil { // the line, with its '\n'
		return fmt.Errorf("encode %s event: %w", env.Type, err)
	}
	line := e.buf.Bytes()
	n, err := e.w.Write(line)
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	if err != nil {
		e.err = fmt.Errorf("write %s event: %w", env.Type, err)
		return e.err
	}
	if e.flush != nil {
		if err := e.flush.Flush(); err != nil {
			e.err = fmt.Errorf("flush %s event: %w", env.Type, err)
			return e.err
		}
	}
	return nil
}

// releaseBuffer drops an oversized line buffer. Called with e.mu held.
func (e *Encoder) releaseBuffer() {
	if e.buf.Cap() > maxRetainedBuffer {
		e.buf = bytes.Buffer{} // e.enc keeps writing into &e.buf
	}
}

// SetSessionID sets the session id stamped on later events that have none, for a session id
// that becomes known after the Encoder was made. Safe for concurrent use.
func (e *Encoder) SetSessionID(id string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sessionID = id
}

// SessionID returns the session id stamped on events that have none. Safe for concurrent use.
func (e *Encoder) SessionID() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sessionID
}

// Err returns the write or flush error that broke the stream, or nil. Safe for concurrent use.
func (e *Encoder) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}
