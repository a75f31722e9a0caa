package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/structured"
	"github.com/stoke-cli/stoke/agents/tools"
)

// verdictSchema asks for {"verdict": "pass"|"fail"}.
func verdictSchema(t *testing.T) *structured.Schema {
	t.Helper()
	s, err := structured.Parse([]byte(`{"type":"object","properties":{"verdict":{"enum":["pass","fail"]}},"required":["verdict"]}`))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// An agent asked for a structured answer gives it through the output tool or as a JSON
// text; an invalid answer goes back to it with what is wrong, and after the allowed
// answers the turn fails. The model here answers from the request: it reads the error it
// was sent, so the test fails if the error never reaches it.
func TestStructuredOutput(t *testing.T) {
	t.Parallel()
	call := func(input string) llm.Block {
		return llm.Block{ID: "c", Name: structured.ToolName, Input: json.RawMessage(input)}
	}
	tests := []struct {
		name string
		// answer is the model's reply at its n-th call (1-based), given the last message
		// it was sent.
		answer     func(n int, last string) (text string, calls []llm.Block)
		attempts   int
		wantReason string
		wantValue  string
		wantCalls  int
	}{
		{"valid at once", func(int, string) (string, []llm.Block) {
			return "", []llm.Block{call(`{"verdict":"pass"}`)}
		}, 0, ReasonCompleted, `{"verdict":"pass"}`, 1},
		{"valid after one invalid", func(n int, last string) (string, []llm.Block) {
			if n == 1 {
				return "", []llm.Block{call(`{"verdict":"maybe"}`)}
			}
			if !strings.Contains(last, "invalid arguments for StructuredOutput") || !strings.Contains(last, "verdict") {
				return "", []llm.Block{call(`{"verdict":"maybe"}`)}
			}
			return "", []llm.Block{call(`{"verdict":"fail"}`)}
		}, 0, ReasonCompleted, `{"verdict":"fail"}`, 2},
		{"a JSON text answer", func(int, string) (string, []llm.Block) {
			return "```json\n{\"verdict\": \"pass\"}\n```", nil
		}, 0, ReasonCompleted, `{"verdict":"pass"}`, 1},
		{"prose, reminded, then the tool", func(n int, last string) (string, []llm.Block) {
			if n == 1 || !strings.Contains(last, "Call the StructuredOutput tool") {
				return "It passes.", nil
			}
			return "", []llm.Block{call(`{"verdict":"pass"}`)}
		}, 0, ReasonCompleted, `{"verdict":"pass"}`, 2},
		{"the limit", func(int, string) (string, []llm.Block) {
			return "", []llm.Block{call(`{}`)}
		}, 3, ReasonOutputRetries, "", 3},
		{"the default limit", func(int, string) (string, []llm.Block) {
			return "no JSON here", nil
		}, 0, ReasonOutputRetries, "", structured.DefaultMaxAttempts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			var system string
			m := modelFunc(func(_ context.Context, req *llm.Request, yield func(llm.Event, error) bool) {
				calls++
				system = req.System
				if !hasTool(req, structured.ToolName) {
					reply(yield, "no output tool offered")
					return
				}
				var last strings.Builder
				for _, b := range req.Messages[len(req.Messages)-1].Content {
					last.WriteString(b.Text + b.Content)
				}
				text, cs := tt.answer(calls, last.String())
				reply(yield, text, cs...)
			})
			rt := New(Config{Agent: "a", System: "be brief", Model: m, Output: verdictSchema(t), OutputAttempts: tt.attempts, MaxSteps: 20,
				Tools: func() *tools.Set { return tools.NewSet(probe()) }})
			res, err := rt.Execute(t.Context(), llm.UserText("judge"))
			if err != nil || res.Reason != tt.wantReason {
				t.Fatalf("result = %+v, %v; want %s", res, err, tt.wantReason)
			}
			if string(res.Structured) != tt.wantValue {
				t.Errorf("structured = %s, want %s", res.Structured, tt.wantValue)
			}
			if tt.wantValue != "" && res.FinalText != tt.wantValue {
				t.Errorf("final text = %q, want the answer's JSON", res.FinalText)
			}
			if calls != tt.wantCalls {
				t.Errorf("%d model calls, want %d", calls, tt.wantCalls)
			}
			var ae *structured.AttemptsError
			if tt.wantReason == ReasonOutputRetries && (!errors.As(res.Err, &ae) || ae.Attempts != tt.wantCalls) {
				t.Errorf("err = %v, want an AttemptsError of %d attempts", res.Err, tt.wantCalls)
			}
			if !strings.HasPrefix(system, "be brief") || !strings.Contains(system, structured.Instruction) {
				t.Errorf("system prompt %q lacks the instruction", system)
			}
		})
	}
}

func hasTool(req *llm.Request, name string) bool {
	for _, s := range req.Tools {
		if s.Name == name {
			return true
		}
	}
	return false
}
