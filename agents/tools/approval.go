package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Kind is what a tool call does, as far as approval is concerned.
type Kind int

// The kinds of tool call.
const (
	KindRead Kind = iota // reads the workspace: read_file, glob, grep
	KindEdit             // changes files: write_file, edit
	KindExec             // runs commands: shell
)

func (k Kind) String() string {
	switch k {
	case KindRead:
		return "read"
	case KindEdit:
		return "edit"
	case KindExec:
		return "exec"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Approver decides calls the approval mode does not allow by itself, in place of refusing
// them: a later --permission-prompt-tool puts them to a host. It is never asked in plan mode,
// which stays read-only.
type Approver interface {
	// Approve is called once per such call, from the goroutine running the call, possibly
	// for several calls at once; it must return when ctx is cancelled (then refusing).
	// allow runs the call; updatedInput, when not nil, replaces the call's arguments (the
	// tool checks them again); reason is shown to the model when the call is refused.
	Approve(ctx context.Context, call Call, kind Kind) (allow bool, updatedInput json.RawMessage, reason string)
}

// ApproverFunc adapts a function to an Approver.
type ApproverFunc func(ctx context.Context, call Call, kind Kind) (bool, json.RawMessage, string)

// Approve implements Approver.
func (f ApproverFunc) Approve(ctx context.Context, call Call, kind Kind) (bool, json.RawMessage, string) {
	return f(ctx, call, kind)
}

// Denial records one refused call, for the result line's permission_denials.
type Denial struct {
	Call   Call
	Kind   Kind
	Reason string
}

// Denier refuses calls by rule before the approval mode is asked (--disallowedTools, an
// agent's disallowedTools; package permission implements it).
type Denier interface {
	// Deny reports whether call is refused, and why (for the model). It is called from
	// the goroutine running the call, possibly for several calls at once.
	Deny(call Call) (reason string, denied bool)
}

// modeReporter is an Approver that applies an approval mode of its own (an SDK host's
// live permission mode), which then decides what is protected.
type modeReporter interface {
	Mode() Mode
}

// gate is the one place approval is decided: it wraps a tool of a known kind. In order:
// the deny rules; protected paths (Protected) for edits below yolo; the approval mode;
// the Approver. Whatever the tool returns has the run's secrets redacted.
type gate struct {
	tool Tool
	kind Kind
	w    *Workspace
}

func (g gate) Spec() llm.ToolSpec { return g.tool.Spec() }

// ReadOnly implements ReadOnly: a tool that reads the workspace (KindRead), or a gated
// tool that declares itself read-only (an MCP tool annotated readOnlyHint).
func (g gate) ReadOnly() bool { return g.kind == KindRead || IsReadOnly(g.tool) }

func (g gate) Run(ctx context.Context, call Call) Result {
	w := g.w
	if why, denied := g.deny(call); denied {
		return g.refuse(call, why)
	}
	if preapproved(ctx) && g.liveMode() != ModePlan {
		// A PreToolUse hook allowed the call: the mode and the Approver are not asked.
		if why := g.protected(call, g.liveMode()); why != "" {
			return g.refuse(call, why)
		}
		return g.run(ctx, call)
	}
	if w.mode.Allows(g.kind) {
		if why := g.protected(call, w.mode); why != "" {
			return g.refuse(call, why)
		}
		return g.run(ctx, call)
	}
	reason := refusal(w.mode, g.kind, call.Name)
	if w.approver != nil && w.mode != ModePlan {
		mode := w.mode
		if r, ok := w.approver.(modeReporter); ok {
			mode = r.Mode()
		}
		if why := g.protected(call, mode); why != "" {
			return g.refuse(call, why)
		}
		allow, updated, why := w.approver.Approve(ctx, call, g.kind)
		if allow && ctx.Err() == nil {
			if updated != nil {
				call.Input = updated
				if why, denied := g.deny(call); denied {
					return g.refuse(call, why)
				}
				if why := g.protected(call, mode); why != "" {
					return g.refuse(call, why)
				}
			}
			return g.run(ctx, call)
		}
		if why = strings.TrimSpace(why); why != "" {
			reason = fmt.Sprintf("%s was not approved: %s", call.Name, why)
		} else {
			reason = fmt.Sprintf("%s was not approved", call.Name)
		}
	}
	return g.refuse(call, reason)
}

// liveMode is the mode the gate applies: the Approver's own (an SDK host's live mode)
// when it has one, else the workspace's.
func (g gate) liveMode() Mode {
	if r, ok := g.w.approver.(modeReporter); ok {
		return r.Mode()
	}
	return g.w.mode
}

type preapprovedKey struct{}

// Preapproved returns ctx with the mark of a call that a PreToolUse hook allowed
// (permissionDecision allow): the approval gate runs it without asking the approval mode
// or the Approver. The deny rules and the protected paths still apply, and plan mode
// stays read-only. A hook that says ask leaves ctx unmarked: the approval mode decides,
// and the Approver (an SDK host, a person) when it does not allow the call.
func Preapproved(ctx context.Context) context.Context {
	return context.WithValue(ctx, preapprovedKey{}, true)
}

func preapproved(ctx context.Context) bool {
	v, _ := ctx.Value(preapprovedKey{}).(bool)
	return v
}

// run runs the call and redacts the result.
func (g gate) run(ctx context.Context, call Call) Result {
	res := g.tool.Run(ctx, call)
	res.Content = g.w.secrets.Redact(res.Content)
	return res
}

func (g gate) deny(call Call) (string, bool) {
	if g.w.deny == nil {
		return "", false
	}
	why, denied := g.w.deny.Deny(call)
	if !denied {
		return "", false
	}
	return fmt.Sprintf("%s is refused: %s", call.Name, why), true
}

// protected returns the refusal, under mode, of an edit of protected configuration or
// of a file tool's call on a file with more than one hard link (whose content another
// name shares: a link made to .git/config, or to a file outside the workspace), or "".
// Yolo refuses neither. A path that does not resolve is left to the tool, which reports
// it.
func (g gate) protected(call Call, mode Mode) string {
	if mode == ModeYolo {
		return ""
	}
	var args struct {
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(call.Input, &args) != nil || args.FilePath == "" {
		return ""
	}
	abs, err := g.w.Resolve(args.FilePath)
	if err != nil {
		return ""
	}
	shown := g.w.display(abs)
	if what, ok := Protected(shown); ok && g.kind == KindEdit {
		return fmt.Sprintf("%s: %s is %s; the workspace tools do not change it below --approval-mode yolo", call.Name, shown, what)
	}
	if n := hardLinks(abs); n > 1 {
		return fmt.Sprintf("%s: %s has %d hard links, so its content is also another file's (a link to .git/config, or to a file outside the workspace); the workspace tools do not open it below --approval-mode yolo", call.Name, shown, n)
	}
	return ""
}

// refuse records the denial and returns the refusal the model sees.
func (g gate) refuse(call Call, reason string) Result {
	if g.w.onDenial != nil {
		g.w.onDenial(Denial{Call: call, Kind: g.kind, Reason: reason})
	}
	return Result{Content: reason, IsError: true}
}

// Gate returns t under w's approval, as a tool of kind k: its calls run when the mode
// allows them, are put to the Approver otherwise, and are refused (and reported to the
// denial hook) when nobody approves them. It gates tools that come from elsewhere, such as
// an MCP server's, which run like commands (KindExec).
func (w *Workspace) Gate(t Tool, k Kind) Tool {
	return gate{tool: t, kind: k, w: w}
}

// refusal is the message the model sees when mode refuses a call of kind k.
func refusal(mode Mode, k Kind, name string) string {
	if mode == ModePlan {
		return fmt.Sprintf("%s is not allowed in plan mode, which is read-only: read and search the workspace, then present your plan instead of changing anything", name)
	}
	flag := "--approval-mode auto-edit (or yolo)"
	what := "file edits"
	if k == KindExec {
		flag, what = "--approval-mode yolo", "shell commands"
		if name != NameShell {
			what = "calls of " + name // an MCP tool (Workspace.Gate)
		}
	}
	return fmt.Sprintf("%s needs approval, and nobody can approve it in this headless run (approval mode %s); it is refused. Rerun with %s to allow %s, or continue without it", name, mode, flag, what)
}
