package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Generate streams one Messages API call. Text deltas are yielded as they arrive;
// each tool_use block is yielded as one EventToolCall when its content_block_stop
// arrives, with its input_json_delta pieces joined; one EventDone follows
// message_stop. The SDK stream is closed when the sequence ends, including when the
// consumer stops ranging early.
func (m *Model) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if req == nil {
			yield(llm.Event{}, errors.New("anthropic: nil request"))
			return
		}
		data, p, err := body(req, m.model, m.maxTokens)
		if err != nil {
			yield(llm.Event{}, fmt.Errorf("anthropic: %w", err))
			return
		}
		// The body is encoded here (body), each message once per chat, and sent as it is:
		// the SDK's own body (where it sets "stream") is a placeholder the middleware
		// replaces on every attempt.
		// The parameters are the SDK's bookkeeping only (its telemetry is off): the model
		// and the token cap, not the tools the SDK would encode again into a body it drops.
		light := sdk.MessageNewParams{Model: p.Model, MaxTokens: p.MaxTokens}
		stream := m.messages.NewStreaming(ctx, light, option.WithRequestBody("application/json", []byte("{}")),
			option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
				data.Attach(r)
				return next(r)
			}))
		defer stream.Close()

		t := turn{model: string(p.Model), blocks: map[int64]*block{}}
		budget := llm.AnswerCap{Limit: m.maxAnswer}
		for stream.Next() {
			e := stream.Current()
			if !budget.Take(answerBytes(e)) {
				yield(llm.Event{}, &llm.AnswerTooLargeError{Provider: providerName, Limit: m.maxAnswer, Setting: m.capName})
				return
			}
			ev, ok := t.add(e)
			if ok && !yield(ev, nil) {
				return
			}
		}
		if err := m.streamError(ctx, stream.Err(), t.stopped); err != nil {
			yield(llm.Event{}, err)
			return
		}
		yield(t.done(), nil)
	}
}

// answerBytes is what a stream event adds to the answer: its text, or its piece of a
// tool call's input.
func answerBytes(e sdk.MessageStreamEventUnion) int {
	switch e.Type {
	case "content_block_start":
		return len(e.ContentBlock.Text) + len(e.ContentBlock.JSON.Input.Raw())
	case "content_block_delta":
		return len(e.Delta.Text) + len(e.Delta.PartialJSON)
	}
	return 0
}

// block is one open content block of the streamed message.
type block struct {
	typ, id, name string
	startInput    string // the input of content_block_start (raw JSON), usually {}
	partial       []byte // the input_json_delta pieces so far
	sawPartial    bool
}

// turn accumulates the events of one streamed message.
type turn struct {
	id, model, stopReason string
	usage                 llm.Usage
	blocks                map[int64]*block // open blocks by index
	stopped               bool             // message_stop arrived
}

// add folds one stream event into t and returns the llm.Event it completes, if any.
func (t *turn) add(e sdk.MessageStreamEventUnion) (llm.Event, bool) {
	switch e.Type {
	case "message_start":
		msg := e.Message
		t.id = msg.ID
		if msg.Model != "" {
			t.model = string(msg.Model)
		}
		t.usage = llm.Usage{
			InputTokens:              msg.Usage.InputTokens,
			OutputTokens:             msg.Usage.OutputTokens,
			CacheCreationInputTokens: msg.Usage.CacheCreationInputTokens,
			CacheReadInputTokens:     msg.Usage.CacheReadInputTokens,
		}
	case "content_block_start":
		cb := e.ContentBlock
		t.blocks[e.Index] = &block{typ: cb.Type, id: cb.ID, name: cb.Name, startInput: cb.JSON.Input.Raw()}
		if cb.Type == "text" && cb.Text != "" {
			return llm.Event{Kind: llm.EventTextDelta, Text: cb.Text}, true
		}
	case "content_block_delta":
		switch e.Delta.Type {
		case "text_delta":
			if e.Delta.Text != "" {
				return llm.Event{Kind: llm.EventTextDelta, Text: e.Delta.Text}, true
			}
		case "input_json_delta":
			if b := t.blocks[e.Index]; b != nil {
				b.partial = append(b.partial, e.Delta.PartialJSON...)
				b.sawPartial = true
			}
		}
	case "content_block_stop":
		b := t.blocks[e.Index]
		delete(t.blocks, e.Index)
		if b != nil && b.typ == "tool_use" {
			return llm.Event{Kind: llm.EventToolCall, ToolCall: llm.Block{
				Type: llm.BlockToolUse, ID: b.id, Name: b.name, Input: b.input(),
			}}, true
		}
	case "message_delta":
		if e.Delta.StopReason != "" {
			t.stopReason = string(e.Delta.StopReason)
		}
		u := e.Usage
		t.usage.OutputTokens = u.OutputTokens
		// message_delta counts are cumulative; when the server sends the input
		// side too (server tools can add to it), it supersedes message_start's.
		if u.InputTokens > 0 || u.CacheCreationInputTokens > 0 || u.CacheReadInputTokens > 0 {
			t.usage.InputTokens = u.InputTokens
			t.usage.CacheCreationInputTokens = u.CacheCreationInputTokens
			t.usage.CacheReadInputTokens = u.CacheReadInputTokens
		}
	case "message_stop":
		t.stopped = true
	}
	return llm.Event{}, false
}

// input is the tool call's input as a valid JSON value. The streamed pieces win over
// the start block's input; no input at all is {}. A model that botched its JSON gets
// {"_raw_arguments": "<raw text>"}, which keeps transcripts and stream-JSON events
// valid and makes the tool's schema check fail with a message it can act on.
func (b *block) input() json.RawMessage {
	raw := []byte(b.startInput)
	if b.sawPartial {
		raw = b.partial
	}
	switch {
	case len(raw) == 0:
		return json.RawMessage(emptyInput)
	case json.Valid(raw):
		return json.RawMessage(raw)
	}
	wrapped, err := json.Marshal(map[string]string{"_raw_arguments": string(raw)})
	if err != nil { // cannot happen for a map of strings
		return json.RawMessage(emptyInput)
	}
	return wrapped
}

// done is the final event: stop reason, usage and ids.
func (t *turn) done() llm.Event {
	return llm.Event{
		Kind:       llm.EventDone,
		StopReason: t.stopReason,
		Usage:      t.usage,
		MessageID:  t.id,
		Model:      t.model,
	}
}
