package sandbox

import "errors"

// Errors of the sandbox. The shell tool turns them into tool errors the model sees.
var (
	// ErrUnknownMode: ParseMode was given a value that is not a mode.
	ErrUnknownMode = errors.New("unknown sandbox mode")
	// ErrNotEnforced: --sandbox-required, and the kernel cannot confine commands.
	ErrNotEnforced = errors.New("the sandbox is required but this kernel cannot enforce it")
	// ErrClosed: the run's sandbox is closed; no command starts any more.
	ErrClosed = errors.New("the sandbox is closed")
	// ErrHelper: the supervisor of a command failed (it could not confine or start it).
	ErrHelper = errors.New("sandbox helper")
)
