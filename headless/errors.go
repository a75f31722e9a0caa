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

// ErrSessionBusy: another run holds the session's lock (exit 2); the message names the
// session and the holder's pid.
var ErrSessionBusy = errors.New("session busy")

// ErrTurnCancelled: an interactive session's client cancelled the running turn (its
// Input's Cancel); the turn ends with its partial findings and the session goes on.
var ErrTurnCancelled = errors.New("cancelled: the client cancelled the turn")

// ErrMaxBudget: the run's cost went over --max-budget-usd (exit 1).
var ErrMaxBudget = errors.New("maximum budget reached")

// resultErrorMaxBudget is the result subtype of a run that went over --max-budget-usd.
const resultErrorMaxBudget = "error_max_budget_usd"

// InterruptedError: the run was stopped by a signal (exit 130 for SIGINT, 143 for SIGTERM).
type InterruptedError struct {
	Signal syscall.Signal
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted by %v", e.Signal)
}

// ExitCode is 128 + the signal number.
func (e *InterruptedError) ExitCode() int { return 128 + int(e.Signal) }
