package agents

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// Names of the caller-owned task tools. Subagents never get these.
const (
	ToolTask        = "task"
	ToolSendMessage = "send_message"
	ToolTaskStop    = "task_stop"
	ToolListAgents  = "list_agents"
)

// TaskTools returns task, send_message, task_stop and list_agents over reg.
func TaskTools(reg *Registry) []tools.Tool {
	return []tools.Tool{taskTool{reg}, sendMessageTool{reg}, taskStopTool{reg}, listAgentsTool{reg}}
}

// TaskToolOrder is the ordered-tools policy (runtime.Config.Order) of a runtime that
// holds the task tools: the launches and continuations of one reply (task and
// send_message calls) take their places in the queues in the order the model wrote them
// (runtime.Admit). The other tools are unordered.
func TaskToolOrder(tool string) runtime.CallOrder {
	if tool == ToolTask || tool == ToolSendMessage {
		return runtime.Admitted
	}
	return runtime.Unordered
}

// The descriptions of the task tools, as the model reads them.
var (
	//go:embed task.md
	taskDescription string
	//go:embed task_background.md
	taskBackgroundDescription string // added when background agents are on
	//go:embed send_message.md
	sendMessageDescription string
	//go:embed task_stop.md
	taskStopDescription string
	//go:embed list_agents.md
	listAgentsDescription string
)

type taskTool struct{ reg *Registry }

// taskInput is task's arguments: a launch (description and prompt) or a collect
// (task_id). Every field is optional, and the schema asks for one of the two sets.
type taskInput struct {
	Description     string `json:"description,omitempty" jsonschema:"A short (3-5 word) description of the task."`
	Prompt          string `json:"prompt,omitempty" jsonschema:"The task for the agent to perform."`
	RunInBackground *bool  `json:"run_in_background,omitempty" jsonschema:"Launch: run the agent in the background and return at once; its result arrives later as a <task-notification> message. Collect: report 'still running' at once instead of waiting."`
	SubagentType    string `json:"subagent_type,omitempty"`
	TaskID          string `json:"task_id,omitempty" jsonschema:"Collect: the task_id of a task launched earlier. Returns its latest recorded result; it never prompts the agent again."`
}

func (t taskTool) Spec() llm.ToolSpec {
	bg := t.reg.BackgroundEnabled()
	desc := tools.Description(taskDescription)
	if bg {
		desc += "\n" + tools.Description(taskBackgroundDescription)
	}
	schema := tools.InputSchema[taskInput](func(s *jsonschema.Schema) {
		openObject(s)
		s.Properties["subagent_type"].Description = "The type of agent: one of " + strings.Join(t.reg.Catalog().Names(), ", ") + ". Default " + catalog.GeneralPurpose + "."
		if !bg {
			delete(s.Properties, "run_in_background")
		}
		s.AnyOf = []*jsonschema.Schema{{Required: []string{"task_id"}}, {Required: []string{"description", "prompt"}}}
	})
	return llm.ToolSpec{Name: ToolTask, Description: desc, Parameters: schema}
}

// openObject lets the task tools' arguments hold properties their schemas do not name, as
// they always have: a model that adds one is not refused.
func openObject(s *jsonschema.Schema) { s.AdditionalProperties = nil }

