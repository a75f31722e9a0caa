package scripted

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/llm"
)

// nonceScenario is the two-phase hot-continuation flow the e2e tests use: the parent
// launches a background agent holding a nonce, continues it with send_message after the
// first notification, and quotes the nonce from the second notification's summary.
const nonceScenario = `
name: nonce
rules:
  - agent: parent
    when: {step: 1, last_user_matches: 'NONCE-[A-Z0-9]+'}
    reply:
      text: "Launching a keeper."
      tool_calls:
        - name: task
          input:
            description: keep nonce
            prompt: "Remember {{ match ` + "`NONCE-[A-Z0-9]+`" + ` }}"
            subagent_type: general-purpose
            run_in_background: true
  # Second notification (two in the history): answer from its summary.
  - agent: parent
    when:
      last_user_contains: "<task-notification>"
      history_matches: '(?s)(<task-notification>.*){2}'
    reply:
      text: 'The nonce was {{ lastMatch ` + "`<summary>\\s*(NONCE-[A-Z0-9]+)`" + ` }}.'
  # First notification, turn 1 completed: continue the same task.
  - agent: parent
    when:
      last_user_contains: "<task-notification>"
      last_user_matches: '<status>completed</status>'
    reply:
      tool_calls:
        - name: send_message
          input:
            task_id: "{{ lastMatch ` + "`<task-id>([^<]+)</task-id>`" + ` }}"
            message: "What was the nonce?"
  - agent: parent
    reply: {text: "Waiting for the keeper."}
  - agent: general-purpose
    when: {last_user_contains: "What was the nonce"}
    reply: {text: "{{ match ` + "`NONCE-[A-Z0-9]+`" + ` }}"}
  - agent: general-purpose
    when: {step: 1}
    reply: {text: "Stored."}
`

func notification(taskID, summary string) llm.Message {
	return llm.UserText("<task-notification><task-id>" + taskID + "</task-id><tool-use-id>call_x</tool-use-id>" +
		"<status>completed</status><summary>" + summary + "</summary><result>" + summary + "</result>" +
		"<usage>total_tokens: 9</usage></task-notification>")
}

func assistant(r reply) llm.Message {
	m := llm.Message{Role: llm.RoleAssistant}
	if r.text != "" {
		m.Content = append(m.Content, llm.TextBlock(r.text))
	}
	return llm.Message{Role: m.Role, Content: append(m.Content, r.calls...)}
}

func toolResult(call llm.Block, content string) llm.Message {
	return llm.Message{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolResult, ToolUseID: call.ID, Content: content}}}
}

func inputOf(t *testing.T, call llm.Block) map[string]any {
	t.Helper()
	var in map[string]any
	if err := json.Unmarshal(call.Input, &in); err != nil {
		t.Fatalf("tool input %s: %v", call.Input, err)
	}
	return in
}

func TestNonceFlow(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, nonceScenario))
	tools := []llm.ToolSpec{{Name: "task"}, {Name: "send_message"}}
	parent := &llm.Request{Agent: "parent", Tools: tools, Messages: []llm.Message{llm.UserText("Keep NONCE-7QX42 safe in a background agent.")}}

	// Parent step 1: launch the keeper with the nonce from the prompt.
	r := mustGenerate(t, m, parent)
	if len(r.calls) != 1 || r.calls[0].Name != "task" {
		t.Fatalf("parent step 1 calls = %+v, want one task call", r.calls)
	}
	want := map[string]any{"description": "keep nonce", "prompt": "Remember NONCE-7QX42", "subagent_type": "general-purpose", "run_in_background": true}
	if diff := cmp.Diff(want, inputOf(t, r.calls[0])); diff != "" {
		t.Fatalf("task input (-want +got):\n%s", diff)
	}
	parent.Messages = append(parent.Messages, assistant(r), toolResult(r.calls[0], "task_id: t-abc\nRunning in the background."))

	// Parent step 2: waits.
	r = mustGenerate(t, m, parent)
	if r.text != "Waiting for the keeper." || len(r.calls) != 0 {
		t.Fatalf("parent step 2 = %q %+v", r.text, r.calls)
	}
	parent.Messages = append(parent.Messages, assistant(r))

	// Subagent turn 1.
	sub := &llm.Request{Agent: "general-purpose", Messages: []llm.Message{llm.UserText("Remember NONCE-7QX42")}}
	r = mustGenerate(t, m, sub)
	if r.text != "Stored." {
		t.Fatalf("subagent turn 1 = %q, want Stored.", r.text)
	}
	sub.Messages = append(sub.Messages, assistant(r))

	// First notification: continue the same task id.
	parent.Messages = append(parent.Messages, notification("t-abc", "Stored."))
	r = mustGenerate(t, m, parent)
	if len(r.calls) != 1 || r.calls[0].Name != "send_message" {
		t.Fatalf("after notification 1 calls = %+v, want one send_message", r.calls)
	}
	if diff := cmp.Diff(map[string]any{"task_id": "t-abc", "message": "What was the nonce?"}, inputOf(t, r.calls[0])); diff != "" {
		t.Fatalf("send_message input (-want +got):\n%s", diff)
	}
	parent.Messages = append(parent.Messages, assistant(r), toolResult(r.calls[0], "continued t-abc on its resident runtime"))
	r = mustGenerate(t, m, parent)
	if r.text != "Waiting for the keeper." {
		t.Fatalf("after send_message = %q", r.text)
	}
	parent.Messages = append(parent.Messages, assistant(r))

	// Subagent turn 2: the nonce comes from its own history only.
	cold := &llm.Request{Agent: "general-purpose", Messages: []llm.Message{llm.UserText("What was the nonce?")}}
	if r := mustGenerate(t, m, cold); r.text != "" {
		t.Fatalf("without its history the subagent answered %q, want nothing", r.text)
	}
	sub.Messages = append(sub.Messages, llm.UserText("What was the nonce?"))
	r = mustGenerate(t, m, sub)
	if r.text != "NONCE-7QX42" {
		t.Fatalf("subagent turn 2 = %q, want the nonce", r.text)
	}

	// Second notification: the parent quotes the summary, not its own prompt.
	withNonce := append(parent.Messages[:len(parent.Messages):len(parent.Messages)], notification("t-abc", r.text))
	if got := mustGenerate(t, m, &llm.Request{Agent: "parent", Tools: tools, Messages: withNonce}).text; got != "The nonce was NONCE-7QX42." {
		t.Errorf("final answer = %q", got)
	}
	lost := append(parent.Messages[:len(parent.Messages):len(parent.Messages)], notification("t-abc", "I forgot."))
	if got := mustGenerate(t, m, &llm.Request{Agent: "parent", Tools: tools, Messages: lost}).text; got != "The nonce was ." {
		t.Errorf("final answer from a summary without the nonce = %q, want it empty", got)
	}
	if u := m.Unused(); u != nil {
		t.Errorf("rules never used: %v", u)
	}
}
