package sdkhost

import (
	"context"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// The error codes of stoke's error replies (error_code). The Claude Agent SDK rejects the
// app's promise with an Error whose errorCode is this code.
const (
	// codeUnsupported: stoke does not implement the subtype (the SDK's own code).
	codeUnsupported = streamjson.ErrorCodeUnsupported
	// codeInvalid: the request is malformed, or asks for something that does not exist
	// in stoke's vocabulary (a permission mode, a task id).
	codeInvalid = "invalid_request"
	// codeTaskNotFound: no task of that id in this session.
	codeTaskNotFound = "task_not_found"
	// codeTaskNotRunning: the task exists but is not running.
	codeTaskNotRunning = "task_not_running"
	// codeInitialize: the initialize request cannot be applied (or came twice).
	codeInitialize = "initialize_failed"
	// codeFailed: any other failure.
	codeFailed = "request_failed"
)

// ControlError refuses a control request: Code is the reply's error_code.
type ControlError struct {
	Code string
	Msg  string
}

func (e *ControlError) Error() string { return e.Msg }

func controlErrorf(code, format string, args ...any) error {
	return &ControlError{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// unsupported refuses a subtype stoke does not implement, with the message the SDK itself
// uses and, when known, why.
func unsupported(subtype, why string) error {
	msg := "Unsupported control request subtype: " + subtype
	if why != "" {
		msg += " (" + why + ")"
	}
	return &ControlError{Code: codeUnsupported, Msg: msg}
}

// refusal says why stoke does not implement a subtype the Claude Agent SDK or Qwen Code's
// SDK can send; "" for a subtype it knows nothing of.
func refusal(subtype string) string {
	switch subtype {
	case "set_max_thinking_tokens":
		return "stoke sends no thinking configuration"
	case "set_effort":
		return "stoke sends no reasoning effort"
	case "get_context_usage":
		return "stoke does not measure context usage"
	case "get_usage", "get_usage_info":
		return "the result lines carry usage and total_cost_usd"
	case "get_available_models":
		return "the initialize reply lists the model"
	case "supported_commands":
		return "stoke has no slash commands"
	case "background_tasks":
		return "a running foreground task stays in the foreground; launch it with run_in_background"
	case "rewind_files":
		return "stoke keeps no file checkpoints"
	case "rename_session", "generate_session_title":
		return "stoke sessions have ids, not names"
	case "export_conversation":
		return "use stoke sessions export"
	case "cancel_async_message":
		return "user messages run in the order they came"
	case "continue_last_turn":
		return "send a user message to go on"
	case "apply_flag_settings", "update_settings", "get_settings":
		return "stoke reads its own settings (.stoke/settings.yaml)"
	case "list_permission_rules":
		return "the rules are the --allowedTools and --disallowedTools the run was started with"
	case "mcp_set_servers", "mcp_reconnect", "mcp_toggle":
		return "a run's MCP servers are fixed when it starts"
	case "mcp_read_resource":
		return "stoke reads no MCP resources"
	case "mcp_authenticate", "mcp_clear_auth", "mcp_oauth_callback_url":
		return "stoke does no MCP OAuth"
	case "set_mcp_permission_mode_override":
		return "MCP calls follow the permission mode and rules"
	case "reload_plugins":
		return "stoke has no plugins"
	case "reload_skills":
		return "stoke has no skills"
	case "reload_output_styles":
		return "stoke has one output style"
	case "read_file":
		return "stoke serves no files to the host"
	case "set_cwd":
		return "the working directory is fixed when the run starts"
	}
	return ""
}

// HandleControl answers the host's control requests (ControlHandler).
func (h *Host) HandleControl(in streamjson.Input) (any, error) {
	req := gjson.GetBytes(in.Raw, "request")
	switch in.Subtype {
	case "initialize":
		return h.initializeReply(in.Line)
	case "interrupt":
		if !h.interruptTurn() {
			h.cfg.Logger.Debug("interrupt: no turn is running")
		}
		return map[string]any{}, nil
	case "set_model":
		name := req.Get("model").String()
		if name != "" && h.cfg.Options.MaxBudgetUSD > 0 && h.cfg.Priced != nil && !h.cfg.Priced(name) {
			return nil, controlErrorf(codeInvalid, "set_model %q: --max-budget-usd needs a price for this model: add it under prices: in settings.yaml (USD per million tokens, see docs/pricing.md)", name)
		}
		h.model.set(name)
		h.cfg.Logger.Info("model changed by the host", "model", h.model.Name())
		if h.cfg.Announce != nil {
			h.cfg.Announce(h.model.Name()) // a system message names the new model
		}
		return map[string]any{}, nil
	case "set_permission_mode":
		return h.setPermissionMode(req.Get("mode").String())
	case "stop_task":
		return h.stopTask(req.Get("task_id").String())
	case "get_task_output":
		return h.taskOutput(req.Get("task_id").String())
	case "mcp_status", "mcp_server_status":
		return h.mcpStatus(), nil
	case "seed_read_state":
		// stoke's edit tools need no earlier read of the file: nothing to seed.
		return map[string]any{}, nil
	}
	return nil, unsupported(in.Subtype, refusal(in.Subtype))
}

// parsePermissionMode reads a permission mode in Claude Code's vocabulary or Qwen Code's
// (which is stoke's): the approval mode, and whether the host must never be asked
// (dontAsk). auto (a model classifier in both) is the default mode: stoke has no
// classifier, and a classifier that cannot answer puts the call to the host.
func parsePermissionMode(s string) (mode tools.Mode, noPrompt bool, err error) {
	if s == "auto" {
		return tools.ModeDefault, false, nil
	}
	if mode, noPrompt, err := tools.ParsePermissionMode(s); err == nil {
		return mode, noPrompt, nil
	}
	mode, err = tools.ParseMode(s)
	return mode, false, err
}

// setPermissionMode answers set_permission_mode: the mode of every later tool call.
func (h *Host) setPermissionMode(name string) (any, error) {
	m, noPrompt, err := parsePermissionMode(name)
	if err != nil {
		return nil, controlErrorf(codeInvalid, "set_permission_mode: %v", err)
	}
	h.mu.Lock()
	h.mode, h.noPrompt = m, noPrompt
	h.mu.Unlock()
	if name != string(m) && name != m.PermissionMode() {
		h.cfg.Logger.Info("permission mode mapped", "asked", name, "mode", m)
	}
	return map[string]any{"mode": h.modeName(m)}, nil
}

// modeName is a mode in the host's vocabulary.
func (h *Host) modeName(m tools.Mode) string {
	if h.opts.Dialect == DialectQwen {
		return string(m)
	}
	return m.PermissionMode()
}

// task looks a task up for a control request.
func (h *Host) task(id string) (agents.TaskID, Tasks, error) {
	tid, err := agents.ParseTaskID(id)
	if err != nil {
		return "", nil, controlErrorf(codeTaskNotFound, "no task %q in this session: %v", id, err)
	}
	if h.cfg.Tasks == nil {
		return "", nil, controlErrorf(codeTaskNotFound, "no task %q in this session", id)
	}
	return tid, h.cfg.Tasks(), nil
}

// stopTask answers stop_task: the task's running turn is cancelled, its partial findings
// kept, and its task_notification says stopped (as task_stop does).
func (h *Host) stopTask(id string) (any, error) {
	tid, ts, err := h.task(id)
	if err != nil {
		return nil, err
	}
	if _, err := ts.Stop(tid); err != nil {
		code := codeFailed
		switch {
		case errors.Is(err, agents.ErrUnknownTask):
			code = codeTaskNotFound
		case errors.Is(err, agents.ErrNotContinuable):
			code = codeTaskNotRunning
		}
		return nil, &ControlError{Code: code, Msg: "stop_task: " + err.Error()}
	}
	return map[string]any{}, nil
}

// taskOutput answers get_task_output: the outcome of the task's latest settled turn (its
// final text, or what a stopped or failed turn had found).
func (h *Host) taskOutput(id string) (any, error) {
	tid, ts, err := h.task(id)
	if err != nil {
		return nil, err
	}
	row, err := ts.Collect(context.Background(), tid, true)
	if err != nil {
		code := codeFailed
		if errors.Is(err, agents.ErrUnknownTask) {
			code = codeTaskNotFound
		}
		return nil, &ControlError{Code: code, Msg: "get_task_output: " + err.Error()}
	}
	out := row.LastOutcome.Text
	if out == "" && row.LastOutcome.Error != "" {
		out = row.LastOutcome.Error
	}
	return map[string]any{"output": out, "total_bytes": len(out), "truncated": false, "status": string(row.Status)}, nil
}

// mcpStatus answers mcp_status (Qwen Code: mcp_server_status): every MCP server of the run
// with its status, and the tools of those connected.
func (h *Host) mcpStatus() any {
	servers := []map[string]any{}
	if h.cfg.MCPServers != nil {
		for _, st := range h.cfg.MCPServers() {
			s := map[string]any{"name": st.Name, "status": st.Status}
			if st.Error != "" {
				s["error"] = st.Error
			}
			if len(st.Tools) > 0 {
				ts := make([]map[string]any, 0, len(st.Tools))
				for _, t := range st.Tools {
					ts = append(ts, map[string]any{"name": t})
				}
				s["tools"] = ts
			}
			servers = append(servers, s)
		}
	}
	return map[string]any{"mcpServers": servers}
}

// liveNoPrompt reports whether the live mode never asks the host (dontAsk).
func (h *Host) liveNoPrompt() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.noPrompt
}
