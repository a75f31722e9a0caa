package streamjson

import (
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every *DecodeError: a stdin line stoke cannot accept.
// The CLI reports it on stderr and exits 2, before any model call.
var ErrMalformed = errors.New("malformed stream-json input")

// DecodeError names the stdin line that could not be decoded and why.
type DecodeError struct {
	Line   int // 1-based
	Reason string
}

func (e *DecodeError) Error() string { return fmt.Sprintf("stdin line %d: %s", e.Line, e.Reason) }

// Unwrap returns ErrMalformed.
func (e *DecodeError) Unwrap() error { return ErrMalformed }
