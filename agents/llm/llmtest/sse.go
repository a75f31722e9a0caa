package llmtest

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/stoke-cli/stoke/agents/llm"
)

// ErrCut is returned by an SSE writer that cut its stream on purpose (Faults.CutAfter):
// the handler stops writing and returns.
var ErrCut = errors.New("stream cut on purpose")

// SSE writes one server-sent-event answer, flushing each write, and cuts it as the
// faults of its Loopback say. Not safe for concurrent use: one handler owns it.
type SSE struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	cutAfter int
	mode     CutMode
	events   int
	cut      bool
	lb       *Loopback
	flight   *flight
}

// End says the answer is about to write its terminal event: its request no longer counts
// in Loopback.Streams. Only the first call counts; the request stops counting anyway when
// its handler returns.
func (s *SSE) End() {
	if s.lb != nil {
		s.lb.end(s.flight)
	}
}

// Event writes one event (its text ends with the blank line) and counts it. After
// the CutAfter-th event it cuts the stream and returns ErrCut.
func (s *SSE) Event(text string) error {
	if err := s.Write(text); err != nil {
		return err
	}
	s.events++
	if s.cutAfter > 0 && s.events >= s.cutAfter {
		return s.cutNow()
	}
	return nil
}

// Write writes text that does not count as an event (a terminal line, an error event).
func (s *SSE) Write(text string) error {
	if s.cut {
		return ErrCut
	}
	if _, err := io.WriteString(s.w, text); err != nil {
		return err
	}
	return s.rc.Flush()
}

// cutNow ends the stream the way the faults say.
func (s *SSE) cutNow() error {
	s.cut = true
	if s.mode == CutEnd {
		return ErrCut // the handler returns: the body ends cleanly, unfinished
	}
	conn, _, err := s.rc.Hijack() // what was written is already flushed
	if err != nil {
		return err
	}
	if tc, ok := conn.(*net.TCPConn); ok && s.mode == CutReset {
		_ = tc.SetLinger(0) // close sends RST
	}
	conn.Close()
	return ErrCut
}

// WriteJSON writes v as a JSON answer with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a failed write means the client went away
}

// ErrorStatus is the HTTP status a mock answers a model error with: the status of an
// *llm.ProviderError that carries one (a scenario's error_status), else 500.
func ErrorStatus(err error) int {
	var pe *llm.ProviderError
	if errors.As(err, &pe) && pe.StatusCode >= 400 && pe.StatusCode <= 599 {
		return pe.StatusCode
	}
	return http.StatusInternalServerError
}

// SplitHalf splits s near its middle, on a rune boundary: mocks send tool arguments
// in two pieces, so that clients must accumulate them.
func SplitHalf(s string) (string, string) {
	i := len(s) / 2
	for i > 0 && i < len(s) && !isRuneStart(s[i]) {
		i--
	}
	return s[:i], s[i:]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
