package tools

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
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
// environment the secrets policy leaves and nothing else.
func (w *Workspace) terminalArgs(bash, command string) []string {
	args := []string{"env", "-i"}
	for _, kv := range w.secrets.Environ(os.Environ()) {
		if !strings.HasPrefix(kv, "=") { // Windows' per-drive entries
			args = append(args, kv)
		}
	}
	return append(args, bash, "-c", command)
}

// runInTerminal runs command in the workspace's Terminal and returns the shell tool's
// result: the output, what happened to the command, its exit status.
func (t shellTool) runInTerminal(ctx context.Context, callID, bash, command string, timeout time.Duration) Result {
	start := time.Now()
	res, err := t.w.terminal.Run(ctx, TerminalRequest{CallID: callID, Dir: t.w.root, Args: t.w.terminalArgs(bash, command),
		Timeout: timeout, OutputLimit: t.w.limits.OutputChars})
	if err != nil {
		if ctx.Err() != nil {
			return Errorf("%s: cancelled: %v", NameShell, context.Cause(ctx))
		}
		return Errorf("%s: the terminal: %v", NameShell, err)
	}
	out := &headTail{max: t.w.limits.OutputChars}
	_, _ = out.Write([]byte(res.Output))
	var b strings.Builder
	if s := out.String(); s != "" {
		b.WriteString(s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	} else {
		b.WriteString("(no output)\n")
	}
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
	return Result{Content: b.String(), IsError: res.ExitCode != 0 || res.TimedOut}
}
