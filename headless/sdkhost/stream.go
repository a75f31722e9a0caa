package sdkhost

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/streamjson"
)

// streamEvent is a stream_event line (--include-partial-messages): one Anthropic Messages
// streaming event of the parent's reply.
type streamEvent struct {
	streamjson.Envelope
	Event           map[string]any `json:"event"`
	ParentToolUseID *string        `json:"parent_tool_use_id"`
}

// partialStream turns the parent's model events into the Anthropic streaming events the
// SDK's includePartialMessages consumers read: message_start, content_block_start,
// content_block_delta (text_delta, input_json_delta), content_block_stop, message_delta,
// message_stop. It is used only from the goroutine running the parent's turn.
type partialStream struct {
	emit  func(streamjson.Event)
	model func() string

	n        int  // messages started, for ids
	open     bool // message_start written, message_stop not yet
	index    int  // index of the next content block
	textOpen bool // a text block is open at index
	toolUse  bool // the message has a tool_use block
}

func newPartialStream(emit func(streamjson.Event), model func() string) *partialStream {
	return &partialStream{emit: emit, model: model}
}

func (p *partialStream) write(ev map[string]any) {
	p.emit(&streamEvent{Envelope: streamjson.Envelope{Type: "stream_event"}, Event: ev})
}

// apiRetry is a system/api_retry line (Claude Code's name): the parent's model call
// broke off mid-stream and is made again. The message streamed since the last
// message_start is void: it ends with message_stop but never becomes an assistant
// line, and the retried call streams as a new message.
type apiRetry struct {
	streamjson.Envelope
	Attempt      int   `json:"attempt"`
	MaxRetries   int   `json:"max_retries"`
	RetryDelayMS int64 `json:"retry_delay_ms"`
	ErrorStatus  *int  `json:"error_status"`
	// Error is the SDKs' kind of the failure (rate_limit, server_error, ...);
	// ErrorMessage says what failed.
	Error        string `json:"error"`
	ErrorMessage string `json:"error_message,omitempty"`
}

// retryErrorKind is the Claude Agent SDK's name (SDKAssistantMessageError) for the
// failure of a call that is made again.
func retryErrorKind(err error) string {
	var pe *llm.ProviderError
	if !errors.As(err, &pe) {
		return "unknown" // a cut stream, a reset connection
	}
	switch s := pe.StatusCode; {
	case s == 429:
		return "rate_limit"
	case s == 529:
		return "overloaded"
	case s == 401 || s == 403:
		return "authentication_failed"
	case s == 404:
		return "model_not_found"
	case s == 400 || s == 413 || s == 422:
		return "invalid_request"
	case s >= 500:
		return "server_error"
	}
	return "unknown"
}

// event takes one event of a parent model call (runtime.Config.OnModelEvent).
func (p *partialStream) event(ev llm.Event) {
	if ev.Kind == llm.EventRetry {
		p.retry(ev.Retry)
		return
	}
	if !p.open {
		p.n++
		p.open, p.index, p.textOpen, p.toolUse = true, 0, false, false
		p.write(map[string]any{"type": "message_start", "message": streamjson.AssistantMessage{
			ID: fmt.Sprintf("msg_stoke_stream_%d", p.n), Type: "message", Role: "assistant",
			Model: p.model(), Content: []streamjson.Block{},
		}})
	}
	switch ev.Kind {
	case llm.EventTextDelta:
		if !p.textOpen {
			p.textOpen = true
			p.write(map[string]any{"type": "content_block_start", "index": p.index,
				"content_block": streamjson.Block(llm.TextBlock(""))})
		}
		p.write(map[string]any{"type": "content_block_delta", "index": p.index,
			"delta": map[string]any{"type": "text_delta", "text": ev.Text}})
	case llm.EventToolCall:
		p.closeText()
		p.toolUse = true
		input := string(ev.ToolCall.Input)
		if !json.Valid([]byte(input)) {
			input = "{}"
		}
		p.write(map[string]any{"type": "content_block_start", "index": p.index,
			"content_block": map[string]any{"type": "tool_use", "id": ev.ToolCall.ID, "name": ev.ToolCall.Name, "input": map[string]any{}}})
		p.write(map[string]any{"type": "content_block_delta", "index": p.index,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": input}})
		p.write(map[string]any{"type": "content_block_stop", "index": p.index})
		p.index++
	case llm.EventDone:
		p.closeText()
		stop := ev.StopReason
		if stop == "" {
			stop = llm.StopEndTurn
			if p.toolUse {
				stop = llm.StopToolUse
			}
		}
		p.write(map[string]any{"type": "message_delta",
			"delta":              map[string]any{"stop_reason": stop, "stop_sequence": nil, "stop_details": nil, "container": nil},
			"usage":              deltaUsage(ev.Usage),
			"context_management": nil,
		})
		p.write(map[string]any{"type": "message_stop"})
		p.open = false
	}
}

func (p *partialStream) closeText() {
	if p.textOpen {
		p.write(map[string]any{"type": "content_block_stop", "index": p.index})
		p.textOpen = false
		p.index++
	}
}

// retry closes the void message, if one was started, and says that the call is made again.
func (p *partialStream) retry(r *llm.Retry) {
	p.finish()
	line := &apiRetry{Envelope: streamjson.Envelope{Type: "system", Subtype: "api_retry"}}
	if r != nil {
		line.Attempt, line.MaxRetries, line.RetryDelayMS = r.Attempt, r.MaxRetries, r.Delay.Milliseconds()
		var pe *llm.ProviderError
		if errors.As(r.Err, &pe) && pe.StatusCode != 0 {
			line.ErrorStatus = &pe.StatusCode
		}
		line.Error = retryErrorKind(r.Err)
		if r.Err != nil {
			line.ErrorMessage = r.Err.Error()
		}
	}
	p.emit(line)
}

// finish closes a message a cancelled or failed call left open, so that every
// message_start has its message_stop.
func (p *partialStream) finish() {
	if !p.open {
		return
	}
	p.closeText()
	p.write(map[string]any{"type": "message_stop"})
	p.open = false
}

// deltaUsage is the usage of a message_delta event: the call's usage, in the keys of the
// Anthropic API's message delta usage.
func deltaUsage(u llm.Usage) map[string]any {
	return map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_creation_input_tokens": u.CacheCreationInputTokens, "cache_read_input_tokens": u.CacheReadInputTokens,
		"server_tool_use":       map[string]int{"web_search_requests": 0, "web_fetch_requests": 0},
		"output_tokens_details": map[string]int{"thinking_tokens": 0},
		"iterations":            []any{}, "fallback_credit": nil,
	}
}
