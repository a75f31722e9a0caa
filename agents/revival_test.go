package agents

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// Cache fidelity: a revived runtime rebuilds byte-for-byte the message list the resident
// runtime had, including a tool round and a message queued (and merged) mid-turn.
func TestRevivalRebuildsResidentChat(t *testing.T) {
	t.Parallel()
	proceed := make(chan struct{})
	hooked := catalog.Definition{Name: "hooked", Prompt: "Hooks.", HasHooks: true}
	h := newHarness(t, func(_ context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		switch {
		case strings.Contains(messagesText(req.Messages), "second instruction"):
			answer(yield, "second answer")
		case req.Messages[len(req.Messages)-1].Content[0].Type == llm.BlockToolResult:
			answer(yield, "first answer")
		default:
			// Arguments as a provider may stream them: spaces, and characters that
			// json.Marshal escapes inside a RawMessage.
			answer(yield, "checking", llm.Block{ID: "call_1", Name: "slow", Input: json.RawMessage(`{"q": "a<b & c>d"}`)})
		}
	}, func(c *RegistryConfig) {
		c.Catalog = catalog.New(append(catalog.BuiltinDefinitions(), hooked)...)
		c.SubagentTools = func(catalog.Definition, string) *tools.Set {
			return tools.NewSet(tools.Func{
				ToolSpec: llm.ToolSpec{Name: "slow", Parameters: json.RawMessage(`{"type":"object"}`)},
				Fn: func(ctx context.Context, _ tools.Call) tools.Result {
					select {
					case <-proceed:
					case <-ctx.Done():
					}
					return tools.Result{Content: "tool output"}
				},
			})
		}
	})
	id := h.launch(LaunchRequest{Prompt: "first instruction", SubagentType: "hooked", Background: true}).TaskID
	if res := h.send(id, "mid-turn note"); res.Continuation != "queued" {
		t.Fatalf("send while running = %+v", res)
	}
	close(proceed)
	h.collect(id)
	resident := h.runtime(0).Chat().Messages()
	if len(resident) != 4 || len(resident[2].Content) != 2 {
		t.Fatalf("resident chat = %s", mustJSON(t, resident))
	}
	if p := h.notifications(id); len(p) != 1 {
		t.Fatalf("notifications = %+v", p)
	}

	if res := h.send(id, "second instruction"); res.Continuation != streamjson.ContinuationRevived {
		t.Fatalf("send = %+v", res)
	}
	h.collect(id)
	reqs := h.model.requests()
	revived := reqs[len(reqs)-1]
	if len(revived.Messages) != len(resident)+1 {
		t.Fatalf("revived request has %d messages, want %d", len(revived.Messages), len(resident)+1)
	}
	for i := range resident {
		got, want := mustJSON(t, revived.Messages[i]), mustJSON(t, resident[i])
		if got != want {
			t.Fatalf("message %d differs:\nrevived  %s\nresident %s", i, got, want)
		}
		// json.Marshal normalizes raw tool inputs; the bytes a provider is sent must match too.
		for j, b := range resident[i].Content {
			if r := revived.Messages[i].Content[j]; string(r.Input) != string(b.Input) {
				t.Fatalf("message %d block %d: revived input %s, resident input %s", i, j, r.Input, b.Input)
			}
		}
	}
	if revived.System != reqs[0].System || !jsonEqual(t, revived.Tools, reqs[0].Tools) {
		t.Fatal("revived request has a different system prompt or tool list")
	}
}
