package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/streamjson"
)

// client is what the session's notifications need of the connection.
type client interface {
	// SessionUpdate sends one session/update notification; safe for concurrent use.
	SessionUpdate(ctx context.Context, n sdk.SessionNotification) error
	// Done is closed once the client has gone (it closed stoke's stdin).
	Done() <-chan struct{}
}

// updates turns a session's events into session/update notifications: it is the
// session's headless.ModelSink. The parent's text streams as agent_message_chunk as the
// model writes it, a retried model call as an agent_thought_chunk; each parent tool call
// is a tool_call (kind, title, locations, a diff for edits), its result a
// tool_call_update (completed or failed, with the output); each turn of a background
// agent is a tool_call of its own, opened by its task_started (its continuation said) and
// completed or failed by its task_notification, whenever that comes. Safe for concurrent
// use: events come from the loop and from the agents' turns. It is the session's
// agents.Lifecycle too: a turn's completion is sent once its notification waits for the
// parent, so that a prompt the client sends on seeing it reads it first.
type updates struct {
	conn     client
	id       sdk.SessionId
	cwd      string
	finished func(*streamjson.Result)

	mu sync.Mutex
	// streamed: the parent's model call under way has streamed its text.
	streamed bool
	// stop is the stop reason of the parent's last reply.
	stop string
	// calls are the parent's tool calls by id, for their results.
	calls map[string]llm.Block
	// settling are the task_notification events of the turns not yet settled, by turn
	// call: each is sent once its notification waits for the parent (TurnSettled).
	settling map[sdk.ToolCallId]*streamjson.TaskNotification
	// settled are the turns TurnSettled saw before their task_notification event (a
	// notification the parent read at once, in the turn running): the event completes
	// the call as it comes.
	settled map[sdk.ToolCallId]bool
}

func newUpdates(conn client, id sdk.SessionId, cwd string, finished func(*streamjson.Result)) *updates {
	return &updates{conn: conn, id: id, cwd: cwd, finished: finished, calls: map[string]llm.Block{},
		settling: map[sdk.ToolCallId]*streamjson.TaskNotification{}, settled: map[sdk.ToolCallId]bool{}}
}

// send sends one update; once the client has gone, nothing is written (the sessions
// still finish: their background agents, their state).
func (u *updates) send(up sdk.SessionUpdate) {
	select {
	case <-u.conn.Done():
		return
	default:
	}
	_ = u.conn.SessionUpdate(context.Background(), sdk.SessionNotification{SessionId: u.id, Update: up})
}

// Event implements headless.Sink.
func (u *updates) Event(ev streamjson.Event) {
	switch e := ev.(type) {
	case *streamjson.Assistant:
		if e.ParentToolUseID == nil && e.TaskID == "" {
			u.reply(blocks(e.Message.Content), e.Message.StopReason)
		}
	case *streamjson.User:
		if e.ParentToolUseID == nil && e.TaskID == "" {
			u.results(blocks(e.Message.Content))
		}
	case *streamjson.TaskStarted:
		u.agentTurn(e)
	case *streamjson.TaskNotification:
		id := agentTurnID(e.TaskID, e.Turn)
		u.mu.Lock()
		early := u.settled[id]
		if early {
			delete(u.settled, id)
		} else {
			u.settling[id] = e
		}
		u.mu.Unlock()
		if early {
			u.agentSettled(e)
		}
	case *streamjson.Result:
		u.finished(e)
	}
}

// ParentModelEvent implements headless.ModelSink: the parent's text as it streams.
func (u *updates) ParentModelEvent(ev llm.Event) {
	switch ev.Kind {
	case llm.EventTextDelta:
		if ev.Text == "" {
			return
		}
		u.mu.Lock()
		u.streamed = true
		u.mu.Unlock()
		u.send(sdk.UpdateAgentMessageText(ev.Text))
	case llm.EventRetry:
		if r := ev.Retry; r != nil {
			u.send(sdk.UpdateAgentThoughtText(fmt.Sprintf("The model call failed (%v); it is made again in %s (retry %d of %d), and what it wrote so far is void.",
				r.Err, r.Delay, r.Attempt, r.MaxRetries)))
		}
	}
}

