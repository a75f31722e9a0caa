// Package streamjson holds the stream-JSON events stoke writes (one Go type per event kind,
// shaped after the Claude Agent SDK message types), the Encoder that writes them as NDJSON,
// and the Decoder for --input-format stream-json.
package streamjson

import (
	"encoding/json"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Event is any event the Encoder can write.
type Event interface {
	envelope() *Envelope
}

// Envelope holds the keys every line has. The Encoder fills UUID and SessionID when empty.
type Envelope struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype,omitempty"`
	UUID      string `json:"uuid"`
	SessionID string `json:"session_id"`
}

func (e *Envelope) envelope() *Envelope { return e }

// Init is the first line of every run.
type Init struct {
	Envelope
	CWD            string   `json:"cwd"`
	Model          string   `json:"model"`
	Tools          []string `json:"tools"`
	Agents         []string `json:"agents"`
	PermissionMode string   `json:"permissionMode"`
	MCPServers     []any    `json:"mcp_servers"`
	APIKeySource   string   `json:"apiKeySource"`
	SlashCommands  []string `json:"slash_commands"`
	OutputStyle    string   `json:"output_style"`
	Skills         []string `json:"skills"`
	Plugins        []string `json:"plugins"`
	// ClaudeCodeVersion is required by the Claude Agent SDK's SDKSystemMessage: stoke's
	// version, as in StokeVersion.
	ClaudeCodeVersion string `json:"claude_code_version"`
	StokeVersion      string `json:"stoke_version"`
	// Qwen Code's keys, written to a Qwen Code SDK host: its permission mode vocabulary
	// (plan, default, auto-edit, yolo) and version key.
	QwenPermissionMode string `json:"permission_mode,omitempty"`
	QwenCodeVersion    string `json:"qwen_code_version,omitempty"`
	// Sandbox is stoke's: the sandbox of the shell tool's commands.
	Sandbox *SandboxStatus `json:"sandbox,omitempty"`
}

// SandboxStatus is init's sandbox: its mode (workspace-write, read-only, off), whether
// the kernel enforces it, and why not (or what is missing) when it does not.
type SandboxStatus struct {
	Mode     string `json:"mode"`
	Enforced bool   `json:"enforced"`
	Reason   string `json:"reason"`
}

// NewInit returns an Init with the fixed keys filled in.
func NewInit() *Init {
	return &Init{
		Envelope:      Envelope{Type: "system", Subtype: "init"},
		Tools:         []string{},
		Agents:        []string{},
		MCPServers:    []any{},
		APIKeySource:  "none",
		SlashCommands: []string{},
		OutputStyle:   "default",
		Skills:        []string{},
		Plugins:       []string{},
	}
}

// Block is a content block as the SDKs expect it: text {type,text}; tool_use
// {type,id,name,input}; tool_result {type,tool_use_id,content,is_error} (is_error always present).
type Block llm.Block

// MarshalJSON writes only the keys of the block's type, without HTML escaping. A tool_use
// input that is not valid JSON (a model can emit broken arguments) is written as a JSON
// string holding the raw text, so the line is still written and nothing is lost.
func (b Block) MarshalJSON() ([]byte, error) {
	switch b.Type {
	case llm.BlockToolUse:
		input := b.Input
		switch {
		case len(input) == 0:
			input = json.RawMessage(`{}`)
		case !json.Valid(input):
			quoted, err := marshalNoEscape(string(input))
			if err != nil {
				return nil, err
			}
			input = quoted
		}
		return marshalNoEscape(struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}{b.Type, b.ID, b.Name, input})
	case llm.BlockToolResult:
		return marshalNoEscape(struct {
			Type      string `json:"type"`
			ToolUseID string `json:"tool_use_id"`
			Content   string `json:"content"`
			IsError   bool   `json:"is_error"`
		}{b.Type, b.ToolUseID, b.Content, b.IsError})
	case llm.BlockImage, llm.BlockDocument:
		return marshalNoEscape(struct {
			Type   string      `json:"type"`
			Source *llm.Source `json:"source"`
			Title  string      `json:"title,omitempty"`
		}{b.Type, b.Source, b.Title})
	default:
		// citations: the Anthropic API's text block has it (null when there are none),
		// and the SDKs' types require it.
		return marshalNoEscape(struct {
			Type      string `json:"type"`
			Text      string `json:"text"`
			Citations any    `json:"citations"`
		}{b.Type, b.Text, nil})
	}
}

