package streamjsontest

import (
	"errors"
	"fmt"
	"strings"
)

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
