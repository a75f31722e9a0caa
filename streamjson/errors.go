package streamjson

import (
	"errors"
	"fmt"
	"strings"
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

// ErrInvalidStream is wrapped by the *ValidationError that Validate returns.
var ErrInvalidStream = errors.New("stream-json output breaks the contract")

// Violation is one broken rule of the output contract.
type Violation struct {
	// Line is the 1-based line the rule was checked on; 0 for the stream as a whole.
	Line int
	// Rule names the rule, e.g. "assistant.message.content" or "result.last".
	Rule string
	// Detail says what was found.
	Detail string
}

func (v Violation) String() string {
	if v.Line == 0 {
		return fmt.Sprintf("stream: %s: %s", v.Rule, v.Detail)
	}
	return fmt.Sprintf("line %d: %s: %s", v.Line, v.Rule, v.Detail)
}

// maxShownViolations bounds the violations listed by ValidationError.Error.
const maxShownViolations = 10

// ValidationError lists every broken rule of a stream, in line order.
type ValidationError struct {
	Violations []Violation
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d violation(s)", ErrInvalidStream, len(e.Violations))
	for i, v := range e.Violations {
		if i == maxShownViolations {
			fmt.Fprintf(&b, "\n  … and %d more", len(e.Violations)-i)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(v.String())
	}
	return b.String()
}

// Unwrap returns ErrInvalidStream.
func (e *ValidationError) Unwrap() error { return ErrInvalidStream }
