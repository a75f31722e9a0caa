package tools

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/stoke-cli/stoke/agents/sandbox"
)

// Terminal runs the shell tool's commands somewhere other than as stoke's own children:
// an editor's terminal (the ACP client's terminal/*), where the person sees them run.
type Terminal interface {
	// Run runs the command line req.Args in req.Dir and returns once it has exited, been
	// killed at req.Timeout, or ctx ended (then it is killed too). It is called from the
	// goroutine running the call, possibly for several calls at once.
	Run(ctx context.Context, req TerminalRequest) (TerminalResult, error)
}

// TerminalRequest is one shell command for a Terminal.
type TerminalRequest struct {
	// CallID is the tool call's id (an editor shows the terminal in that call).
	CallID string
	Dir    string
	// Args is the command line to execute, its program first. It is the command wrapped
	// as stoke would run it: `env -i` with the environment the secrets policy leaves
	// (the terminal's own environment is not the command's), then bash -c and the
	// command. Where the workspace confines its commands, the confinement's wrapper
	// comes first, so that it applies in the terminal too.
	Args    []string
	Timeout time.Duration
	// OutputLimit is the most output, in bytes, the tool keeps.
	OutputLimit int
}

// TerminalResult is how a command run in a Terminal ended.
type TerminalResult struct {
	Output    string
	Truncated bool // the terminal kept only the end of the output
	// ExitCode is the command's exit status; -1 when a signal ended it (Signal names it).
	ExitCode int
	Signal   string
	TimedOut bool // killed at the request's Timeout
}

// WithTerminal makes the shell tool run its commands in t.
func WithTerminal(t Terminal) Option { return func(w *Workspace) { w.terminal = t } }

// terminalArgs is the command line a Terminal runs for command: bash -c command, with the
// environment the secrets policy leaves and nothing else. Where the workspace's sandbox
// supervises commands, the environment is the sandbox's and the line is wrapped
// (sandbox.Sandbox.Wrap): the command is confined in the terminal as it would be as
// stoke's own child. The Wrapped (nil when there is none) is done once it has ended.
func (w *Workspace) terminalArgs(bash, command string) ([]string, *sandbox.Wrapped, error) {
	env := w.secrets.Environ(os.Environ())
	sb := w.sandbox
	confined := sb != nil && sb.Supervises()
	if confined {
		env = sb.Environ(env, w.root)
	}
	args := []string{"env", "-i"}
	for _, kv := range env {
		if !strings.HasPrefix(kv, "=") { // Windows' per-drive entries
			args = append(args, kv)
		}
	}
	args = append(args, bash, "-c", command)
	if !confined {
		return args, nil, nil
	}
	wrapped, err := sb.Wrap(w.root, args)
	if err != nil {
		return nil, nil, err
	}
	return wrapped.Args, wrapped, nil
}

// runInTerminal runs command in the workspace's Terminal and returns the shell tool's
// result: the output, what happened to the command, its exit status, and the sandbox's
// lines.
func (t shellTool) runInTerminal(ctx context.Context, callID, bash, command string, timeout time.Duration) Result {
	start := time.Now()
	args, wrapped, err := t.w.terminalArgs(bash, command)
	if err != nil {
		return Errorf("%s: %v", NameShell, err)
	}
	res, err := t.w.terminal.Run(ctx, TerminalRequest{CallID: callID, Dir: t.w.root, Args: args,
		Timeout: timeout, OutputLimit: t.w.limits.OutputChars})
	extra := wrapped.Done()
	if err != nil {
		if ctx.Err() != nil {
			return Errorf("%s: cancelled: %v", NameShell, context.Cause(ctx))
		}
		return Errorf("%s: the terminal: %v", NameShell, err)
	}
	out := &headTail{max: t.w.limits.OutputChars}
	_, _ = out.Write([]byte(res.Output))
	var b strings.Builder
	writeOutput(&b, out.String())
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(&b, "[cancelled after %s (%v); the command was killed]\n", time.Since(start).Round(time.Millisecond), context.Cause(ctx))
	case res.TimedOut:
		fmt.Fprintf(&b, "[timed out after %s; the command was killed]\n", timeout)
	case res.Truncated:
		b.WriteString("[the terminal kept only the end of the output]\n")
	}
	if res.ExitCode >= 0 {
		fmt.Fprintf(&b, "[exit code %d]", res.ExitCode)
	} else {
		fmt.Fprintf(&b, "[exit: signal %s]", res.Signal)
	}
	if wrapped != nil && res.ExitCode != 0 {
		if h := t.w.sandbox.Hint(res.Output, t.w.root); h != "" {
			extra = append(extra, h)
		}
	}
	for _, x := range extra {
		b.WriteString("\n" + x)
	}
	return Result{Content: b.String(), IsError: res.ExitCode != 0 || res.TimedOut}
}
