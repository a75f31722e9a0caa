package sdkhost

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
)

// The hook events whose SDK callbacks stoke invokes (hook_callback control requests).
const (
	hookUserPromptSubmit = "UserPromptSubmit" // before a user turn: block it, or add context
	hookPreToolUse       = "PreToolUse"       // before a parent tool call: deny it, or change its input
	hookPostToolUse      = "PostToolUse"      // after a parent tool call: add context to its result
	hookStop             = "Stop"             // when the parent's turn would end: block to go on
	hookSubagentStart    = "SubagentStart"    // a subagent turn started (notification only)
	hookSubagentStop     = "SubagentStop"     // a background subagent turn ended (notification only)
)

func hookEventSupported(name string) bool {
	switch name {
	case hookUserPromptSubmit, hookPreToolUse, hookPostToolUse, hookStop, hookSubagentStart, hookSubagentStop:
		return true
	}
	return false
}

// hookMatcher is one matcher of initialize's hooks: the callbacks to invoke for the targets
// (tool names, agent types) that Matcher selects.
type hookMatcher struct {
	Matcher     string   `json:"matcher"`
	CallbackIDs []string `json:"hookCallbackIds"`
	// Timeout in seconds; 0 is hookTimeout.
	Timeout float64 `json:"timeout"`
}

// valid reports whether the matcher compiles.
func (m hookMatcher) valid() error {
	if m.Matcher == "" || m.Matcher == "*" {
		return nil
	}
	_, err := regexp.Compile("^(?:" + m.Matcher + ")$")
	return err
}

// matches reports whether m applies to any of names. Empty and "*" match everything;
// anything else is a regular expression, matched whole ("Write|Edit", "Bash"), as the
// command hooks' tool matchers are.
func (m hookMatcher) matches(names ...string) bool {
	return hooks.Hook{Matcher: m.Matcher}.MatchesTool(names...)
}

