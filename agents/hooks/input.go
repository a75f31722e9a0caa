package hooks

import "encoding/json"

// Input is the JSON a hook reads on stdin. Every event carries hook_event_name,
// session_id, cwd, task_id, subagent_type, turn and continuation (task_id and
// subagent_type are "" for the parent, and turn is the parent's for Stop). SubagentStop
// and Stop add last_message (the final text of the turn) and stop_hook_active (true when
// the turn is already going on because a stop hook blocked it; a hook should then let it
// stop, or it loops). PreToolUse adds tool_name (Claude Code's name for a workspace tool:
// Bash, Read, ...), stoke_tool_name, tool_input and tool_use_id; PostToolUse adds
// tool_response (the result's text) and tool_error. UserPromptSubmit adds prompt,
// SessionStart source (startup or resume), SessionEnd reason. Claude Code's names are
// added for scripts written for it: agent_id and agent_type (subagent events, and the
// tool events of a subagent), last_assistant_message (stop events), permission_mode.
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
	// PermissionMode is Claude Code's name of the approval mode ("" leaves it out).
	PermissionMode string
	// LastMessage and StopHookActive are sent for SubagentStop and Stop only.
	LastMessage    string
	StopHookActive bool
	// ToolName (Claude Code's name), StokeToolName, ToolInput and ToolUseID are sent for
	// PreToolUse and PostToolUse; ToolResponse and ToolError for PostToolUse.
	ToolName      string
	StokeToolName string
	ToolInput     json.RawMessage
	ToolUseID     string
	ToolResponse  string
	ToolError     bool
	// Prompt is sent for UserPromptSubmit, Source for SessionStart, Reason for SessionEnd.
	Prompt string
	Source string
	Reason string
}

// MarshalJSON writes the wire form described on Input.
func (in Input) MarshalJSON() ([]byte, error) {
	type wire struct {
		HookEventName        Event           `json:"hook_event_name"`
		SessionID            string          `json:"session_id"`
		CWD                  string          `json:"cwd"`
		TaskID               string          `json:"task_id"`
		SubagentType         string          `json:"subagent_type"`
		Turn                 int             `json:"turn"`
		Continuation         string          `json:"continuation"`
		TranscriptPath       string          `json:"transcript_path,omitempty"`
		PermissionMode       string          `json:"permission_mode,omitempty"`
		AgentID              string          `json:"agent_id,omitempty"`
		AgentType            string          `json:"agent_type,omitempty"`
		LastMessage          *string         `json:"last_message,omitempty"`
		LastAssistantMessage *string         `json:"last_assistant_message,omitempty"`
		StopHookActive       *bool           `json:"stop_hook_active,omitempty"`
		ToolName             string          `json:"tool_name,omitempty"`
		StokeToolName        string          `json:"stoke_tool_name,omitempty"`
		ToolInput            json.RawMessage `json:"tool_input,omitempty"`
		ToolUseID            string          `json:"tool_use_id,omitempty"`
		ToolResponse         *string         `json:"tool_response,omitempty"`
		ToolError            *bool           `json:"tool_error,omitempty"`
		Prompt               *string         `json:"prompt,omitempty"`
		Source               string          `json:"source,omitempty"`
		Reason               string          `json:"reason,omitempty"`
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
		PermissionMode: in.PermissionMode,
	}
	if in.Event == SubagentStart || in.Event == SubagentStop || in.Event.tool() {
		w.AgentID, w.AgentType = in.TaskID, in.SubagentType
	}
	if in.Event.stops() {
		w.LastMessage, w.LastAssistantMessage = &in.LastMessage, &in.LastMessage
		w.StopHookActive = &in.StopHookActive
	}
	if in.Event.tool() {
		w.ToolName, w.StokeToolName, w.ToolUseID = in.ToolName, in.StokeToolName, in.ToolUseID
		w.ToolInput = in.ToolInput
		if len(w.ToolInput) == 0 {
			w.ToolInput = json.RawMessage(`{}`)
		}
	}
	if in.Event == PostToolUse {
		w.ToolResponse, w.ToolError = &in.ToolResponse, &in.ToolError
	}
	switch in.Event {
	case UserPromptSubmit:
		w.Prompt = &in.Prompt
	case SessionStart:
		w.Source = in.Source
	case SessionEnd:
		w.Reason = in.Reason
	}
	return json.Marshal(w)
}