// turnStarts forgets the previous prompt's stop reason.
func (u *updates) turnStarts() {
	u.mu.Lock()
	u.stop = ""
	u.mu.Unlock()
}

// reply maps a parent reply: its text (unless it streamed) and its tool calls.
func (u *updates) reply(content []llm.Block, stop *string) {
	u.mu.Lock()
	streamed := u.streamed
	u.streamed = false
	if stop != nil {
		u.stop = *stop
	}
	for _, b := range content {
		if b.Type == llm.BlockToolUse {
			u.calls[b.ID] = b
		}
	}
	u.mu.Unlock()
	for _, b := range content {
		switch b.Type {
		case llm.BlockText:
			if !streamed && b.Text != "" {
				u.send(sdk.UpdateAgentMessageText(b.Text))
			}
		case llm.BlockToolUse:
			u.send(sdk.SessionUpdate{ToolCall: toolCall(b, u.cwd)})
		}
	}
}

// results maps the results of the parent's tool calls.
func (u *updates) results(content []llm.Block) {
	for _, b := range content {
		if b.Type != llm.BlockToolResult {
			continue
		}
		u.mu.Lock()
		call, ok := u.calls[b.ToolUseID]
		delete(u.calls, b.ToolUseID)
		u.mu.Unlock()
		status := sdk.ToolCallStatusCompleted
		if b.IsError {
			status = sdk.ToolCallStatusFailed
		}
		up := &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(b.ToolUseID), Status: &status, RawOutput: map[string]any{"output": b.Content}}
		if !ok || !isEdit(call.Name) || b.IsError {
			up.Content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(b.Content))} // an edit keeps its diff
		}
		u.send(sdk.SessionUpdate{ToolCallUpdate: up})
	}
}

// agentTurnID is the tool call of one turn of a background agent.
func agentTurnID(taskID string, turn int) sdk.ToolCallId {
	return sdk.ToolCallId(fmt.Sprintf("%s-turn-%d", taskID, turn))
}

// agentTurn opens the tool call of an agent's turn (task_started).
func (u *updates) agentTurn(e *streamjson.TaskStarted) {
	title := fmt.Sprintf("%s (%s): turn %d, %s", e.Description, e.SubagentType, e.Turn, e.Continuation)
	u.send(sdk.SessionUpdate{ToolCall: &sdk.SessionUpdateToolCall{
		ToolCallId: agentTurnID(e.TaskID, e.Turn),
		Title:      title,
		Kind:       sdk.ToolKindThink,
		Status:     sdk.ToolCallStatusInProgress,
		RawInput: map[string]any{
			"taskId": e.TaskID, "turn": e.Turn, "continuation": e.Continuation, "background": e.IsBackgrounded,
			"description": e.Description, "subagentType": e.SubagentType, "prompt": e.Prompt, "toolUseId": e.ToolUseID,
		},
		Meta: map[string]any{"stoke": map[string]any{"taskId": e.TaskID, "turn": e.Turn, "continuation": e.Continuation}},
	}})
}

// TurnStarted implements agents.Lifecycle: nothing to do (task_started opens the call).
func (u *updates) TurnStarted(context.Context, agents.TurnInfo) string { return "" }

// TurnStopping implements agents.Lifecycle: nothing to say.
func (u *updates) TurnStopping(context.Context, agents.TurnInfo, string, bool) string { return "" }