// Blocks converts llm blocks to event blocks (never nil).
func Blocks(bs []llm.Block) []Block {
	out := make([]Block, len(bs))
	for i, b := range bs {
		out[i] = Block(b)
	}
	return out
}

// AssistantMessage is the message of an assistant line (a BetaMessage): the keys the
// Anthropic API's message has, those stoke has no value for null.
type AssistantMessage struct {
	ID                string  `json:"id"`
	Type              string  `json:"type"`
	Role              string  `json:"role"`
	Model             string  `json:"model"`
	Content           []Block `json:"content"`
	StopReason        *string `json:"stop_reason"` // nil (null) when the reply has none
	StopSequence      *string `json:"stop_sequence"`
	StopDetails       any     `json:"stop_details"`       // always null
	Container         any     `json:"container"`          // always null
	ContextManagement any     `json:"context_management"` // always null
	Diagnostics       any     `json:"diagnostics"`        // always null
	Usage             Usage   `json:"usage"`
}

// Usage is token usage on the wire: llm.Usage with the other keys of the Anthropic API's
// usage object, which the SDKs' types require: cache_creation (the cache writes, all
// counted as 5-minute writes), server_tool_use, service_tier, output_tokens_details,
// iterations, inference_geo, speed, fallback_credit. stoke has no server tools,
// thinking-token counts or service tiers: those are zero, empty or "standard".
type Usage llm.Usage

