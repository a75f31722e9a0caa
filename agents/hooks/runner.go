package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents/secrets"
)

// Input is the JSON a hook reads on stdin. Every event carries hook_event_name,
// session_id, cwd, task_id, subagent_type, turn and continuation (task_id and
// subagent_type are "" and turn is the parent's for Stop). SubagentStop and Stop add
// last_message (the final text of the turn) and stop_hook_active (true when the turn is
// already going on because a stop hook blocked it; a hook should then let it stop, or it
// loops). Claude Code's names are added for scripts written for it: agent_id and
// agent_type (subagent events), last_assistant_message (stop events).
type Input struct {
	// Event is hook_event_name; Run fills it in when it is empty.
	Event        Event
	SessionID    string
	CWD          string
	TaskID       string
	SubagentType string
	// Turn counts the agent's instructions, as in task events (1 for the first).
	Turn int
	// Continuation is a streamjson.Continuation (fresh, resident or revived), as in task_started.
	Continuation string
	// TranscriptPath is the agent's transcript, when known.
	TranscriptPath string
	// LastMessage and StopHookActive are sent for SubagentStop and Stop only.
	LastMessage    string
	StopHookActive bool
}

// MarshalJSON writes the wire form described on Input.
func (in Input) MarshalJSON() ([]byte, error) {
	type wire struct {
		HookEventName        Event   `json:"hook_event_name"`
		SessionID            string  `json:"session_id"`
		CWD                  string  `json:"cwd"`
		TaskID               string  `json:"task_id"`
		SubagentType         string  `json:"subagent_type"`
		Turn                 int     `json:"turn"`
		Continuation         string  `json:"continuation"`
		TranscriptPath       string  `json:"transcript_path,omitempty"`
		AgentID              string  `json:"agent_id,omitempty"`
		AgentType            string  `json:"agent_type,omitempty"`
		LastMessage          *string `json:"last_message,omitempty"`
		LastAssistantMessage *string `json:"last_assistant_message,omitempty"`
		StopHookActive       *bool   `json:"stop_hook_active,omitempty"`
	}
	w := wire{
		HookEventName:  in.Event,
		SessionID:      in.SessionID,
		CWD:            in.CWD,
		TaskID:         in.TaskID,
		SubagentType:   in.SubagentType,
		Turn:           in.Turn,
		Continuation:   in.Continuation,
		TranscriptPath: in.TranscriptPath,
	}
	if in.Event == SubagentStart || in.Event == SubagentStop {
		w.AgentID, w.AgentType = in.TaskID, in.SubagentType
	}
	if in.Event.stops() {
		w.LastMessage, w.LastAssistantMessage = &in.LastMessage, &in.LastMessage
		w.StopHookActive = &in.StopHookActive
	}
	return json.Marshal(w)
}

// Outcome is what the hooks of one event decided.
type Outcome struct {
	// Block: at least one hook blocked the event (exit code 2, or
	// {"decision":"block"} on stdout). For Stop and SubagentStop it means "do not stop":
	// go on, with Reason as the next instruction.
	Block bool
	// Reason joins the reasons of the blocking hooks, one per line, in hook order.
	Reason string
	// AdditionalContext joins hookSpecificOutput.additionalContext from the hooks' JSON
	// output (Claude Code's way for a SubagentStart hook to give the subagent context).
	AdditionalContext string
	// Failures describes each hook that could not start, exited with a code other than
	// 0 or 2, or timed out. Failures are not fatal; they are also logged.
	Failures []string
}

// outputCap bounds what is kept of a hook's stdout and of its stderr.
const outputCap = 64 << 10

// waitDelay bounds how long Run waits for a hook's output pipes after the hook has
// exited or been killed (a grandchild that left the process group may hold them).
const waitDelay = 2 * time.Second

// Runner runs command hooks. The zero value runs them with bash in the current
// directory and the process environment less the provider keys. A Runner is safe for
// concurrent use.
type Runner struct {
	// Shell runs each command as `Shell -c COMMAND`; "" means bash (found on PATH).
	Shell string
	// Dir is the hooks' working directory (the project); "" is the current directory.
	// It is also exported to hooks as STOKE_PROJECT_DIR and CLAUDE_PROJECT_DIR.
	Dir string
	// Env is the hooks' environment before Secrets filters it; nil means the process
	// environment.
	Env []string
	// Secrets keeps credentials out of the hooks' environment and redacts them from
	// what hooks hand back (reasons, context, failures). A nil policy still keeps the
	// provider keys out.
	Secrets *secrets.Policy
	// Logger receives failures and blocks; nil discards them.
	Logger *slog.Logger
}

