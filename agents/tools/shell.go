package tools

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stoke-cli/stoke/agents/llm"
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
	if t.w.terminal != nil {
		return t.runInTerminal(ctx, call.ID, "bash", args.Command, timeout)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return Errorf("%s: bash is not installed: %v", NameShell, err)
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := &headTail{max: t.w.limits.OutputChars}
	cmd := exec.CommandContext(runCtx, bash, "-c", args.Command)
	cmd.Dir = t.w.root
	cmd.Env = t.w.secrets.Environ(os.Environ())
	cmd.Stdout, cmd.Stderr = out, out // one pipe: the two stay interleaved
	cmd.WaitDelay = t.waitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = shellWaitDelay
	}
	ownProcessGroup(cmd) // and cmd.Cancel kills the group
	start := time.Now()
	err = cmd.Run()
	if cmd.Process == nil {
		if ctx.Err() != nil {
			return Errorf("%s: cancelled before it started: %v", NameShell, context.Cause(ctx))
		}
		return Errorf("%s: start bash: %v", NameShell, err)
	}
	var note string
	switch {
	case ctx.Err() != nil:
		_ = killProcessGroup(cmd)
		note = fmt.Sprintf("[cancelled after %s (%v); the command and its processes were killed]", time.Since(start).Round(time.Millisecond), context.Cause(ctx))
	case runCtx.Err() != nil:
		_ = killProcessGroup(cmd)
		note = fmt.Sprintf("[timed out after %s; the command and its processes were killed]", timeout)
	case errors.Is(err, exec.ErrWaitDelay):
		_ = killProcessGroup(cmd)
		note = "[background processes still holding the output were killed]"
	}
	var b strings.Builder
	if s := out.String(); s != "" {
		b.WriteString(s)
		if !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
	} else {
		b.WriteString("(no output)\n")
	}
	if note != "" {
		b.WriteString(note)
		b.WriteByte('\n')
	}
	code := cmd.ProcessState.ExitCode()
	if code >= 0 {
		fmt.Fprintf(&b, "[exit code %d]", code)
	} else {
		fmt.Fprintf(&b, "[exit: %s]", cmd.ProcessState)
	}
	return Result{Content: b.String(), IsError: code != 0 || runCtx.Err() != nil}
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