// MarshalJSON writes the usage object.
func (u Usage) MarshalJSON() ([]byte, error) {
	type cacheCreation struct {
		Ephemeral1h int64 `json:"ephemeral_1h_input_tokens"`
		Ephemeral5m int64 `json:"ephemeral_5m_input_tokens"`
	}
	type serverToolUse struct {
		WebFetch  int64 `json:"web_fetch_requests"`
		WebSearch int64 `json:"web_search_requests"`
	}
	type outputDetails struct {
		Thinking int64 `json:"thinking_tokens"`
	}
	return marshalNoEscape(struct {
		InputTokens              int64         `json:"input_tokens"`
		OutputTokens             int64         `json:"output_tokens"`
		CacheCreationInputTokens int64         `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64         `json:"cache_read_input_tokens"`
		CacheCreation            cacheCreation `json:"cache_creation"`
		ServerToolUse            serverToolUse `json:"server_tool_use"`
		ServiceTier              string        `json:"service_tier"`
		OutputTokensDetails      outputDetails `json:"output_tokens_details"`
		Iterations               []struct{}    `json:"iterations"`
		InferenceGeo             string        `json:"inference_geo"`
		Speed                    string        `json:"speed"`
		FallbackCredit           any           `json:"fallback_credit"`
	}{
		InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens, CacheReadInputTokens: u.CacheReadInputTokens,
		CacheCreation: cacheCreation{Ephemeral5m: u.CacheCreationInputTokens},
		ServiceTier:   "standard", Iterations: []struct{}{}, Speed: "standard",
	})
}

// AgentKeys name the subagent a line belongs to; empty on the parent's lines.
type AgentKeys struct {
	TaskID          string `json:"task_id,omitempty"`
	AgentID         string `json:"agent_id,omitempty"`
	SubagentType    string `json:"subagent_type,omitempty"`
	TaskDescription string `json:"task_description,omitempty"`
}

// Assistant is one model reply.
type Assistant struct {
	Envelope
	Message         AssistantMessage `json:"message"`
	ParentToolUseID *string          `json:"parent_tool_use_id"`
	AgentKeys
}

// NewAssistant returns an assistant line for a reply.
func NewAssistant(id, model string, content []llm.Block, stopReason string, usage llm.Usage) *Assistant {
	var stop *string
	if stopReason != "" {
		stop = &stopReason
	}
	return &Assistant{
		Envelope: Envelope{Type: "assistant"},
		Message: AssistantMessage{
			ID: id, Type: "message", Role: "assistant", Model: model,
			Content: Blocks(content), StopReason: stop, Usage: Usage(usage),
		},
	}
}

// UserMessage is the message of a user line.
type UserMessage struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Origin tells what produced a user line that no human typed.
type Origin struct {
	Kind string `json:"kind"`
}

// User carries tool results, injected notifications and prompts.
type User struct {
	Envelope
	Message         UserMessage `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	Origin          *Origin     `json:"origin,omitempty"`
	AgentKeys
}

// NewUser returns a user line.
func NewUser(content []llm.Block) *User {
	return &User{
		Envelope: Envelope{Type: "user"},
		Message:  UserMessage{Role: "user", Content: Blocks(content)},
	}
}

// TaskUsage is the usage summary of a task turn.
type TaskUsage struct {
	TotalTokens int64 `json:"total_tokens"`
	ToolUses    int   `json:"tool_uses"`
	DurationMS  int64 `json:"duration_ms"`
}

// Continuation is how a turn of a task goes on from the last: task_started's
// continuation, the lifecycle hooks' and the traces' too.
type Continuation string

// The continuations.
const (
	// ContinuationFresh: the launch, the task's first turn.
	ContinuationFresh Continuation = "fresh"
	// ContinuationResident: a new turn on the runtime that stayed in memory.
	ContinuationResident Continuation = "resident"
	// ContinuationRevived: a new turn on a runtime rebuilt from the task's transcript.
	ContinuationRevived Continuation = "revived"
	// ContinuationQueued: no new turn: send_message's message went into the task's running
	// (or queued) turn, which reads it between its steps. Never in task_started.
	ContinuationQueued Continuation = "queued"
)

// TaskStarted starts every turn of a subagent.
type TaskStarted struct {
	Envelope
	TaskID         string       `json:"task_id"`
	RunID          string       `json:"run_id"`
	ToolUseID      string       `json:"tool_use_id"`
	Description    string       `json:"description"`
	SubagentType   string       `json:"subagent_type"`
	TaskType       string       `json:"task_type"`
	Prompt         string       `json:"prompt"`
	IsBackgrounded bool         `json:"is_backgrounded"`
	SpawnDepth     int          `json:"spawn_depth"`
	Turn           int          `json:"turn"`
	Continuation   Continuation `json:"continuation"`
}

// NewTaskStarted returns a task_started line with the fixed keys filled in.
func NewTaskStarted() *TaskStarted {
	return &TaskStarted{Envelope: Envelope{Type: "system", Subtype: "task_started"}, TaskType: "local_agent", SpawnDepth: 1}
}

// TaskProgress follows each tool round of a subagent.
type TaskProgress struct {
	Envelope
	TaskID       string    `json:"task_id"`
	ToolUseID    string    `json:"tool_use_id"`
	Description  string    `json:"description"`
	SubagentType string    `json:"subagent_type"`
	Turn         int       `json:"turn"`
	LastToolName string    `json:"last_tool_name"`
	Usage        TaskUsage `json:"usage"`
}

// NewTaskProgress returns a task_progress line.
func NewTaskProgress() *TaskProgress {
	return &TaskProgress{Envelope: Envelope{Type: "system", Subtype: "task_progress"}}
}

// Notification statuses on the wire.
const (
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusStopped   = "stopped"
)

// TaskNotification ends every background turn of a subagent.
type TaskNotification struct {
	Envelope
	TaskID      string `json:"task_id"`
	RunID       string `json:"run_id"`
	ToolUseID   string `json:"tool_use_id"`
	Status      string `json:"status"`
	Reason      string `json:"reason,omitempty"`
	Turn        int    `json:"turn"`
	Summary     string `json:"summary"`
	Interrupted bool   `json:"interrupted"`
	// StokeReason is Reason where the SDKs' type names reason's values (an SDK host's
	// stream): stoke's reasons are not among them.
	StokeReason string    `json:"stoke_reason,omitempty"`
	OutputFile  string    `json:"output_file"`
	Usage       TaskUsage `json:"usage"`
}

// NewTaskNotification returns a task_notification line.
func NewTaskNotification() *TaskNotification {
	return &TaskNotification{Envelope: Envelope{Type: "system", Subtype: "task_notification"}}
}

// Result subtypes.
const (
	ResultSuccess              = "success"
	ResultErrorMaxTurns        = "error_max_turns"
	ResultErrorDuringExecution = "error_during_execution"
	// ResultErrorMaxStructuredOutputRetries: the model gave no valid structured answer
	// (--json-schema, the SDK's outputFormat) in the answers it was allowed.
	ResultErrorMaxStructuredOutputRetries = "error_max_structured_output_retries"
)

// Terminal reasons of a result (terminal_reason, the SDKs' TerminalReason): why the turn
// ended.
const (
	TerminalCompleted   = "completed"
	TerminalMaxTurns    = "max_turns"
	TerminalBudget      = "budget_exhausted"
	TerminalAborted     = "aborted_streaming" // interrupted, cancelled, timed out
	TerminalHookStopped = "hook_stopped"      // a hook blocked the prompt
	TerminalModelError  = "model_error"       // the model or its provider failed
	TerminalSetupFailed = "turn_setup_failed" // the turn could not start (its input)
	TerminalImageError  = "image_error"       // the model does not take the turn's media
	// TerminalStructuredRetries: no valid structured answer in the answers allowed.
	TerminalStructuredRetries = "structured_output_retry_exhausted"
)

// Result ends a run (or, with stream-json input, each turn).
type Result struct {
	Envelope
	IsError           bool                  `json:"is_error"`
	DurationMS        int64                 `json:"duration_ms"`
	DurationAPIMS     int64                 `json:"duration_api_ms"`
	NumTurns          int                   `json:"num_turns"`
	Result            string                `json:"result"`
	StopReason        *string               `json:"stop_reason"`
	TerminalReason    string                `json:"terminal_reason,omitempty"`
	TotalCostUSD      float64               `json:"total_cost_usd"`
	Usage             Usage                 `json:"usage"`
	ModelUsage        map[string]ModelUsage `json:"modelUsage"`
	PermissionDenials []PermissionDenial    `json:"permission_denials"`
	// StructuredOutput is the structured answer of a run asked for one (--json-schema,
	// the SDK's outputFormat), on success.
	StructuredOutput json.RawMessage `json:"structured_output,omitempty"`
	Errors           []string        `json:"errors,omitempty"`
}

// PermissionDenial is a tool call that was refused (the SDKs' SDKPermissionDenial).
type PermissionDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"` // an object ({} when the call had none)
}

// ModelUsage is one model's entry of a result's modelUsage (the SDKs' ModelUsage): its
// tokens and cost over the run so far, every agent's calls included. stoke knows no
// model's context window or output limit: ContextWindow and MaxOutputTokens are 0.
type ModelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	WebSearchRequests        int64   `json:"webSearchRequests"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int64   `json:"contextWindow"`
	MaxOutputTokens          int64   `json:"maxOutputTokens"`
}

// NewResult returns a result line of the given subtype; IsError follows the subtype.
func NewResult(subtype string) *Result {
	return &Result{
		Envelope:          Envelope{Type: "result", Subtype: subtype},
		IsError:           subtype != ResultSuccess,
		ModelUsage:        map[string]ModelUsage{},
		PermissionDenials: []PermissionDenial{},
	}
}