func (t taskTool) Run(ctx context.Context, call tools.Call) tools.Result {
	var in taskInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tools.Errorf("invalid arguments for task: %v", err)
	}
	if in.RunInBackground != nil && !t.reg.BackgroundEnabled() {
		return tools.Errorf("%v", ErrBackgroundOff)
	}
	background := in.RunInBackground != nil && *in.RunInBackground
	if in.TaskID != "" {
		runtime.SkipAdmission(ctx) // a collect takes no place in a queue
		return t.collect(ctx, in.TaskID, background)
	}
	row, err := t.reg.Launch(ctx, LaunchRequest{
		Description: in.Description, Prompt: in.Prompt, SubagentType: in.SubagentType,
		Background: background, ToolUseID: call.ID,
	})
	switch {
	case errors.Is(err, ErrNoSlot):
		return tools.Errorf("%v. Collect one first with task(task_id), or wait for its <task-notification>, then launch again.", err)
	case err != nil && row.TaskID == "":
		return tools.Errorf("%v", err)
	case err != nil:
		// The task was recorded, then failed before its first turn ran.
		return tools.Errorf("task_id: %s\nthe task failed to start: %v", row.TaskID, err)
	}
	switch {
	case background && row.Position > 0:
		return tools.Result{Content: fmt.Sprintf("task_id: %s\nqueued: position %d in the queue; it starts when a background slot frees. Its result arrives later as a <task-notification> message; do not poll it or launch it again.", row.TaskID, row.Position)}
	case background:
		return tools.Result{Content: fmt.Sprintf("task_id: %s\nThe agent is running in the background. Its result arrives later as a <task-notification> message; do not poll it or launch it again. After it finishes, continue it with send_message and this task_id.", row.TaskID)}
	}
	return formatOutcome(row.Row)
}

func (t taskTool) collect(ctx context.Context, s string, noWait bool) tools.Result {
	id, err := ParseTaskID(s)
	if err != nil {
		return tools.Errorf("%v", err)
	}
	row, err := t.reg.Collect(ctx, id, noWait)
	if err != nil && row.TaskID == "" {
		return tools.Errorf("%v", err)
	}
	if row.Status.Active() {
		if err != nil {
			return tools.Errorf("task_id: %s\n%v; the task is still %s.", id, err, row.Status)
		}
		return tools.Result{Content: fmt.Sprintf("task_id: %s\nstill %s (turn %d). Its result arrives as a <task-notification>; collect it later or wait.", id, row.Status, row.Turn)}
	}
	return formatOutcome(row)
}

// formatOutcome renders a settled row's latest turn for the parent model.
func formatOutcome(row Row) tools.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "task_id: %s\n", row.TaskID)
	fmt.Fprintf(&b, "status: %s (turn %d)\n", row.Status, row.Turn)
	o := row.LastOutcome
	switch {
	case row.Interrupted:
		fmt.Fprintf(&b, "interrupted: true\n%s\n", interruptedNote(row))
	case o.Error != "":
		fmt.Fprintf(&b, "error: %s\n", o.Error)
		if row.blocked() == "" {
			b.WriteString("It keeps its history: send_message continues it with a new instruction.\n")
		}
	}
	fmt.Fprintf(&b, "<task_result>\n%s\n</task_result>", o.Text)
	if o.Worktree != "" {
		fmt.Fprintf(&b, "\n%s", o.Worktree)
	}
	if o.Undelivered > 0 {
		fmt.Fprintf(&b, "\n%d message(s) sent with send_message were not delivered: the turn ended first.", o.Undelivered)
	}
	return tools.Result{Content: b.String(), IsError: row.Status == StatusFailed}
}

type sendMessageTool struct{ reg *Registry }

// sendMessageInput is send_message's arguments.
type sendMessageInput struct {
	TaskID  string `json:"task_id" jsonschema:"The task_id of the agent."`
	Message string `json:"message" jsonschema:"The message or next instruction."`
}

func (sendMessageTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        ToolSendMessage,
		Description: tools.Description(sendMessageDescription),
		Parameters:  tools.InputSchema[sendMessageInput](openObject),
	}
}

