package headless

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/permission"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// liveMode is the permission mode now in force (set_permission_mode changes it).
func (st *sdkState) liveMode() tools.Mode {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.mode
}

// workspaceApproval returns the approval mode the workspace tools are built with, and the
// Approver to give them (tools.WithApprover) or nil. In an SDK session, and whenever
// Claude Code's permission options are used, the tools are built in the default mode and
// the approver applies the live mode (which set_permission_mode changes), the
// --allowedTools/--disallowedTools rules and the host's can_use_tool verdicts. Otherwise
// the configured mode is used as it is.
func (s *session) workspaceApproval() (tools.Mode, tools.Approver) {
	o := s.sdk.opts
	sdk := s.sdk.cp != nil && s.opts.sdkMode()
	if !sdk && !o.PermissionPromptStdio && len(o.AllowedTools) == 0 && len(o.DisallowedTools) == 0 {
		return s.sdk.liveMode(), nil
	}
	return tools.ModeDefault, sdkApprover{s: s}
}

// parentWorkspaceTools returns the workspace tools offered to the parent: all of them, or
// those --tools names (Claude Code's names or stoke's), less the bare names of
// --disallowedTools.
func (s *session) parentWorkspaceTools(ws *tools.Workspace) []tools.Tool {
	names := s.workspaceTools()
	if names != nil && len(names) == 0 {
		return nil // --tools "": none
	}
	ts, _ := ws.Tools(names)
	return ts
}

// workspaceTools filters the names of the workspace tools by --tools and the bare names of
// --disallowedTools; nil means all of them, empty none.
func (s *session) workspaceTools() []string {
	o := s.sdk.opts
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
				s.opts.Logger.Debug("--tools names no workspace tool", "tool", n)
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
	s       *session
	rules   *permission.Rules // nil: the session's
	ceiling tools.Mode        // "": none
}

// Mode is the mode the approver applies: the live mode, capped by the ceiling. The
// workspace tools ask it whether protected paths may be written.
func (a sdkApprover) Mode() tools.Mode {
	mode := a.s.sdk.liveMode()
	if a.ceiling != "" && a.ceiling.Rank() < mode.Rank() {
		return a.ceiling
	}
	return mode
}

// Approve implements tools.Approver: the live mode first, then the disallow and allow
// rules, then the host (can_use_tool) when --permission-prompt-tool=stdio; else refused.
func (a sdkApprover) Approve(ctx context.Context, call tools.Call, kind tools.Kind) (bool, json.RawMessage, string) {
	st := a.s.sdk
	mode := a.Mode()
	rules := a.rules
	if rules == nil {
		rules = a.s.rules
	}
	_, denied := rules.Deny(call)
	switch {
	case denied:
		return false, nil, "it matches --disallowedTools"
	case mode == tools.ModePlan && kind != tools.KindRead:
		return false, nil, "the permission mode is plan, which is read-only: present your plan instead of changing anything"
	case mode.Allows(kind):
		return true, nil, ""
	case rules.Allowed(call, mode):
		return true, nil, ""
	case !st.opts.PermissionPromptStdio || st.opts.NoPrompt:
		return false, nil, fmt.Sprintf("the permission mode %s does not allow %s calls and nobody can approve them in this run", streamjson.PermissionMode(string(mode)), kind)
	}
	return a.ask(ctx, call, kind)
}

// ask puts the call to the host as a can_use_tool request and returns its verdict.
func (a sdkApprover) ask(ctx context.Context, call tools.Call, kind tools.Kind) (bool, json.RawMessage, string) {
	name := claudeToolName(call.Name)
	input := json.RawMessage(call.Input)
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	fields := map[string]any{
		"tool_name":       name,
		"input":           input,
		"tool_use_id":     call.ID,
		"decision_reason": fmt.Sprintf("the permission mode %s asks before %s calls", streamjson.PermissionMode(string(a.Mode())), kind),
		"title":           fmt.Sprintf("stoke wants to use %s", name),
		"stoke_tool_name": call.Name,
	}
	if p := gjson.GetBytes(input, "file_path"); p.Type == gjson.String && kind == tools.KindEdit {
		fields["blocked_path"] = p.Str
	}
	raw, err := a.s.sdk.cp.request(ctx, "can_use_tool", fields)
	if err != nil {
		a.s.opts.Logger.Debug("can_use_tool failed", "tool", call.Name, "err", err)
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
			a.s.sdk.interruptTurn()
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