// hookOutput is what a hook callback answers (the SDK's SyncHookJSONOutput), as far as
// stoke reads it.
type hookOutput struct {
	Continue      *bool  `json:"continue"`
	StopReason    string `json:"stopReason"`
	Decision      string `json:"decision"`
	Reason        string `json:"reason"`
	SystemMessage string `json:"systemMessage"`
	HookSpecific  struct {
		PermissionDecision       string          `json:"permissionDecision"`
		PermissionDecisionReason string          `json:"permissionDecisionReason"`
		UpdatedInput             json.RawMessage `json:"updatedInput"`
		AdditionalContext        string          `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// blocked reports whether the output blocks the event, and why.
func (o hookOutput) blocked() (string, bool) {
	switch {
	case o.Decision == "block":
		return firstNonEmpty(o.Reason, o.StopReason, "blocked by a hook"), true
	case o.Continue != nil && !*o.Continue:
		return firstNonEmpty(o.StopReason, o.Reason, "stopped by a hook"), true
	case o.HookSpecific.PermissionDecision == "deny":
		return firstNonEmpty(o.HookSpecific.PermissionDecisionReason, o.Reason, "denied by a hook"), true
	}
	return "", false
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// hasHooks reports whether the host registered callbacks for event.
func (h *Host) hasHooks(event string) bool {
	return h != nil && h.cfg.Control != nil && len(h.hooks[event]) > 0
}

// runHooks invokes, one after the other, the callbacks registered for event whose matcher
// selects one of targets, and returns their outputs. A callback that fails (an error reply,
// a timeout, stdin closed) is logged and skipped: a hook that cannot be reached does not
// block.
func (h *Host) runHooks(ctx context.Context, event string, targets []string, toolUseID string, input map[string]any) []hookOutput {
	if !h.hasHooks(event) {
		return nil
	}
	in := map[string]any{
		"hook_event_name": event,
		"session_id":      h.cfg.SessionID,
		"transcript_path": h.cfg.TranscriptPath,
		"cwd":             h.cfg.CWD,
		"permission_mode": h.liveMode().PermissionMode(),
	}
	for k, v := range input {
		in[k] = v
	}
	var outs []hookOutput
	for _, m := range h.hooks[event] {
		if !m.matches(targets...) {
			continue
		}
		timeout := hookTimeout
		if m.Timeout > 0 {
			timeout = time.Duration(m.Timeout * float64(time.Second))
		}
		for _, id := range m.CallbackIDs {
			hctx, cancel := context.WithTimeout(ctx, timeout)
			fields := map[string]any{"callback_id": id, "input": in}
			if toolUseID != "" {
				fields["tool_use_id"] = toolUseID
			}
			raw, err := h.cfg.Control.request(hctx, "hook_callback", fields)
			cancel()
			if err != nil {
				h.cfg.Logger.Warn("hook callback failed", "event", event, "callback_id", id, "err", err)
				continue
			}
			var out hookOutput
			if err := json.Unmarshal(raw, &out); err != nil {
				h.cfg.Logger.Warn("hook callback answer not understood", "event", event, "callback_id", id, "err", err)
				continue
			}
			outs = append(outs, out)
		}
	}
	return outs
}

// fireHook invokes the callbacks of a notification-only event without waiting for them
// (Close waits for them); after Close has begun it fires nothing.
func (h *Host) fireHook(event, target string, input map[string]any) {
	if !h.hasHooks(event) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.hookWG.Go(func() {
		h.runHooks(h.hookCtx, event, []string{target}, "", input)
	})
}

// TurnStarted implements agents.Lifecycle: the SubagentStart callbacks, not waited for
// (so they give the agent no context).
func (h *Host) TurnStarted(_ context.Context, t agents.TurnInfo) string {
	h.fireHook(hookSubagentStart, t.Definition.Name, map[string]any{
		"agent_id": string(t.TaskID), "agent_type": t.Definition.Name,
	})
	return ""
}

// TurnStopping implements agents.Lifecycle: the host's SubagentStop callbacks are
// notifications, invoked once the turn has settled.
func (h *Host) TurnStopping(context.Context, agents.TurnInfo, string, bool) string { return "" }

// TurnSettled implements agents.Lifecycle: the SubagentStop callbacks, not waited for.
func (h *Host) TurnSettled(t agents.TurnInfo, row agents.Row) {
	h.fireHook(hookSubagentStop, t.Definition.Name, map[string]any{
		"agent_id": string(t.TaskID), "agent_type": t.Definition.Name, "agent_transcript_path": row.Transcript,
		"stop_hook_active": false, "last_assistant_message": row.LastOutcome.Text,
	})
}

// SubmitPrompt starts a user turn: it writes the running state and runs the
// UserPromptSubmit callbacks. It returns the message to run (with any additionalContext
// added), or an error wrapping ErrPromptBlocked that says why a callback blocked it (the
// run loop then writes an error result and goes on). Called from the run loop.
func (h *Host) SubmitPrompt(ctx context.Context, msg llm.Message) (llm.Message, error) {
	if !h.hasHooks(hookUserPromptSubmit) {
		return msg, nil
	}
	outs := h.runHooks(ctx, hookUserPromptSubmit, nil, "", map[string]any{"prompt": msg.Text()})
	for _, o := range outs {
		if reason, ok := o.blocked(); ok {
			h.writeState("running")
			return msg, fmt.Errorf("%w: %s", ErrPromptBlocked, reason)
		}
		if c := strings.TrimSpace(o.HookSpecific.AdditionalContext); c != "" {
			msg.Content = append(msg.Content, llm.TextBlock(c))
		}
	}
	return msg, nil
}

// withStopCallbacks adds the host's Stop callbacks to a parent's stop hook (the settings'
// command hooks, asked first): when the parent would end its turn, a callback that blocks
// makes it go on with the reason as its next instruction.
func (h *Host) withStopCallbacks(inner func(context.Context, string, bool) string) func(context.Context, string, bool) string {
	return func(ctx context.Context, final string, active bool) string {
		if inner != nil {
			if goOn := inner(ctx, final, active); goOn != "" {
				return goOn
			}
		}
		outs := h.runHooks(ctx, hookStop, nil, "", map[string]any{
			"stop_hook_active": active, "last_assistant_message": final,
		})
		for _, o := range outs {
			if reason, ok := o.blocked(); ok {
				return reason
			}
		}
		return ""
	}
}

// hookedTools wraps a tool set so that the PreToolUse and PostToolUse callbacks run
// around each call. It returns set itself when no such callback is registered.
func (h *Host) hookedTools(set *tools.Set) *tools.Set {
	if !h.hasHooks(hookPreToolUse) && !h.hasHooks(hookPostToolUse) {
		return set
	}
	return set.Around(h.aroundTool)
}

// aroundTool runs one tool call between the PreToolUse and PostToolUse callbacks.
func (h *Host) aroundTool(ctx context.Context, call tools.Call, run func(context.Context, tools.Call) tools.Result) tools.Result {
	names := []string{h.ToolName(call.Name), call.Name}
	outs := h.runHooks(ctx, hookPreToolUse, names, call.ID, map[string]any{
		"tool_name": names[0], "tool_input": json.RawMessage(call.Input), "tool_use_id": call.ID,
	})
	for _, o := range outs {
		if reason, ok := o.blocked(); ok {
			return tools.Errorf("%s was blocked by a PreToolUse hook: %s", call.Name, reason)
		}
		if u := o.HookSpecific.UpdatedInput; len(u) > 0 && gjson.ValidBytes(u) && string(u) != "null" {
			call.Input = u
		}
	}
	res := run(ctx, call)
	outs = h.runHooks(ctx, hookPostToolUse, names, call.ID, map[string]any{
		"tool_name": names[0], "tool_input": json.RawMessage(call.Input), "tool_use_id": call.ID,
		"tool_response": res.Content,
	})
	for _, o := range outs {
		if c := strings.TrimSpace(o.HookSpecific.AdditionalContext); c != "" {
			res.Content += fmt.Sprintf("\n\n<hook-context>%s</hook-context>", c)
		}
	}
	return res
}

// claudeToolName is the name Claude Code gives a stoke tool, for permission asks and hook
// matchers written for Claude Code ("Write", "Bash"); other names are kept.
func claudeToolName(name string) string {
	if c, ok := tools.ClaudeName(name); ok {
		return c
	}
	if name == "task" {
		return "Task"
	}
	return name
}
