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

// The permission decisions of PreToolUse hooks (hookSpecificOutput.permissionDecision).
const (
	DecisionAllow = "allow" // run the call without asking the approval mode
	DecisionDeny  = "deny"  // refuse it
	DecisionAsk   = "ask"   // leave it to the approval mode
)

// Outcome is what the hooks of one event decided.
type Outcome struct {
	// Block: at least one hook blocked the event (exit code 2, {"decision":"block"} on
	// stdout, {"continue":false}, or for PreToolUse permissionDecision deny). For Stop
	// and SubagentStop it means "do not stop": go on, with Reason as the next
	// instruction; for PreToolUse, refuse the call.
	Block bool
	// Reason joins the reasons of the blocking hooks, one per line, in hook order.
	Reason string
	// AdditionalContext joins hookSpecificOutput.additionalContext from the hooks' JSON
	// output (Claude Code's way for a SubagentStart hook to give the subagent context),
	// and for UserPromptSubmit and SessionStart the plain stdout of hooks that exit 0.
	AdditionalContext string
	// Decision is the PreToolUse permission decision of the hooks, the strongest of
	// theirs (deny, then ask, then allow; "" when none gave one): DecisionAllow,
	// DecisionDeny or DecisionAsk. A deny is also a Block.
	Decision string
	// UpdatedInput is the PreToolUse hookSpecificOutput.updatedInput of the last hook
	// (in hook order) that gave one: the call's new arguments.
	UpdatedInput json.RawMessage
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
		wg.Go(func() { results[i] = r.runOne(ctx, ev, h, stdin, env) })
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
		if rank(res.decision) > rank(out.Decision) {
			out.Decision = res.decision
		}
		if len(res.updated) > 0 {
			out.UpdatedInput = res.updated
		}
	}
	if out.Block && ev == PreToolUse {
		out.Decision = DecisionDeny
	}
	out.Reason = strings.Join(reasons, "\n")
	out.AdditionalContext = strings.Join(contexts, "\n")
	return out, nil
}

// rank orders permission decisions: deny wins over ask, ask over allow.
func rank(decision string) int {
	switch decision {
	case DecisionAllow:
		return 1
	case DecisionAsk:
		return 2
	case DecisionDeny:
		return 3
	}
	return 0
}

// result is what one hook did.
type result struct {
	block    bool
	reason   string
	context  string
	decision string          // PreToolUse's permissionDecision
	updated  json.RawMessage // PreToolUse's updatedInput
	failure  string          // non-empty: the hook failed
}

func (r *Runner) runOne(ctx context.Context, ev Event, h Hook, stdin []byte, env []string) result {
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
		return fromJSON(ev, stdout.String())
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
	Continue           *bool  `json:"continue"`
	StopReason         string `json:"stopReason"`
	Decision           string `json:"decision"`
	Reason             string `json:"reason"`
	HookSpecificOutput struct {
		AdditionalContext        string          `json:"additionalContext"`
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
	} `json:"hookSpecificOutput"`
}

// fromJSON reads the stdout of a hook of ev that exited 0. Output that is not a JSON
// object is plain output: context for UserPromptSubmit and SessionStart, as in Claude
// Code, and nothing for the other events.
func fromJSON(ev Event, stdout string) result {
	s := strings.TrimSpace(stdout)
	var o hookOutput
	if !strings.HasPrefix(s, "{") || json.Unmarshal([]byte(s), &o) != nil {
		if ev.context() {
			return result{context: s}
		}
		return result{}
	}
	hs := o.HookSpecificOutput
	res := result{context: strings.TrimSpace(hs.AdditionalContext)}
	switch {
	case o.Decision == "block":
		res.block, res.reason = true, strings.TrimSpace(o.Reason)
		if res.reason == "" {
			res.reason = `blocked by a hook ("decision":"block" with no reason)`
		}
	case o.Continue != nil && !*o.Continue:
		res.block, res.reason = true, strings.TrimSpace(o.StopReason)
		if res.reason == "" {
			res.reason = `stopped by a hook ("continue":false with no stopReason)`
		}
	}
	if ev != PreToolUse {
		return res
	}
	switch d := hs.PermissionDecision; {
	case d == DecisionAllow || d == DecisionAsk:
		res.decision = d
	case d == DecisionDeny && !res.block:
		res.block, res.reason = true, strings.TrimSpace(firstOf(hs.PermissionDecisionReason, o.Reason, "denied by a PreToolUse hook"))
	case d == "" && o.Decision == "approve": // Claude Code's older form
		res.decision = DecisionAllow
	}
	if u := bytes.TrimSpace(hs.UpdatedInput); len(u) > 0 && u[0] == '{' && json.Valid(u) {
		res.updated = json.RawMessage(u)
	}
	return res
}

// firstOf returns the first of ss that is not blank.
func firstOf(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
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
