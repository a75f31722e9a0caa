package report

import (
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/price"
)

// Version is the version of the JSON model (Report.Version). A change that removes or
// renames a field raises it; added fields do not.
const Version = 1

// Lane kinds.
const (
	KindParent = "parent"
	KindTask   = "task"
)

// ParentLane is the id of the parent's lane.
const ParentLane = "parent"

// Parent turn triggers: what a parent turn answered.
const (
	TriggerPrompt       = "prompt"       // a user prompt
	TriggerNotification = "notification" // task notifications, read while the parent was idle
)

// StatusUnknown is the status of a turn the session did not record the end of (its run
// was killed, or is still going on).
const StatusUnknown = "unknown"

// Report is a session drawn as lanes of turns over time: the model every rendering (HTML,
// Markdown, JSON) is made from.
type Report struct {
	Version int `json:"version"`
	// Generator names the stoke that drew the report (stoke_version).
	Generator   string    `json:"generator,omitempty"`
	GeneratedAt time.Time `json:"generated_at"`
	Session     Session   `json:"session"`
	// Start and End bound everything recorded (the first and last time in the session).
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	DurationMS int64     `json:"duration_ms"`
	Totals     Totals    `json:"totals"`
	// Lanes are the parent's, then one per task, in launch order.
	Lanes []Lane `json:"lanes"`
	// Agents is the agents table, one row per task, in launch order.
	Agents []Agent `json:"agents"`
	// Notifications are the task notifications the parent received, in order.
	Notifications []Notification `json:"notifications"`
	// Missing names what the session did not record and the report therefore estimates or
	// leaves out (a session written by an older stoke): see docs/report.md.
	Missing []string `json:"missing,omitempty"`
	// Warnings name what could not be read (a corrupt line, an unreadable sidecar).
	Warnings []string `json:"warnings,omitempty"`
	// Limits are the lengths text was cut to.
	Limits Limits `json:"limits"`
}

// Session is session.json.
type Session struct {
	ID         string    `json:"id"`
	CWD        string    `json:"cwd"`
	Model      string    `json:"model"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
	ForkedFrom string    `json:"forked_from,omitempty"`
}

// Totals add up the whole session, the parent and every agent.
type Totals struct {
	// Outcome is the status of the parent's last turn (completed, failed, paused, unknown).
	Outcome    string    `json:"outcome"`
	Agents     int       `json:"agents"`
	Turns      int       `json:"turns"` // every lane's turns, the parent's included
	ModelCalls int       `json:"model_calls"`
	ToolCalls  int       `json:"tool_calls"`
	ToolErrors int       `json:"tool_errors"`
	Usage      llm.Usage `json:"usage"`
	CostUSD    float64   `json:"cost_usd"`
	// Statuses counts the agents by status.
	Statuses map[string]int `json:"statuses"`
}

// Lane is one agent's turns over time.
type Lane struct {
	// ID is "parent" or the task id.
	ID   string `json:"id"`
	Kind string `json:"kind"` // parent or task
	// Label is what the lane is called: "parent", or the task's description.
	Label        string `json:"label"`
	SubagentType string `json:"subagent_type,omitempty"`
	Status       string `json:"status,omitempty"` // a task's status, as its sidecar says
	Turns        []Turn `json:"turns"`
}

// Turn is one instruction of an agent, from its start to its end.
type Turn struct {
	N int `json:"n"`
	// Continuation is how a task's turn ran: fresh (its launch), resident (continued on
	// the runtime kept in memory) or revived (continued from its transcript); empty for
	// the parent's turns and when the session did not record it.
	Continuation string `json:"continuation,omitempty"`
	// Trigger is what a parent turn answered: prompt or notification.
	Trigger string `json:"trigger,omitempty"`
	// Status is the turn's outcome: completed, failed, cancelled, paused, or unknown.
	Status string `json:"status"`
	// Queued is when a turn that waited for a slot (over --max-background or
	// --max-foreground) was scheduled; zero when it did not wait.
	Queued     time.Time `json:"queued,omitzero"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	QueueMS    int64     `json:"queue_ms"`
	DurationMS int64     `json:"duration_ms"`
	ModelCalls int       `json:"model_calls"`
	Usage      llm.Usage `json:"usage"`
	CostUSD    float64   `json:"cost_usd"`
	// Models are the models that answered, in order of first use.
	Models    []string   `json:"models,omitempty"`
	ToolCalls []ToolCall `json:"tool_calls"`
	// Summary is the turn's final text (cut).
	Summary string `json:"summary,omitempty"`
	// Notified is when the parent received this turn's notification (a background
	// task's turn); zero when it did not, or not yet.
	Notified time.Time `json:"notified,omitzero"`
	// Messages are the turn's conversation: the instruction, the replies, the tool
	// results, each text cut (Limits).
	Messages []Message `json:"messages"`
}

