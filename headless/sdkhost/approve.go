package sdkhost

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/permission"
	"github.com/stoke-cli/stoke/agents/tools"
)

// liveMode is the permission mode now in force (set_permission_mode changes it).
func (h *Host) liveMode() tools.Mode {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mode
}

// Approval returns the approval mode the workspace tools are built with, and whether an
// approver (Approver) decides the calls that mode does not allow. In an SDK session, and
// whenever Claude Code's permission options are used, the tools are built in the default
// mode and the approver applies the live mode (which set_permission_mode changes), the
// --allowedTools/--disallowedTools rules and the host's can_use_tool verdicts. Otherwise
// the configured mode is used as it is. Call before the run starts.
func (h *Host) Approval() (tools.Mode, bool) {
	if !(h.cfg.Control != nil && h.cfg.SDKMode) && !h.opts.permissionOptions() {
		return h.liveMode(), false
	}
	return tools.ModeDefault, true
}

// Approver returns the approver of a tool set whose mode Approval said needs one: rules
// are the permission rules over that tool set's workspace (the run's, plus an agent's
// disallowedTools); ceiling, when set, caps the live mode (a subagent's own mode). Safe
// for concurrent use.
func (h *Host) Approver(rules *permission.Rules, ceiling tools.Mode) tools.Approver {
	return sdkApprover{h: h, rules: rules, ceiling: ceiling}
}

// Tools returns the parent's tool set: the caller-owned tools as they are, and of the
// workspace's tools those --tools names (Claude Code's names or stoke's; all without it),
// less the bare names of --disallowedTools; each call between the PreToolUse and
// PostToolUse callbacks. Call before the run starts.
func (h *Host) Tools(own []tools.Tool, ws *tools.Workspace) *tools.Set {
	var offered []tools.Tool
	if names := workspaceTools(h.opts, h.cfg.Logger); names == nil || len(names) > 0 {
		offered, _ = ws.Tools(names) // names nil: all; empty (--tools ""): none
	}
	return h.hookedTools(tools.NewSet(append(own, offered...)...))
}

// workspaceTools filters the names of the workspace tools by --tools and the bare names of
// --disallowedTools; nil means all of them, empty none.
func workspaceTools(o Options, log *slog.Logger) []string {
	if o.Tools == nil && len(o.DisallowedTools) == 0 {
		return nil
	}
	offered := tools.WorkspaceToolNames()
	if o.Tools != nil {
		offered = nil
		for _, n := range o.Tools {
			if c, ok := tools.CanonicalName(strings.TrimSpace(n)); ok {
				offered = append(offered, c)
			} else {
				log.Debug("--tools names no workspace tool", "tool", n)
			}
		}
	}
	out := []string{}
	for _, n := range offered {
		denied := false
		for _, r := range o.DisallowedTools {
			rule := permission.ParseRule(r)
			if rule.Whole() && rule.Tool == n {
				denied = true
			}
		}
		if !denied {
			out = append(out, n)
		}
	}
	return out
}

// sdkApprover decides the workspace tool calls the default mode does not allow by itself.
// A subagent's approver has its own rules (its disallowedTools added) and, when its
// definition sets a mode, that mode as a ceiling on the live one.
type sdkApprover struct {
	h       *Host
	rules   *permission.Rules
	ceiling tools.Mode // "": none
}

// Mode is the mode the approver applies: the live mode, capped by the ceiling. The
// workspace tools ask it whether protected paths may be written.
func (a sdkApprover) Mode() tools.Mode {
	return a.h.liveMode().CappedAt(a.ceiling)
}

// Approve implements tools.Approver: the live mode first, then the disallow and allow
// rules, then the host (can_use_tool) when --permission-prompt-tool=stdio; else refused.
func (a sdkApprover) Approve(ctx context.Context, call tools.Call, kind tools.Kind) (bool, json.RawMessage, string) {
	h := a.h
	mode := a.Mode()
	_, denied := a.rules.Deny(call)
	switch {
	case denied:
		return false, nil, "it matches --disallowedTools"
	case mode == tools.ModePlan && kind != tools.KindRead:
		return false, nil, "the permission mode is plan, which is read-only: present your plan instead of changing anything"
	case mode.Allows(kind):
		return true, nil, ""
	case a.rules.Allowed(call, mode):
		return true, nil, ""
	case !h.opts.PermissionPromptStdio || h.liveNoPrompt():
		return false, nil, fmt.Sprintf("the permission mode %s does not allow %s calls and nobody can approve them in this run", mode.PermissionMode(), kind)
	}
	return a.ask(ctx, call, kind)
}

// ask puts the call to the host as a can_use_tool request and returns its verdict.
func (a sdkApprover) ask(ctx context.Context, call tools.Call, kind tools.Kind) (bool, json.RawMessage, string) {
	name := a.h.ToolName(call.Name)
	input := json.RawMessage(call.Input)
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	fields := map[string]any{
		"tool_name":       name,
		"input":           input,
		"tool_use_id":     call.ID,
		"decision_reason": fmt.Sprintf("the permission mode %s asks before %s calls", a.Mode().PermissionMode(), kind),
		"title":           fmt.Sprintf("stoke wants to use %s", name),
		"stoke_tool_name": call.Name,
	}
	if p := gjson.GetBytes(input, "file_path"); p.Type == gjson.String && kind == tools.KindEdit {
		fields["blocked_path"] = p.Str
	}
	if id := llm.TaskIDFrom(ctx); id != "" {
		fields["agent_id"] = id // a subagent asks: the SDK passes it to canUseTool as agentID
	}
	if a.h.opts.Dialect == DialectQwen {
		// Qwen Code's SDK hands these to canUseTool as options.suggestions.
		fields["permission_suggestions"] = qwenSuggestions(name, kind)
	}
	raw, err := a.h.cfg.Control.request(ctx, "can_use_tool", fields)
	if err != nil {
		a.h.cfg.Logger.Debug("can_use_tool failed", "tool", call.Name, "err", err)
		return false, nil, err.Error()
	}
	v := gjson.ParseBytes(raw)
	switch v.Get("behavior").String() {
	case "allow":
		var updated json.RawMessage
		if u := v.Get("updatedInput"); u.IsObject() {
			updated = json.RawMessage(u.Raw)
		}
		return true, updated, ""
	case "deny":
		if v.Get("interrupt").Bool() {
			a.h.interruptTurn()
		}
		msg := v.Get("message").String()
		if msg == "" {
			msg = "the host denied it"
		}
		return false, nil, msg
	default:
		return false, nil, fmt.Sprintf("the host answered can_use_tool with behavior %q", v.Get("behavior").String())
	}
}

// qwenSuggestion is one of Qwen Code's PermissionSuggestion: what the host's person may
// answer a permission ask with.
type qwenSuggestion struct {
	Type        string `json:"type"` // allow, deny or modify
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// qwenSuggestions are the answers a can_use_tool ask offers Qwen Code's SDK: run the call
// once, or refuse it (stoke keeps no "always" rule of a host's answer: each call asks).
func qwenSuggestions(tool string, kind tools.Kind) []qwenSuggestion {
	return []qwenSuggestion{
		{Type: "allow", Label: "Allow once", Description: fmt.Sprintf("run this %s call of %s", kind, tool)},
		{Type: "deny", Label: "Deny", Description: fmt.Sprintf("refuse this call of %s; the model is told why", tool)},
	}
}
