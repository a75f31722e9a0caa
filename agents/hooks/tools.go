package hooks

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
)

// ToolHooks runs the PreToolUse and PostToolUse command hooks around the calls of an
// agent's tools (Wrap), as Claude Code runs them:
//
//   - PreToolUse, before the call: a hook that blocks (exit 2, its stderr the reason;
//     "decision":"block"; permissionDecision deny) refuses the call, and the model reads
//     the reason as its result; permissionDecision allow runs it without asking the
//     approval mode (tools.Preapproved: deny rules, protected paths and plan mode still
//     hold); ask leaves it to the approval mode, and to the run's Approver (an SDK host's
//     canUseTool, a person) where the mode does not allow it; updatedInput replaces the
//     call's arguments, which are checked against the tool's schema again.
//   - PostToolUse, after it: a block gives the model the reason with the result;
//     additionalContext is added to the result.
type ToolHooks struct {
	// Config holds the hooks; its PreToolUse and PostToolUse ones count.
	Config Config
	// Runner runs them; nil runs none.
	Runner *Runner
	// Input is what each call's hook input starts from: the session, the working
	// directory, the agent (SubagentType; TaskID, or the task id the call's context
	// carries, llm.TaskIDFrom), the permission mode, the transcript.
	Input  Input
	Logger *slog.Logger
}

// Wrap returns set with every call run between its hooks; set itself when no PreToolUse
// or PostToolUse hook is configured (or there is no Runner).
func (h ToolHooks) Wrap(set *tools.Set) *tools.Set {
	if h.Runner == nil || len(h.Config[PreToolUse])+len(h.Config[PostToolUse]) == 0 {
		return set
	}
	return set.Around(h.around)
}

// ToolNames are the names a hook matcher may know a tool by: Claude Code's for a
// workspace tool (Bash, Read, ...), and stoke's.
func ToolNames(name string) []string {
	if c, ok := tools.ClaudeName(name); ok {
		return []string{c, name}
	}
	return []string{name}
}

// around runs one call between its hooks (Wrap).
func (h ToolHooks) around(ctx context.Context, call tools.Call, run func(context.Context, tools.Call) tools.Result) tools.Result {
	names := ToolNames(call.Name)
	in := h.Input
	in.ToolName, in.StokeToolName, in.ToolUseID = names[0], call.Name, call.ID
	if in.TaskID == "" {
		in.TaskID = llm.TaskIDFrom(ctx)
	}
	var notes []string
	if pre := h.Config.ForTool(PreToolUse, names...); len(pre) > 0 {
		in.Event, in.ToolInput = PreToolUse, call.Input
		out, ok := h.run(ctx, pre, in)
		if !ok {
			return tools.Errorf("%s: cancelled before it ran: %v", call.Name, context.Cause(ctx))
		}
		if out.Block {
			return tools.Errorf("%s was blocked by a PreToolUse hook: %s", call.Name, out.Reason)
		}
		if out.UpdatedInput != nil {
			call.Input = out.UpdatedInput
		}
		if out.Decision == DecisionAllow {
			ctx = tools.Preapproved(ctx)
		}
		if out.AdditionalContext != "" {
			notes = append(notes, fmt.Sprintf("<hook-context>%s</hook-context>", out.AdditionalContext))
		}
	}
	res := run(ctx, call)
	if post := h.Config.ForTool(PostToolUse, names...); len(post) > 0 {
		in.Event, in.ToolInput, in.ToolResponse, in.ToolError = PostToolUse, call.Input, res.Content, res.IsError
		if out, ok := h.run(ctx, post, in); ok {
			if out.Block {
				notes = append(notes, fmt.Sprintf("<hook-feedback>A PostToolUse hook says: %s</hook-feedback>", out.Reason))
			}
			if out.AdditionalContext != "" {
				notes = append(notes, fmt.Sprintf("<hook-context>%s</hook-context>", out.AdditionalContext))
			}
		}
	}
	if len(notes) > 0 {
		res.Content = strings.TrimSpace(res.Content + "\n\n" + strings.Join(notes, "\n"))
	}
	return res
}

// run runs hooks for one call, logging their failures; false when the call's context
// ended first.
func (h ToolHooks) run(ctx context.Context, hs []Hook, in Input) (Outcome, bool) {
	out, err := h.Runner.Run(ctx, in.Event, hs, in)
	log := h.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for _, f := range out.Failures {
		log.Warn("hook failed", "event", in.Event, "tool", in.StokeToolName, "failure", f)
	}
	if err != nil {
		log.Warn("hooks", "event", in.Event, "tool", in.StokeToolName, "err", err)
		return Outcome{}, false
	}
	return out, true
}
