package scripted

import (
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

// A recorded reply (a cassette's rule, agents/llm/cassette) keeps its tool-call ids and
// stop reason, and the cassette's own keys are accepted and ignored.
func TestRecordedReplyKeepsIDsAndStopReason(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, `
name: recorded
cassette: {version: 1, seed: "00", anything: [1, 2]}
rules:
  - agent: parent
    when: {step: 1}
    once: true
    call: {index: 1, fingerprint: "sha256:00", messages: [{user: [text 00]}]}
    reply:
      literal: true
      text: "cut {{ short"
      tool_calls: [{id: toolu_01ABC, name: read_file, input: {file_path: "{{ x }}"}}]
      stop_reason: max_tokens
`))
	r := mustGenerate(t, m, &llm.Request{Agent: "parent", Messages: []llm.Message{llm.UserText("hi")}})
	if r.text != "cut {{ short" || len(r.calls) != 1 || r.calls[0].ID != "toolu_01ABC" || string(r.calls[0].Input) != `{"file_path":"{{ x }}"}` {
		t.Errorf("reply = %+v", r)
	}
	if r.done.StopReason != llm.StopMaxTokens {
		t.Errorf("stop reason %q, want the recorded max_tokens", r.done.StopReason)
	}
}