// ToolCall is one tool call of a turn.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Start and DurationMS are when the call ran. Estimated: the session did not record
	// it, and the duration is the whole tool round's (from the reply that made the call to
	// its results).
	Start      time.Time `json:"start,omitzero"`
	DurationMS int64     `json:"duration_ms"`
	Estimated  bool      `json:"estimated,omitempty"`
	IsError    bool      `json:"is_error"`
	// Answered: the call has a result in the transcript.
	Answered bool `json:"answered"`
}

// Message is one message of a conversation.
type Message struct {
	Time   time.Time `json:"ts"`
	Role   string    `json:"role"`
	Blocks []Block   `json:"blocks"`
	// More counts the blocks left out (a message holds at most Limits.Blocks).
	More int `json:"more,omitempty"`
}

// Block is one content block of a message, its text cut to Limits: text (Text),
// tool_use (ID, Name, Input), tool_result (ID, Content, IsError), or another kind
// (Type only: an image or document is not drawn).
type Block struct {
	Type    string `json:"type"`
	Text    string `json:"text,omitempty"`
	ID      string `json:"id,omitempty"`
	Name    string `json:"name,omitempty"`
	Input   string `json:"input,omitempty"`
	Content string `json:"content,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	// Cut: the text was longer and was cut.
	Cut bool `json:"cut,omitempty"`
}

// Agent is one row of the agents table.
type Agent struct {
	TaskID       string `json:"task_id"`
	SubagentType string `json:"subagent_type"`
	Description  string `json:"description"`
	Status       string `json:"status"`
	Turns        int    `json:"turns"`
	Backgrounded bool   `json:"backgrounded"`
	// Continuable says whether send_message could continue the agent after --resume;
	// BlockedReason says why not.
	Continuable   bool      `json:"continuable"`
	BlockedReason string    `json:"blocked_reason,omitempty"`
	Usage         llm.Usage `json:"usage"`
	CostUSD       float64   `json:"cost_usd"`
	ToolCalls     int       `json:"tool_calls"`
	CreatedAt     time.Time `json:"created_at"`
	EndedAt       time.Time `json:"ended_at,omitzero"`
}

// Notification is one task notification the parent received.
type Notification struct {
	TaskID string    `json:"task_id"`
	Turn   int       `json:"turn"`
	Status string    `json:"status"`
	Time   time.Time `json:"ts"`
	// ParentTurn is the parent turn that read it (its Turn.N).
	ParentTurn int `json:"parent_turn"`
}

// Limits are the lengths (in characters) the report cuts text to.
type Limits struct {
	Text   int `json:"text"`   // a text block
	Tool   int `json:"tool"`   // a tool call's input, a tool result
	Blocks int `json:"blocks"` // the blocks of one message
}

// DefaultLimits are the limits of Options left zero.
func DefaultLimits() Limits { return Limits{Text: 2000, Tool: 400, Blocks: 40} }

// Options say how a session is read into a Report.
type Options struct {
	// Prices turn each model call's usage into a cost (the zero Table prices nothing).
	Prices price.Table
	// Redact is applied to every text taken from the session before it is cut (nil:
	// none): the secrets a run here would redact.
	Redact func(string) string
	// Limits cut long text (zero fields: DefaultLimits).
	Limits Limits
	// Now is the clock of GeneratedAt (nil: time.Now); Generator names the stoke version.
	Now       func() time.Time
	Generator string
}
