package cmd

import "fmt"

// usageError is bad usage or bad configuration found by the command layer: a flag, an
// environment variable or a settings file the user must fix. It maps to exit code 2.
type usageError struct {
	msg string
}

func (e *usageError) Error() string { return e.msg }

// usageErrorf returns a *usageError. The message says what to fix, on one line.
func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}
