package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/permission"
	"github.com/stoke-cli/stoke/agents/tools"
)

// permissionClient is what approvals need of the connection.
type permissionClient interface {
	// RequestPermission asks the client about one tool call; it returns when the person
	// answered, the client cancelled, or ctx ended.
	RequestPermission(ctx context.Context, req sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error)
}

// approvals are a session's approval mode (its ACP session mode, set by session/set_mode)
// and what the person allowed for good: the session's headless.Approvals. A call the mode
// in force does not allow, and that no --allowedTools rule allows, is put to the client
// as session/request_permission: allow once, allow always (remembered for the session:
// every edit, or that exact shell command, or that tool), or reject.
type approvals struct {
	conn permissionClient
	id   sdk.SessionId
	cwd  string // the session's, for the paths the requests name

	mu     sync.Mutex
	mode   tools.Mode
	always map[string]bool // remembered: "edit", "shell:<command>", or a tool's name
}

func newApprovals(conn permissionClient, id sdk.SessionId, cwd string, mode tools.Mode) *approvals {
	if mode.Rank() < 0 {
		mode = tools.ModeDefault
	}
	return &approvals{conn: conn, id: id, cwd: cwd, mode: mode, always: map[string]bool{}}
}

// The permission options put to the client.
const (
	optionAllowOnce   sdk.PermissionOptionId = "allow_once"
	optionAllowAlways sdk.PermissionOptionId = "allow_always"
	optionReject      sdk.PermissionOptionId = "reject_once"
)

// modeDescriptions say what each approval mode lets the agents do without asking.
func modeDescriptions() map[tools.Mode]string {
	return map[tools.Mode]string{
		tools.ModePlan:     "Read-only: read and search, then present a plan; no edits, no commands",
		tools.ModeDefault:  "Ask before every edit and every command",
		tools.ModeAutoEdit: "Edit files without asking; ask before commands",
		tools.ModeYolo:     "Edit files and run commands without asking",
	}
}

// state is the session's modes for session/new and session/load: stoke's approval modes,
// the one in force current.
func (a *approvals) state() *sdk.SessionModeState {
	descs := modeDescriptions()
	st := &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(a.current())}
	for _, m := range tools.Modes() {
		d := descs[m]
		st.AvailableModes = append(st.AvailableModes, sdk.SessionMode{Id: sdk.SessionModeId(m), Name: string(m), Description: &d})
	}
	return st
}

func (a *approvals) current() tools.Mode {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mode
}

// set makes id the mode in force.
func (a *approvals) set(id sdk.SessionModeId) error {
	m, err := tools.ParseMode(string(id))
	if err != nil || string(m) != string(id) {
		return fmt.Errorf("unknown mode %q: want %s", id, tools.ModeNames(", "))
	}
	a.mu.Lock()
	a.mode = m
	a.mu.Unlock()
	return nil
}

// Approver implements headless.Approvals.
func (a *approvals) Approver(rules *permission.Rules, ceiling tools.Mode) tools.Approver {
	return approver{a: a, rules: rules, ceiling: ceiling}
}

// rememberKey is what "allow always" remembers of a call: every edit, the exact shell
// command, or the tool.
func rememberKey(call tools.Call, kind tools.Kind) string {
	switch {
	case kind == tools.KindEdit:
		return "edit"
	case call.Name == tools.NameShell:
		var args struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(call.Input, &args)
		return "shell:" + args.Command
	}
	return call.Name
}

func (a *approvals) remembered(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.always[key]
}

func (a *approvals) remember(key string) {
	a.mu.Lock()
	a.always[key] = true
	a.mu.Unlock()
}

// approver decides the workspace tool calls of one tool set (the parent's, or a subagent
// type's, whose own mode is its ceiling).
type approver struct {
	a       *approvals
	rules   *permission.Rules
	ceiling tools.Mode // "": none
}

// Mode is the mode the approver applies: the session's, capped by the ceiling. The tools
// ask it whether protected paths may be written.
func (p approver) Mode() tools.Mode {
	return p.a.current().CappedAt(p.ceiling)
}

// Approve implements tools.Approver: the rules and the mode in force first, what the
// person allowed for good, then the client.
func (p approver) Approve(ctx context.Context, call tools.Call, kind tools.Kind) (bool, json.RawMessage, string) {
	mode := p.Mode()
	key := rememberKey(call, kind)
	_, denied := p.rules.Deny(call)
	switch {
	case denied:
		return false, nil, "it matches --disallowedTools"
	case mode == tools.ModePlan && kind != tools.KindRead:
		return false, nil, "the session is in plan mode, which is read-only: present your plan instead of changing anything"
	case mode.Allows(kind), p.rules.Allowed(call, mode), p.a.remembered(key):
		return true, nil, ""
	}
	return p.ask(ctx, call, kind, key)
}

// ask puts the call to the client (session/request_permission).
func (p approver) ask(ctx context.Context, call tools.Call, kind tools.Kind, key string) (bool, json.RawMessage, string) {
	tc := toolCall(llm.Block{Type: llm.BlockToolUse, ID: call.ID, Name: call.Name, Input: call.Input}, p.a.cwd)
	title := tc.Title
	if id := llm.TaskIDFrom(ctx); id != "" {
		title = fmt.Sprintf("Agent %s: %s", id, title)
	}
	pending := sdk.ToolCallStatusPending
	req := sdk.RequestPermissionRequest{
		SessionId: p.a.id,
		ToolCall: sdk.ToolCallUpdate{ToolCallId: tc.ToolCallId, Title: &title, Kind: &tc.Kind, Status: &pending,
			RawInput: tc.RawInput, Locations: tc.Locations, Content: tc.Content},
		Options: []sdk.PermissionOption{
			{OptionId: optionAllowOnce, Kind: sdk.PermissionOptionKindAllowOnce, Name: "Allow"},
			{OptionId: optionAllowAlways, Kind: sdk.PermissionOptionKindAllowAlways, Name: alwaysName(call, kind)},
			{OptionId: optionReject, Kind: sdk.PermissionOptionKindRejectOnce, Name: "Reject"},
		},
	}
	resp, err := p.a.conn.RequestPermission(ctx, req)
	switch {
	case err != nil:
		return false, nil, fmt.Sprintf("the permission request failed: %v", err)
	case resp.Outcome.Cancelled != nil:
		return false, nil, "the prompt was cancelled before the person answered"
	case resp.Outcome.Selected == nil:
		return false, nil, "the client answered without an outcome"
	}
	switch resp.Outcome.Selected.OptionId {
	case optionAllowOnce:
		return true, nil, ""
	case optionAllowAlways:
		p.a.remember(key)
		return true, nil, ""
	case optionReject:
		return false, nil, "the person rejected it"
	}
	return false, nil, fmt.Sprintf("the client chose an option stoke did not offer (%q)", resp.Outcome.Selected.OptionId)
}

// alwaysName names the allow-always option by what it remembers.
func alwaysName(call tools.Call, kind tools.Kind) string {
	switch {
	case kind == tools.KindEdit:
		return "Always allow edits in this session"
	case call.Name == tools.NameShell:
		return "Always allow this command in this session"
	}
	return "Always allow " + call.Name + " in this session"
}
