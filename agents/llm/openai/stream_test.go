package openai

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/openai/openai-go/v3"

	"github.com/stoke-cli/stoke/agents/llm"
)

// chunk is one chat.completion.chunk as JSON. delta may be nil (a usage chunk).
func chunk(t *testing.T, model string, delta map[string]any, finish string, usage map[string]any) sdk.ChatCompletionChunk {
	t.Helper()
	c := map[string]any{"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1, "model": model, "choices": []any{}}
	if delta != nil {
		choice := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
		if finish != "" {
			choice["finish_reason"] = finish
		}
		c["choices"] = []any{choice}
	}
	if usage != nil {
		c["usage"] = usage
	}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var out sdk.ChatCompletionChunk
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// toolDelta is a tool call fragment; id and name are left out when empty.
func toolDelta(index int, id, name, args string) map[string]any {
	call := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" {
		call["id"], call["type"] = id, "function"
	}
	if name != "" {
		call["function"].(map[string]any)["name"] = name
	}
	return map[string]any{"tool_calls": []any{call}}
}

// replay folds chunks into a turn the way Generate does and returns the events it
// would yield.
func replay(requested string, chunks []sdk.ChatCompletionChunk) []llm.Event {
	t := turn{model: requested, calls: map[int64]*toolCall{}}
	var out []llm.Event
	for _, c := range chunks {
		if text, _ := t.add(c); text != "" {
			out = append(out, llm.Event{Kind: llm.EventTextDelta, Text: text})
		}
	}
	for _, b := range t.toolUses() {
		out = append(out, llm.Event{Kind: llm.EventToolCall, ToolCall: b})
	}
	return append(out, t.done())
}

// TestTurn covers what servers send that the mock does not: calls without ids,
// arguments that are not JSON, finish reasons other than stop and tool_calls, refusals,
// other choices, and chunks without a model name.
func TestTurn(t *testing.T) {
	t.Parallel()
	done := func(stop, model string) llm.Event {
		return llm.Event{Kind: llm.EventDone, StopReason: stop, MessageID: "chatcmpl-7", Model: model}
	}
	tests := []struct {
		name   string
		chunks func(t *testing.T) []sdk.ChatCompletionChunk
		want   []llm.Event
	}{
		{
			name: "tool calls with finish stop, empty and invalid arguments, missing id",
			chunks: func(t *testing.T) []sdk.ChatCompletionChunk {
				return []sdk.ChatCompletionChunk{
					chunk(t, "m-served", toolDelta(1, "", "shell", `{"command": "ls`), "", nil),
					chunk(t, "m-served", toolDelta(0, "call_x", "list_agents", ""), "", nil),
					chunk(t, "m-served", toolDelta(0, "call_x", "list_agents", ""), "", nil), // some servers repeat id and name
					chunk(t, "m-served", map[string]any{}, "stop", nil),
				}
			},
			want: []llm.Event{
				{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "call_x", Name: "list_agents",
					Input: json.RawMessage(`{}`)}},
				{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "call_chatcmpl-7_1", Name: "shell",
					Input: json.RawMessage(`{"_raw_arguments":"{\"command\": \"ls"}`)}},
				done(llm.StopToolUse, "m-served"),
			},
		},
		{
			name: "length",
			chunks: func(t *testing.T) []sdk.ChatCompletionChunk {
				return []sdk.ChatCompletionChunk{chunk(t, "m-served", map[string]any{"content": "trunc"}, "length", nil)}
			},
			want: []llm.Event{{Kind: llm.EventTextDelta, Text: "trunc"}, done(llm.StopMaxTokens, "m-served")},
		},
		{
			name: "other finish reason passes through",
			chunks: func(t *testing.T) []sdk.ChatCompletionChunk {
				return []sdk.ChatCompletionChunk{chunk(t, "m-served", map[string]any{}, "content_filter", nil)}
			},
			want: []llm.Event{done("content_filter", "m-served")},
		},
		{
			name: "a refusal is text",
			chunks: func(t *testing.T) []sdk.ChatCompletionChunk {
				return []sdk.ChatCompletionChunk{chunk(t, "m-served", map[string]any{"refusal": "I can't."}, "stop", nil)}
			},
			want: []llm.Event{{Kind: llm.EventTextDelta, Text: "I can't."}, done(llm.StopEndTurn, "m-served")},
		},
		{
			name: "no model in the chunks: the requested one",
			chunks: func(t *testing.T) []sdk.ChatCompletionChunk {
				return []sdk.ChatCompletionChunk{chunk(t, "", map[string]any{}, "stop", nil)}
			},
			want: []llm.Event{done(llm.StopEndTurn, "m-requested")},
		},
		{
			name: "cached tokens are not input tokens",
			chunks: func(t *testing.T) []sdk.ChatCompletionChunk {
				return []sdk.ChatCompletionChunk{
					chunk(t, "m-served", map[string]any{}, "stop", nil),
					chunk(t, "m-served", nil, "", map[string]any{"prompt_tokens": 1000, "completion_tokens": 5, "total_tokens": 1005,
						"prompt_tokens_details": map[string]any{"cached_tokens": 800}}),
				}
			},
			want: []llm.Event{{Kind: llm.EventDone, StopReason: llm.StopEndTurn, MessageID: "chatcmpl-7", Model: "m-served",
				Usage: llm.Usage{InputTokens: 200, CacheReadInputTokens: 800, OutputTokens: 5}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, replay("m-requested", tt.chunks(t))); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChoicesOtherThanTheFirstAreIgnored(t *testing.T) {
	t.Parallel()
	c := chunk(t, "m", map[string]any{"content": "mine"}, "", nil)
	other := chunk(t, "m", map[string]any{"content": "not mine"}, "stop", nil)
	other.Choices[0].Index = 1
	c.Choices = append(c.Choices, other.Choices[0])
	got := replay("m", []sdk.ChatCompletionChunk{c})
	if len(got) != 2 || got[0].Text != "mine" || got[1].StopReason != "" {
		t.Errorf("events = %+v, want only choice 0's text and no finish reason", got)
	}
}
