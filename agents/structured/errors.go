package structured

import (
	"errors"
	"fmt"
)

// ErrSchema marks a schema that cannot be used.
var ErrSchema = errors.New("invalid JSON Schema")

// AttemptsError is the error of a turn whose model gave no valid structured answer in
// Attempts answers (the runtime's ReasonOutputRetries).
type AttemptsError struct{ Attempts int }

func (e *AttemptsError) Error() string {
	return fmt.Sprintf("Failed to provide valid structured output after %d attempts", e.Attempts)
}
