package agents

import "errors"

var (
	// ErrBusy: Execute was called while a turn of the same runtime is running.
	ErrBusy = errors.New("agent is busy with another turn")
	// ErrDisposed: the runtime or controller was disposed.
	ErrDisposed = errors.New("agent runtime disposed")
	// ErrMaxSteps: the turn reached its cap on model calls.
	ErrMaxSteps = errors.New("reached maximum number of turns")
	// ErrStopLoop: a Stop or SubagentStop hook blocked one turn from ending more times than
	// allowed (RuntimeConfig.MaxStopBlocks). The turn ends with ReasonMaxTurns.
	ErrStopLoop = errors.New("a stop hook kept blocking the agent from stopping")
	// ErrStopped is the cancel cause of a turn stopped by task_stop.
	ErrStopped = errors.New("stopped by task_stop")
	// ErrShutdown is the cancel cause of turns cancelled by registry shutdown or reset.
	ErrShutdown = errors.New("registry shut down")
	// ErrBadTaskID: a task id does not have the generated form.
	ErrBadTaskID = errors.New("malformed task id")
	// ErrUnknownTask: no task with that id in this session.
	ErrUnknownTask = errors.New("unknown task id")
	// ErrNoSlot: every background execution slot is taken.
	ErrNoSlot = errors.New("no free background slot")
	// ErrBackgroundOff: run_in_background was passed while background agents are turned off.
	ErrBackgroundOff = errors.New("background agents are turned off in this run: run_in_background is not available; launch the task in the foreground")
	// ErrNotContinuable: the task cannot take a new turn.
	ErrNotContinuable = errors.New("task cannot be continued")
)