// Run runs hooks for ev concurrently, each with the JSON of input on stdin (an Input, or
// any value that marshals to the documented keys; an Input with no Event gets ev), and
// waits for all of them. Each hook is bounded by its Timeout (DefaultTimeout when not
// positive); on timeout its whole process group is killed. A hook's failure is reported
// in Outcome.Failures, never as an error. The error is non-nil only when input cannot be
// encoded or ctx ends, in which case every hook still running is killed first and the
// error wraps the cause of ctx.
func (r *Runner) Run(ctx context.Context, ev Event, hooks []Hook, input any) (Outcome, error) {
	if len(hooks) == 0 {
		return Outcome{}, nil
	}
	if in, ok := input.(Input); ok && in.Event == "" {
		in.Event = ev
		input = in
	}
	stdin, err := json.Marshal(input)
	if err != nil {
		return Outcome{}, fmt.Errorf("encode %s hook input: %w", ev, err)
	}
	stdin = append(stdin, '\n')
	env, err := r.environ()
	if err != nil {
		return Outcome{}, err
	}

	results := make([]result, len(hooks))
	var wg sync.WaitGroup
	for i, h := range hooks {
		wg.Go(func() { results[i] = r.runOne(ctx, h, stdin, env) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Outcome{}, fmt.Errorf("run %s hooks: %w", ev, context.Cause(ctx))
	}

	var out Outcome
	var reasons, contexts []string
	log := r.logger()
	for i, res := range results {
		res.reason, res.context, res.failure = r.Secrets.Redact(res.reason), r.Secrets.Redact(res.context), r.Secrets.Redact(res.failure)
		attrs := []any{slog.String("event", string(ev)), slog.String("command", hooks[i].Command)}
		switch {
		case res.failure != "":
			msg := fmt.Sprintf("%s hook %q: %s", ev, hooks[i].Command, res.failure)
			out.Failures = append(out.Failures, msg)
			log.Warn("hook failed", append(attrs, slog.String("error", res.failure))...)
		case res.block:
			out.Block = true
			reasons = append(reasons, res.reason)
			log.Info("hook blocked", append(attrs, slog.String("reason", res.reason))...)
		}
		if res.context != "" {
			contexts = append(contexts, res.context)
		}
	}
	out.Reason = strings.Join(reasons, "\n")
	out.AdditionalContext = strings.Join(contexts, "\n")
	return out, nil
}

// result is what one hook did.
type result struct {
	block   bool
	reason  string
	context string
	failure string // non-empty: the hook failed
}

func (r *Runner) runOne(ctx context.Context, h Hook, stdin []byte, env []string) result {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	hctx, cancel := context.WithTimeoutCause(ctx, timeout, errTimeout)
	defer cancel()

	shell := r.Shell
	if shell == "" {
		shell = "bash"
	}
	var stdout, stderr cappedBuffer
	cmd := exec.CommandContext(hctx, shell, "-c", h.Command)
	cmd.Dir = r.Dir
	cmd.Env = env
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	cmd.WaitDelay = waitDelay
	ownProcessGroup(cmd)

	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return result{failure: "cancelled"} // Run reports ctx instead
	case errors.Is(context.Cause(hctx), errTimeout):
		return result{failure: fmt.Sprintf("timed out after %s and was killed", timeout)}
	case cmd.ProcessState == nil:
		return result{failure: fmt.Sprintf("start: %v", err)}
	}
	switch code := cmd.ProcessState.ExitCode(); code {
	case 0:
		return fromJSON(stdout.String())
	case 2:
		reason := strings.TrimSpace(stderr.String())
		if reason == "" {
			reason = fmt.Sprintf("blocked by hook %q (exit code 2, no reason on stderr)", h.Command)
		}
		return result{block: true, reason: reason}
	default:
		msg := err.Error()
		if s := strings.TrimSpace(stderr.String()); s != "" {
			msg += ": " + firstLine(s, 300)
		}
		return result{failure: msg}
	}
}

// hookOutput is the JSON a hook may print on stdout (Claude Code's fields; others ignored).
type hookOutput struct {
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput struct {
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// fromJSON reads the stdout of a hook that exited 0. Output that is not a JSON object is
// plain output and decides nothing.
func fromJSON(stdout string) result {
	s := strings.TrimSpace(stdout)
	if !strings.HasPrefix(s, "{") {
		return result{}
	}
	var o hookOutput
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return result{}
	}
	res := result{context: strings.TrimSpace(o.HookSpecificOutput.AdditionalContext)}
	if o.Decision == "block" {
		res.block = true
		res.reason = strings.TrimSpace(o.Reason)
		if res.reason == "" {
			res.reason = `blocked by a hook ("decision":"block" with no reason)`
		}
	}
	return res
}

func (r *Runner) environ() ([]string, error) {
	env := r.Env
	if env == nil {
		env = os.Environ()
	}
	env = r.Secrets.Environ(env)
	if r.Dir != "" {
		dir, err := filepath.Abs(r.Dir)
		if err != nil {
			return nil, fmt.Errorf("resolve hook directory: %w", err)
		}
		env = append(env, "STOKE_PROJECT_DIR="+dir, "CLAUDE_PROJECT_DIR="+dir)
	}
	return env, nil
}

func (r *Runner) logger() *slog.Logger {
	if r.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Logger
}

// cappedBuffer keeps the first outputCap bytes written to it and drops the rest, while
// reporting every write as complete so that the hook never sees a broken pipe.
type cappedBuffer struct {
	buf       bytes.Buffer
	truncated bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if room := outputCap - b.buf.Len(); room < len(p) {
		b.truncated = true
		b.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) String() string {
	if b.truncated {
		return b.buf.String() + "\n[output truncated]"
	}
	return b.buf.String()
}

// firstLine returns the first line of s, at most n bytes of it.
func firstLine(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
