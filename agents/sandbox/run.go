package sandbox

import (
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"
)

// Request is one command for Run.
type Request struct {
	// Root is the workspace the command runs in: its working directory, writable in
	// workspace-write, and the one whose protected configuration the guard keeps.
	Root string
	// Args is the command; Args[0] is an absolute path.
	Args []string
	// Env is its environment; Run adds TMPDIR and the cache variables.
	Env []string
	// Output receives stdout and stderr, interleaved.
	Output io.Writer
	// Timeout ends the command (and everything it started) when it passes.
	Timeout time.Duration
	// WaitDelay is how long the command's background processes may hold the output
	// after it ended, and how long its helper may take to end it, before they are killed.
	WaitDelay time.Duration
}

// Outcome is how a command ended.
type Outcome struct {
	// ExitCode is the command's exit status; -1 when a signal ended it (Signal).
	ExitCode int
	Signal   string
	// TimedOut, Cancelled: Run ended the command (and its processes) for its timeout or
	// its context.
	TimedOut, Cancelled bool
	// BackgroundKilled: processes it left held the output past WaitDelay and were
	// killed.
	BackgroundKilled bool
	// Notes are lines for the tool result: what the guard put back.
	Notes []string
}

// supervisor is one running helper: it lives while the command's processes do.
type supervisor struct {
	cmd        *exec.Cmd
	ctl        io.Closer // closing it makes the helper kill the command's tree
	once       sync.Once
	ended      atomic.Bool // the command itself has ended (its processes may not have)
	background atomic.Bool // the command left processes running
}

// stop makes the helper kill what runs of its command, and exit.
func (h *supervisor) stop() { h.once.Do(func() { _ = h.ctl.Close() }) }
