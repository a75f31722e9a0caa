package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/sandbox"
)

// shellWaitDelay is how long a finished command's background processes may keep its output
// open before they are killed.
const shellWaitDelay = 2 * time.Second

//go:embed shell.md
var shellDescription string

type shellTool struct {
	w         *Workspace
	waitDelay time.Duration // shellWaitDelay when zero (tests shorten it)
}

// shellInput is shell's arguments.
type shellInput struct {
	Command   string `json:"command" jsonschema:"The bash command line to run."`
	TimeoutMs int64  `json:"timeout_ms,omitempty"`
}

func shellSchema() json.RawMessage {
	return InputSchema[shellInput](func(s *jsonschema.Schema) {
		minLength(s, "command", 1)
		bounds(s, "timeout_ms", 1, jsonschema.Ptr(float64(MaxShellTimeout.Milliseconds())))
		s.Properties["timeout_ms"].Description = fmt.Sprintf("Kill the command after this many milliseconds (default %d).", DefaultShellTimeout.Milliseconds())
	})
}

func (t shellTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name: NameShell,
		Description: Description(shellDescription, DefaultShellTimeout.Milliseconds(), DefaultShellTimeout,
			MaxShellTimeout.Milliseconds(), MaxShellTimeout, t.w.limits.OutputChars),
		Parameters: t.w.schemas.get(NameShell, shellSchema),
	}
}

func (t shellTool) Run(ctx context.Context, call Call) Result {
	var args shellInput
	if err := decodeArgs(call, &args); err != nil {
		return Errorf("%v", err)
	}
	if strings.TrimSpace(args.Command) == "" {
		return missing(NameShell, "command")
	}
	timeout := DefaultShellTimeout
	if args.TimeoutMs > 0 {
		timeout = min(time.Duration(args.TimeoutMs)*time.Millisecond, MaxShellTimeout)
	}
	if sb := t.w.sandbox; sb != nil {
		if err := sb.Check(); err != nil {
			return Errorf("%s: %v", NameShell, err)
		}
	}
	if t.w.terminal != nil {
		return t.runInTerminal(ctx, call.ID, "bash", args.Command, timeout)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return Errorf("%s: bash is not installed: %v", NameShell, err)
	}
	out := &headTail{max: t.w.limits.OutputChars}
	waitDelay := t.waitDelay
	if waitDelay == 0 {
		waitDelay = shellWaitDelay
	}
	var end shellEnd
	if sb := t.w.sandbox; sb != nil && sb.Supervises() {
		start := time.Now()
		o, err := sb.Run(ctx, sandbox.Request{Root: t.w.root, Args: []string{bash, "-c", args.Command},
			Env: t.w.secrets.Environ(os.Environ()), Output: out, Timeout: timeout, WaitDelay: waitDelay})
		if err != nil {
			if ctx.Err() != nil {
				return Errorf("%s: cancelled before it started: %v", NameShell, context.Cause(ctx))
			}
			return Errorf("%s: %v", NameShell, err)
		}
		end = sandboxEnd(ctx, o, timeout, time.Since(start))
		if end.code != 0 {
			if h := sb.Hint(out.String(), t.w.root); h != "" {
				end.extra = append(end.extra, h)
			}
		}
	} else {
		var started bool
		end, started, err = t.runPlain(ctx, bash, args.Command, timeout, waitDelay, out)
		if !started {
			if ctx.Err() != nil {
				return Errorf("%s: cancelled before it started: %v", NameShell, context.Cause(ctx))
			}
			return Errorf("%s: start bash: %v", NameShell, err)
		}
	}
	var b strings.Builder
	writeOutput(&b, out.String())
	if end.note != "" {
		b.WriteString(end.note)
		b.WriteByte('\n')
	}
	if end.code >= 0 {
		fmt.Fprintf(&b, "[exit code %d]", end.code)
	} else {
		fmt.Fprintf(&b, "[exit: %s]", end.status)
	}
	for _, x := range end.extra {
		b.WriteString("\n" + x)
	}
	return Result{Content: b.String(), IsError: end.code != 0 || end.timedOut}
}

