package agents

import "errors"

var (
	// ErrMaxTime: a turn of a subagent ran for its definition's MaxTime.
	ErrMaxTime = errors.New("reached the agent's time limit (runConfig.max_time_minutes)")
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
