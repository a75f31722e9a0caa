package anthropic

import (
	"encoding/json"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/llm"
)

type obj = map[string]any

// ev decodes one stream event as the SDK does.
func ev(t *testing.T, data obj) sdk.MessageStreamEventUnion {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	var out sdk.MessageStreamEventUnion
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func messageStart(model string, input, cacheWrite, cacheRead int) obj {
	return obj{"type": "message_start", "message": obj{
		"id": "msg_01", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": obj{"input_tokens": input, "cache_creation_input_tokens": cacheWrite, "cache_read_input_tokens": cacheRead, "output_tokens": 1},
	}}
}

func textStart(i int, text string) obj {
	return obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "text", "text": text}}
}

func textDelta(i int, s string) obj {
	return obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "text_delta", "text": s}}
}

func toolStart(i int, id, name string, input obj) obj {
	return obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "tool_use", "id": id, "name": name, "input": input}}
}

func jsonDelta(i int, s string) obj {
	return obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "input_json_delta", "partial_json": s}}
}

func blockStop(i int) obj { return obj{"type": "content_block_stop", "index": i} }

func messageDelta(stop string, usage obj) obj {
	return obj{"type": "message_delta", "delta": obj{"stop_reason": stop, "stop_sequence": nil}, "usage": usage}
}

var (
	ping        = obj{"type": "ping"}
	messageStop = obj{"type": "message_stop"}
)

// replay folds events into a turn the way Generate does and returns what it yields.
func replay(t *testing.T, requested string, events ...obj) []llm.Event {
	t.Helper()
	tr := turn{model: requested, blocks: map[int64]*block{}}
	var out []llm.Event
	for _, e := range events {
		if got, ok := tr.add(ev(t, e)); ok {
			out = append(out, got)
		}
	}
	if !tr.stopped {
		t.Fatal("no message_stop")
	}
	return append(out, tr.done())
}

// TestTurn covers what servers send that the mock does not: pings, text in
// content_block_start, interleaved tool blocks, input that is not JSON or comes whole
// in content_block_start, cumulative input counts in message_delta, stop reasons
// passed through, and no model name.
func TestTurn(t *testing.T) {
	t.Parallel()
	done := func(stop, model string, u llm.Usage) llm.Event {
		return llm.Event{Kind: llm.EventDone, StopReason: stop, Usage: u, MessageID: "msg_01", Model: model}
	}
	call := func(id, name, input string) llm.Event {
		return llm.Event{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(input)}}
	}
	tests := []struct {
		name   string
		events []obj
		want   []llm.Event
	}{
		{
			name: "pings, and text in the block start",
			events: []obj{messageStart("claude-served", 12, 0, 0), ping, textStart(0, "He"), ping, textDelta(0, "llo"), blockStop(0),
				messageDelta("end_turn", obj{"output_tokens": 3}), messageStop},
			want: []llm.Event{{Kind: llm.EventTextDelta, Text: "He"}, {Kind: llm.EventTextDelta, Text: "llo"},
				done(llm.StopEndTurn, "claude-served", llm.Usage{InputTokens: 12, OutputTokens: 3})},
		},
		{
			name: "interleaved tool blocks, input not JSON, whole input in the start",
			events: []obj{
				messageStart("claude-served", 5, 0, 0),
				toolStart(0, "toolu_x", "shell", obj{}), toolStart(1, "toolu_y", "glob", obj{}), toolStart(2, "toolu_z", "read_file", obj{"file_path": "a.go"}),
				jsonDelta(1, `{"pattern":"*"}`), jsonDelta(0, `{"command": "ls`), blockStop(1), blockStop(0), blockStop(2),
				messageDelta("tool_use", obj{"output_tokens": 9}), messageStop,
			},
			want: []llm.Event{
				call("toolu_y", "glob", `{"pattern":"*"}`),
				call("toolu_x", "shell", `{"_raw_arguments":"{\"command\": \"ls"}`),
				call("toolu_z", "read_file", `{"file_path":"a.go"}`),
				done(llm.StopToolUse, "claude-served", llm.Usage{InputTokens: 5, OutputTokens: 9}),
			},
		},
		{
			name:   "cache usage from message_start, output from message_delta",
			events: []obj{messageStart("claude-served", 7, 300, 1200), messageDelta("end_turn", obj{"output_tokens": 5}), messageStop},
			want:   []llm.Event{done(llm.StopEndTurn, "claude-served", llm.Usage{InputTokens: 7, CacheCreationInputTokens: 300, CacheReadInputTokens: 1200, OutputTokens: 5})},
		},
		{
			name: "cumulative input counts in message_delta win",
			events: []obj{messageStart("claude-served", 7, 300, 1200),
				messageDelta("end_turn", obj{"output_tokens": 5, "input_tokens": 9, "cache_creation_input_tokens": 310, "cache_read_input_tokens": 1200}),
				messageStop},
			want: []llm.Event{done(llm.StopEndTurn, "claude-served", llm.Usage{InputTokens: 9, CacheCreationInputTokens: 310, CacheReadInputTokens: 1200, OutputTokens: 5})},
		},
		{
			name:   "max_tokens",
			events: []obj{messageStart("claude-served", 3, 0, 0), messageDelta("max_tokens", obj{"output_tokens": 8192}), messageStop},
			want:   []llm.Event{done(llm.StopMaxTokens, "claude-served", llm.Usage{InputTokens: 3, OutputTokens: 8192})},
		},
		{
			name:   "other stop reason passes through",
			events: []obj{messageStart("claude-served", 3, 0, 0), messageDelta("refusal", obj{"output_tokens": 1}), messageStop},
			want:   []llm.Event{done("refusal", "claude-served", llm.Usage{InputTokens: 3, OutputTokens: 1})},
		},
		{
			name:   "no model in message_start: the requested one",
			events: []obj{messageStart("", 1, 0, 0), messageDelta("end_turn", obj{"output_tokens": 1}), messageStop},
			want:   []llm.Event{done(llm.StopEndTurn, "claude-requested", llm.Usage{InputTokens: 1, OutputTokens: 1})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, replay(t, "claude-requested", tt.events...)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
