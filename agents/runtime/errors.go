package runtime

import "errors"

var (
	// ErrBusy: Execute was called while a turn of the same runtime is running.
	ErrBusy = errors.New("agent is busy with another turn")
	// ErrDisposed: the runtime was disposed (Close).
	ErrDisposed = errors.New("agent runtime disposed")
	// ErrMaxSteps: the turn reached its cap on model calls.
	ErrMaxSteps = errors.New("reached maximum number of turns")
	// ErrStopLoop: a stop hook blocked one turn from ending more times than allowed
	// (Config.MaxStopBlocks). The turn ends with ReasonMaxTurns.
	ErrStopLoop = errors.New("a stop hook kept blocking the agent from stopping")
)