// shellEnd is how a command ended, for its result.
type shellEnd struct {
	code     int    // exit status; -1 when a signal ended it
	status   string // the status when code is -1 ("signal: killed")
	note     string // what stoke did to it (timeout, cancel, background processes)
	timedOut bool
	extra    []string // lines after the exit status: the sandbox's
}

// runPlain runs the command as stoke's own child (no sandbox, --sandbox off): in a process
// group of its own, killed with it on timeout or cancel.
func (t shellTool) runPlain(ctx context.Context, bash, command string, timeout, waitDelay time.Duration, out io.Writer) (shellEnd, bool, error) {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(runCtx, bash, "-c", command)
	cmd.Dir = t.w.root
	cmd.Env = t.w.secrets.Environ(os.Environ())
	cmd.Stdout, cmd.Stderr = out, out // one pipe: the two stay interleaved
	cmd.WaitDelay = waitDelay
	ownProcessGroup(cmd) // and cmd.Cancel kills the group
	start := time.Now()
	err := cmd.Run()
	if cmd.Process == nil {
		return shellEnd{}, false, err
	}
	var end shellEnd
	switch {
	case ctx.Err() != nil:
		_ = killProcessGroup(cmd)
		end.note = fmt.Sprintf("[cancelled after %s (%v); the command and its processes were killed]", time.Since(start).Round(time.Millisecond), context.Cause(ctx))
	case runCtx.Err() != nil:
		_ = killProcessGroup(cmd)
		end.note = fmt.Sprintf("[timed out after %s; the command and its processes were killed]", timeout)
		end.timedOut = true
	case errors.Is(err, exec.ErrWaitDelay):
		_ = killProcessGroup(cmd)
		end.note = backgroundKilled
	}
	end.code = cmd.ProcessState.ExitCode()
	end.status = cmd.ProcessState.String()
	return end, true, nil
}

// writeOutput starts a shell result with the command's output, ended by a newline, or
// says there was none.
func writeOutput(b *strings.Builder, s string) {
	if s == "" {
		b.WriteString("(no output)\n")
		return
	}
	b.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}

// backgroundKilled is the note of a command whose background processes held its output.
const backgroundKilled = "[background processes still holding the output were killed]"

// sandboxEnd turns the sandbox's outcome into the result's lines.
func sandboxEnd(ctx context.Context, o sandbox.Outcome, timeout, took time.Duration) shellEnd {
	end := shellEnd{code: o.ExitCode, status: "signal: " + o.Signal, timedOut: o.TimedOut, extra: o.Notes}
	switch {
	case o.Cancelled:
		end.note = fmt.Sprintf("[cancelled after %s (%v); the command and its processes were killed]", took.Round(time.Millisecond), context.Cause(ctx))
	case o.TimedOut:
		end.note = fmt.Sprintf("[timed out after %s; the command and its processes were killed]", timeout)
	case o.BackgroundKilled:
		end.note = backgroundKilled
	}
	return end
}

// headTail keeps the first and the last max/2 bytes written to it.
type headTail struct {
	mu      sync.Mutex
	max     int
	head    []byte
	tail    []byte // the last bytes, in a buffer that is trimmed when it doubles
	dropped int64
}

func (h *headTail) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := len(p)
	if room := h.max/2 - len(h.head); room > 0 {
		k := min(room, len(p))
		h.head = append(h.head, p[:k]...)
		p = p[k:]
	}
	keep := h.max - h.max/2
	h.tail = append(h.tail, p...)
	if len(h.tail) > 2*keep {
		cut := len(h.tail) - keep
		h.dropped += int64(cut)
		h.tail = append(h.tail[:0], h.tail[cut:]...)
	}
	return n, nil
}

// String returns what was kept, with a note in the middle when bytes were dropped.
func (h *headTail) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	keep := h.max - h.max/2
	tail, dropped := h.tail, h.dropped
	if len(tail) > keep {
		dropped += int64(len(tail) - keep)
		tail = tail[len(tail)-keep:]
	}
	if dropped == 0 {
		return validText(string(h.head) + string(tail))
	}
	head := trimPartialRune(h.head)
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	return validText(string(head)) + fmt.Sprintf("\n[… about %d bytes of output cut …]\n", dropped) + validText(string(tail))
}
