package scripted

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// mustParse parses an inline scenario or fails the test.
func mustParse(t *testing.T, src string) *Scenario {
	t.Helper()
	s, err := Parse("inline.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

// collect runs one Generate to its end.
func collect(ctx context.Context, m *Model, req *llm.Request) ([]llm.Event, error) {
	return llmtest.Collect(ctx, m, req)
}

// reply is the concatenated text and the tool calls of a finished call.
type reply struct {
	text  string
	calls []llm.Block
	done  llm.Event
}

func mustGenerate(t *testing.T, m *Model, req *llm.Request) reply {
	t.Helper()
	evs, err := collect(t.Context(), m, req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	var r reply
	for _, ev := range evs {
		switch ev.Kind {
		case llm.EventTextDelta:
			r.text += ev.Text
		case llm.EventToolCall:
			r.calls = append(r.calls, ev.ToolCall)
		case llm.EventDone:
			r.done = ev
		}
	}
	if last := evs[len(evs)-1]; last.Kind != llm.EventDone {
		t.Fatalf("last event kind = %v, want EventDone", last.Kind)
	}
	return r
}

// conversation is a parent history used by several tests: step 3, the last user
// message is plain text, the last tool result is from read_file.
func conversation() *llm.Request {
	return &llm.Request{
		Agent:  "parent",
		System: "You are the parent. SYS-MARK",
		Tools:  []llm.ToolSpec{{Name: "task"}, {Name: "read_file"}},
		Messages: []llm.Message{
			llm.UserText("Remember NONCE-AAA111 please"),
			{Role: llm.RoleAssistant, Content: []llm.Block{
				llm.TextBlock("ok"),
				{Type: llm.BlockToolUse, ID: "c1", Name: "read_file", Input: []byte(`{"file_path":"a.txt"}`)},
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolUseID: "c1", Content: "contents of a.txt: RESULT-1"},
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done, NONCE-BBB222 too")}},
			llm.UserText("second question"),
		},
	}
}
