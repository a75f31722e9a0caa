package headless

import (
	"errors"
	"fmt"
	"syscall"
)

// ErrMaxTurns: the parent hit --max-turns (exit 1).
var ErrMaxTurns = errors.New("maximum number of turns reached")

// ErrRunFailed: the run failed (model or provider error, timeout) after writing its result (exit 1).
var ErrRunFailed = errors.New("run failed")

// ErrUsage: bad input discovered while running, e.g. a malformed stream-json line (exit 2).
var ErrUsage = errors.New("bad usage")

// InterruptedError: the run was stopped by a signal (exit 130 for SIGINT, 143 for SIGTERM).
type InterruptedError struct {
	Signal syscall.Signal
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted by %v", e.Signal)
}

// ExitCode is 128 + the signal number.
func (e *InterruptedError) ExitCode() int { return 128 + int(e.Signal) }
