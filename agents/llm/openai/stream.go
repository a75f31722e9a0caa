package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"net/http"
	"slices"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Generate streams one chat completion. Text deltas are yielded as they arrive; tool
// calls, accumulated across chunks, are yielded in index order once the stream has
// finished, followed by one EventDone. The SDK stream is closed when the sequence
// ends, including when the consumer stops ranging early.
func (m *Model) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if req == nil {
			yield(llm.Event{}, errors.New("openai: nil request"))
			return
		}
		data, model, err := body(req, m.model)
		if err != nil {
			yield(llm.Event{}, fmt.Errorf("openai: %w", err))
			return
		}
		// The body is encoded here (body), each message once per chat, and sent as it is:
		// the SDK's own body (where it sets "stream") is a placeholder the middleware
		// replaces on every attempt.
		stream := m.chat.NewStreaming(ctx, sdk.ChatCompletionNewParams{}, option.WithRequestBody("application/json", []byte("{}")),
			option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
				data.Attach(r)
				return next(r)
			}))
		defer stream.Close()

		t := turn{model: model, calls: map[int64]*toolCall{}}
		budget := llm.AnswerCap{Limit: m.maxAnswer}
		for stream.Next() {
			text, n := t.add(stream.Current())
			if !budget.Take(n) {
				yield(llm.Event{}, &llm.AnswerTooLargeError{Provider: providerName, Limit: m.maxAnswer, Setting: m.capName})
				return
			}
			if text != "" {
				if !yield(llm.Event{Kind: llm.EventTextDelta, Text: text}, nil) {
					return
				}
			}
		}
		if err := m.streamError(ctx, stream.Err(), t.finish != ""); err != nil {
			yield(llm.Event{}, err)
			return
		}
		for _, b := range t.toolUses() {
			if !yield(llm.Event{Kind: llm.EventToolCall, ToolCall: b}, nil) {
				return
			}
		}
		yield(t.done(), nil)
	}
}

// toolCall is one tool call being assembled from stream chunks.
type toolCall struct {
	id, name string
	args     []byte
}

// turn accumulates the chunks of one streamed completion (choice 0; stoke never
// asks for n > 1).
type turn struct {
	id, model, finish string
	usage             sdk.CompletionUsage
	calls             map[int64]*toolCall // by the chunk's tool call index
}

// add folds one chunk into t and returns the text it carries and the bytes of the
// answer it adds (text and tool-call arguments).
func (t *turn) add(c sdk.ChatCompletionChunk) (text string, n int) {
	if t.id == "" {
		t.id = c.ID
	}
	if c.Model != "" {
		t.model = c.Model
	}
	if c.JSON.Usage.Valid() {
		t.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue
		}
		if ch.FinishReason != "" {
			t.finish = ch.FinishReason
		}
		text += ch.Delta.Content + ch.Delta.Refusal
		for _, d := range ch.Delta.ToolCalls {
			tc, ok := t.calls[d.Index]
			if !ok {
				tc = &toolCall{}
				t.calls[d.Index] = tc
			}
			// id and name come in a call's first chunk; some servers repeat them
			// in later chunks, so they are set once and never concatenated.
			if tc.id == "" {
				tc.id = d.ID
			}
			if tc.name == "" {
				tc.name = d.Function.Name
			}
			tc.args = append(tc.args, d.Function.Arguments...)
			n += len(d.Function.Arguments)
		}
	}
	return text, n + len(text)
}

// toolUses returns the accumulated calls as tool_use blocks, in index order.
func (t *turn) toolUses() []llm.Block {
	out := make([]llm.Block, 0, len(t.calls))
	for _, idx := range slices.Sorted(maps.Keys(t.calls)) {
		tc := t.calls[idx]
		id := tc.id
		if id == "" {
			// Some local servers omit ids; the tool result must still name its call.
			id = fmt.Sprintf("call_%s_%d", t.id, idx)
		}
		out = append(out, llm.Block{Type: llm.BlockToolUse, ID: id, Name: tc.name, Input: toolInput(tc.args)})
	}
	return out
}

// toolInput makes the accumulated arguments a valid JSON value. Empty arguments
// become {}. Arguments that are not valid JSON (a model that botched its call) are
// not dropped: they become {"_raw_arguments": "<raw text>"}, which keeps transcripts
// and stream-JSON events valid and makes the tool's schema check fail with a message
// the model can act on.
func toolInput(args []byte) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage(emptyArguments)
	}
	if json.Valid(args) {
		return json.RawMessage(args)
	}
	wrapped, err := json.Marshal(map[string]string{"_raw_arguments": string(args)})
	if err != nil { // cannot happen for a map of strings
		return json.RawMessage(emptyArguments)
	}
	return wrapped
}

// done is the final event: stop reason, usage and ids.
func (t *turn) done() llm.Event {
	prompt := t.usage.PromptTokens
	cached := t.usage.PromptTokensDetails.CachedTokens
	return llm.Event{
		Kind:       llm.EventDone,
		StopReason: t.stopReason(),
		Usage: llm.Usage{
			InputTokens:          max(prompt-cached, 0),
			CacheReadInputTokens: cached,
			OutputTokens:         t.usage.CompletionTokens,
		},
		MessageID: t.id,
		Model:     t.model,
	}
}

// stopReason maps finish_reason to the Anthropic vocabulary; a step that made tool
// calls always stops with tool_use (some servers say "stop" after tool calls).
func (t *turn) stopReason() string {
	if len(t.calls) > 0 {
		return llm.StopToolUse
	}
	switch t.finish {
	case "stop":
		return llm.StopEndTurn
	case "tool_calls":
		return llm.StopToolUse
	case "length":
		return llm.StopMaxTokens
	default:
		return t.finish
	}
}