// TurnSettled implements agents.Lifecycle: the turn's notification waits for the parent
// (a prompt sent from now on reads it first), so the turn's call is completed now, or,
// when its task_notification event has not come yet, as it comes.
func (u *updates) TurnSettled(t agents.TurnInfo, _ agents.Row) {
	id := agentTurnID(string(t.TaskID), t.Turn)
	u.mu.Lock()
	e := u.settling[id]
	delete(u.settling, id)
	if e == nil {
		u.settled[id] = true // the event comes next, and completes the call
	}
	u.mu.Unlock()
	if e != nil {
		u.agentSettled(e)
	}
}

// agentSettled completes (or fails) the tool call of an agent's turn (task_notification).
func (u *updates) agentSettled(e *streamjson.TaskNotification) {
	status := sdk.ToolCallStatusCompleted
	if e.Status != streamjson.StatusCompleted {
		status = sdk.ToolCallStatusFailed
	}
	text := e.Summary
	if e.Status != streamjson.StatusCompleted {
		text = strings.TrimSpace(fmt.Sprintf("%s (%s). %s", e.Status, e.Reason, e.Summary))
	}
	u.send(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{
		ToolCallId: agentTurnID(e.TaskID, e.Turn),
		Status:     &status,
		Content:    []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))},
		RawOutput:  map[string]any{"taskId": e.TaskID, "turn": e.Turn, "status": e.Status, "summary": e.Summary, "interrupted": e.Interrupted, "outputFile": e.OutputFile},
	}})
}

// terminal shows the client's terminal tid in the tool call callID while its command runs.
func (u *updates) terminal(callID, tid string) {
	u.mu.Lock()
	_, parent := u.calls[callID]
	u.mu.Unlock()
	if !parent {
		return // a subagent's call, which the client was not shown
	}
	u.send(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(callID),
		Content: []sdk.ToolCallContent{sdk.ToolTerminalRef(tid)}}})
}

// mode tells the client the mode in force (after session/set_mode).
func (u *updates) mode(id sdk.SessionModeId) {
	u.send(sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: id}})
}

// stopReason answers a prompt whose turn ended with r: how it ended, or the error of a
// turn that failed. cancelled: the client cancelled it (or closed the session).
func (u *updates) stopReason(r *streamjson.Result, cancelled bool) (sdk.PromptResponse, error) {
	u.mu.Lock()
	stop := u.stop
	u.mu.Unlock()
	switch {
	case r.Subtype == streamjson.ResultSuccess:
		switch stop {
		case llm.StopMaxTokens:
			return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTokens}, nil
		case string(sdk.StopReasonRefusal):
			return sdk.PromptResponse{StopReason: sdk.StopReasonRefusal}, nil
		}
		return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
	case cancelled || r.TerminalReason == streamjson.TerminalAborted:
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	case r.Subtype == streamjson.ResultErrorMaxTurns:
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTurnRequests}, nil
	}
	return sdk.PromptResponse{}, sdk.NewInternalError(map[string]any{"error": strings.Join(r.Errors, "; "), "subtype": r.Subtype})
}

// replay sends a loaded session's history: the person's prompts as user_message_chunk
// (the notifications and reminders stoke added are left out), the parent's replies and
// tool calls as they were streamed.
func (u *updates) replay(history []llm.Message) {
	for _, m := range history {
		switch m.Role {
		case llm.RoleAssistant:
			u.reply(m.Content, nil)
		case llm.RoleUser:
			for _, b := range m.Content {
				if c, ok := userChunk(b); ok {
					u.send(sdk.UpdateUserMessage(c))
				}
			}
			u.results(m.Content)
		}
	}
	u.mu.Lock()
	u.stop = ""
	u.mu.Unlock()
}

// blocks returns stream events' blocks in the model's vocabulary.
func blocks(bs []streamjson.Block) []llm.Block {
	out := make([]llm.Block, len(bs))
	for i, b := range bs {
		out[i] = llm.Block(b)
	}
	return out
}

// rawInput is a tool call's arguments as an object for rawInput (nil when they are not).
func rawInput(in json.RawMessage) any {
	var v map[string]any
	if json.Unmarshal(in, &v) != nil {
		return nil
	}
	return v
}