func (t sendMessageTool) Run(ctx context.Context, call tools.Call) tools.Result {
	var in sendMessageInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tools.Errorf("invalid arguments for send_message: %v", err)
	}
	id, err := ParseTaskID(in.TaskID)
	if err != nil {
		return tools.Errorf("%v", err)
	}
	res, err := t.reg.Send(ctx, id, in.Message, call.ID)
	if err != nil {
		return tools.Errorf("task_id: %s\n%v", id, err)
	}
	wait := ""
	if res.Pending && res.Continuation != streamjson.ContinuationFresh {
		wait = " (the instruction it was queued with runs first, then your message)"
	}
	if res.Position > 0 {
		wait += fmt.Sprintf("; it waits for a background slot (position %d in the queue)", res.Position)
	}
	switch res.Continuation {
	case streamjson.ContinuationQueued:
		if res.Row.Status == StatusQueued {
			return tools.Result{Content: fmt.Sprintf("task_id: %s\nqueued: the agent waits for a slot; it reads your message once it runs, between its tool rounds.", id)}
		}
		return tools.Result{Content: fmt.Sprintf("task_id: %s\nqueued: the agent is running; it reads your message between its tool rounds.", id)}
	case streamjson.ContinuationResident:
		return tools.Result{Content: fmt.Sprintf("task_id: %s\ncontinued on its resident runtime as turn %d%s; the reply arrives as a <task-notification>.", id, res.Row.Turn, wait)}
	case streamjson.ContinuationFresh:
		return tools.Result{Content: fmt.Sprintf("task_id: %s\nstarted: it had been queued when a run ended and never ran; it runs now as turn %d, its prompt first, then your message%s; the reply arrives as a <task-notification>.", id, res.Row.Turn, wait)}
	default:
		return tools.Result{Content: fmt.Sprintf("task_id: %s\nrevived from its transcript as turn %d%s; the reply arrives as a <task-notification>.", id, res.Row.Turn, wait)}
	}
}

type taskStopTool struct{ reg *Registry }

// taskStopInput is task_stop's arguments.
type taskStopInput struct {
	TaskID string `json:"task_id"`
}

func (taskStopTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        ToolTaskStop,
		Description: tools.Description(taskStopDescription),
		Parameters:  tools.InputSchema[taskStopInput](openObject),
	}
}

func (t taskStopTool) Run(_ context.Context, call tools.Call) tools.Result {
	var in taskStopInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tools.Errorf("invalid arguments for task_stop: %v", err)
	}
	id, err := ParseTaskID(in.TaskID)
	if err != nil {
		return tools.Errorf("%v", err)
	}
	if _, err := t.reg.Stop(id); err != nil {
		return tools.Errorf("task_id: %s\n%v", id, err)
	}
	return tools.Result{Content: fmt.Sprintf("task_id: %s\nstop requested; its partial findings arrive with its notification.", id)}
}

type listAgentsTool struct{ reg *Registry }

// listAgentsInput is list_agents' arguments: none.
type listAgentsInput struct{}

func (listAgentsTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        ToolListAgents,
		Description: tools.Description(listAgentsDescription),
		Parameters: tools.InputSchema[listAgentsInput](func(s *jsonschema.Schema) {
			openObject(s)
			s.Properties = map[string]*jsonschema.Schema{} // "properties":{}, as endpoints expect of an object
		}),
	}
}

// AgentListing is one entry of list_agents.
type AgentListing struct {
	TaskID        TaskID `json:"task_id"`
	Description   string `json:"description"`
	SubagentType  string `json:"subagent_type"`
	Status        Status `json:"status"`
	Turn          int    `json:"turn"`
	Continuable   bool   `json:"continuable"`
	BlockedReason string `json:"blocked_reason"`
}

func (t listAgentsTool) Run(context.Context, tools.Call) tools.Result {
	rows := t.reg.List()
	out := struct {
		Agents []AgentListing `json:"agents"`
	}{Agents: make([]AgentListing, 0, len(rows))}
	for _, r := range rows {
		reason := r.blocked()
		out.Agents = append(out.Agents, AgentListing{
			TaskID: r.TaskID, Description: r.Description, SubagentType: r.SubagentType,
			Status: r.Status, Turn: r.Turn, Continuable: reason == "", BlockedReason: reason,
		})
	}
	raw, _ := json.Marshal(out)
	return tools.Result{Content: string(raw)}
}
