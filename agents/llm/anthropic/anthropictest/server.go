// Package anthropictest is an Anthropic Messages API server on loopback, backed by any
// llm.Model (usually the scripted provider). It lets tests, benchmarks and the e2e
// scripts drive stoke's real anthropic provider, over real HTTP and SSE, with no
// network and no cost.
//
// It serves POST /v1/messages, streaming (stream: true; SSE events message_start,
// ping, content_block_start/delta/stop, message_delta, message_stop) and not. Each
// request body is converted to an llm.Request (see agentOf), handed to the model, and
// the model's events are written back the way the API writes them: one text block for
// the text, then one tool_use block per call whose input arrives as two
// input_json_delta pieces, so that clients must accumulate.
//
// The server simulates the prompt cache, so tests can measure what cache breakpoints
// save: every block marked with cache_control writes the prefix that ends there
// (tools, system, messages, in that order, compared byte for byte without the
// cache_control keys), and a later request whose prompt starts with a written
// prefix reads it. Usage reports cache_read_input_tokens, cache_creation_input_tokens
// and input_tokens accordingly, one token per four bytes. The model's own input
// usage is ignored; its output_tokens are passed on.
//
// Requests the real API rejects get its 400 answer: no model or max_tokens, empty
// text, tool_use blocks not answered in the next turn, tool_result blocks answering
// nothing, more than four cache_control blocks, a missing anthropic-version header.
// Fault options (WithFailFirst, WithCutAfter) exercise retries and cut streams. A
// model error before the first event is an HTTP error (the status of an
// *llm.ProviderError, else 500); after it, an error event ends the stream.
//
// A Server is safe for concurrent requests; Requests may be called at any time.
package anthropictest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

// Option configures a Server.
type Option func(*config)

type config struct {
	apiKey     string
	failFirst  int
	failStatus int
	cutAfter   int
	minCache   int64
}

// WithAPIKey makes the server require the header "x-api-key: key"; other requests get
// 401 with an authentication_error body.
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithFailFirst answers the first n authorised requests with HTTP status and an
// Anthropic-style error body (and a retry-after-ms: 10 header, so that clients that
// honour it retry at once). They are recorded like any other request.
func WithFailFirst(n, status int) Option {
	return func(c *config) { c.failFirst, c.failStatus = n, status }
}

// WithCutAfter makes every streamed response stop after n SSE events: the connection
// is hijacked and closed, with no message_stop. n <= 0 means never. Non-streamed
// responses are not affected.
func WithCutAfter(n int) Option { return func(c *config) { c.cutAfter = n } }

// WithMinCacheTokens makes the simulated cache skip writing prefixes shorter than n
// tokens, as the API does (its minimum is 1024 or more, by model). The default is 0.
func WithMinCacheTokens(n int64) Option { return func(c *config) { c.minCache = n } }

// Server is a running mock. Create it with New; Close it when done.
type Server struct {
	model llm.Model
	cfg   config
	cache *promptCache
	lb    *llmtest.Loopback

	seq atomic.Int64 // message and tool_use ids

}

// New starts a server on a loopback port that answers from model.
func New(model llm.Model, opts ...Option) *Server {
	s := &Server{model: model}
	for _, o := range opts {
		o(&s.cfg)
	}
	s.cache = newPromptCache(s.cfg.minCache)
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/messages", s.serveMessages)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown url %s", r.URL.Path))
	})
	// Close cancels in-flight model calls instead of waiting for them.
	s.lb = llmtest.NewLoopback(mux, s.cfg.failFirst)
	s.lb.Start()
	return s
}

// URL is the API base URL (no /v1): the anthropic provider's Config.BaseURL.
func (s *Server) URL() string { return s.lb.BaseURL() }

// Client returns an HTTP client for the server; its idle connections are closed by Close.
func (s *Server) Client() *http.Client { return s.lb.Client() }

// Close cancels in-flight model calls, then shuts the server down and waits for its
// handlers to return. Calling it again does nothing.
func (s *Server) Close() { s.lb.Close() }

// Requests returns a copy of every request body received so far, in arrival order,
// including the ones answered with an error.
func (s *Server) Requests() [][]byte { return s.lb.Requests() }

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request) {
	body, err := s.lb.Record(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}

	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "method not allowed: "+r.Method)
		return
	}
	if s.cfg.apiKey != "" && r.Header.Get("x-api-key") != s.cfg.apiKey {
		writeError(w, http.StatusUnauthorized, "invalid x-api-key")
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		writeError(w, http.StatusBadRequest, "anthropic-version: header is required")
		return
	}
	if s.lb.FailNow() {
		w.Header().Set("retry-after-ms", "10")
		writeError(w, s.cfg.failStatus, fmt.Sprintf("injected failure (HTTP %d)", s.cfg.failStatus))
		return
	}
	p, err := parse(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	in := s.cache.account(p.body.Model, p.elems)
	id := fmt.Sprintf("msg_mock_%d", s.seq.Add(1))
	events := s.model.Generate(r.Context(), p.req)
	if p.body.Stream {
		s.stream(w, id, p.body.Model, in, events)
	} else {
		s.complete(w, id, p.body.Model, in, events)
	}
}

func (s *Server) stream(w http.ResponseWriter, id, model string, in llm.Usage, events iter.Seq2[llm.Event, error]) {
	next, stop := iter.Pull2(events)
	defer stop()
	ev, err, ok := next()
	switch {
	case err != nil:
		writeError(w, errorStatus(err), "model: "+err.Error())
		return
	case !ok:
		writeError(w, http.StatusInternalServerError, "model: no events")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	out := &sseWriter{w: w, rc: http.NewResponseController(w), cutAfter: s.cfg.cutAfter}

	start := newMessage(id, model, in)
	start.Usage.OutputTokens = 1
	if out.event("message_start", messageStart{Type: "message_start", Message: start}) != nil ||
		out.event("ping", typeOnly{Type: "ping"}) != nil {
		return
	}
	var (
		done     *llm.Event
		index    int
		textOpen bool
		calls    int
	)
	closeText := func() error {
		if !textOpen {
			return nil
		}
		textOpen = false
		index++
		return out.event("content_block_stop", blockStop{Type: "content_block_stop", Index: index - 1})
	}
	for ; ok; ev, err, ok = next() {
		if err != nil {
			out.errorEvent(errorStatus(err), "model: "+err.Error())
			return
		}
		var werr error
		switch ev.Kind {
		case llm.EventTextDelta:
			if ev.Text == "" {
				break
			}
			if !textOpen {
				textOpen = true
				werr = out.event("content_block_start", blockStart{Type: "content_block_start", Index: index,
					ContentBlock: responseBlock{Type: "text", Text: new("")}})
			}
			if werr == nil {
				werr = out.event("content_block_delta", blockDelta{Type: "content_block_delta", Index: index,
					Delta: delta{Type: "text_delta", Text: new(ev.Text)}})
			}
		case llm.EventToolCall:
			if werr = closeText(); werr == nil {
				werr = out.toolUse(index, s.toolID(ev.ToolCall), ev.ToolCall)
				index++
				calls++
			}
		case llm.EventDone:
			done = new(ev)
		}
		if werr != nil {
			return
		}
		if done != nil {
			break
		}
	}
	if done == nil {
		out.errorEvent(http.StatusInternalServerError, "model: stream ended without a final event")
		return
	}
	if closeText() != nil {
		return
	}
	md := messageDelta{Type: "message_delta", Delta: stopDelta{StopReason: stopReason(done.StopReason, calls)},
		Usage: outputUsage{OutputTokens: max(done.Usage.OutputTokens, 1)}}
	if out.event("message_delta", md) != nil {
		return
	}
	_ = out.event("message_stop", typeOnly{Type: "message_stop"})
}

func (s *Server) complete(w http.ResponseWriter, id, model string, in llm.Usage, events iter.Seq2[llm.Event, error]) {
	msg := newMessage(id, model, in)
	var (
		text  strings.Builder
		calls []responseBlock
		done  *llm.Event
	)
	for ev, err := range events {
		if err != nil {
			writeError(w, errorStatus(err), "model: "+err.Error())
			return
		}
		switch ev.Kind {
		case llm.EventTextDelta:
			text.WriteString(ev.Text)
		case llm.EventToolCall:
			calls = append(calls, responseBlock{Type: "tool_use", ID: s.toolID(ev.ToolCall), Name: ev.ToolCall.Name,
				Input: json.RawMessage(input(ev.ToolCall))})
		case llm.EventDone:
			done = new(ev)
		}
		if done != nil {
			break
		}
	}
	if done == nil {
		writeError(w, http.StatusInternalServerError, "model: stream ended without a final event")
		return
	}
	if text.Len() > 0 {
		msg.Content = append(msg.Content, responseBlock{Type: "text", Text: new(text.String())})
	}
	msg.Content = append(msg.Content, calls...)
	msg.StopReason = new(stopReason(done.StopReason, len(calls)))
	msg.Usage.OutputTokens = max(done.Usage.OutputTokens, 1)
	writeJSON(w, http.StatusOK, msg)
}

func newMessage(id, model string, in llm.Usage) message {
	return message{
		ID: id, Type: "message", Role: "assistant", Model: model, Content: []responseBlock{},
		Usage: usage{
			InputTokens:              in.InputTokens,
			CacheCreationInputTokens: in.CacheCreationInputTokens,
			CacheReadInputTokens:     in.CacheReadInputTokens,
		},
	}
}

// toolID is the call's id, or a fresh one when the model left it empty.
func (s *Server) toolID(b llm.Block) string {
	if b.ID != "" {
		return b.ID
	}
	return fmt.Sprintf("toolu_mock_%d", s.seq.Add(1))
}

// stopReason is the model's stop reason; a message with tool calls stops with tool_use.
func stopReason(stop string, calls int) string {
	switch {
	case calls > 0:
		return llm.StopToolUse
	case stop == "":
		return llm.StopEndTurn
	default:
		return stop
	}
}

func input(b llm.Block) string {
	if len(b.Input) == 0 {
		return "{}"
	}
	return string(b.Input)
}

// errorStatus is the HTTP status for a model error: the status of an *llm.ProviderError
// that carries one (a scenario's error_status), else 500.
func errorStatus(err error) int {
	var pe *llm.ProviderError
	if errors.As(err, &pe) && pe.StatusCode >= 400 && pe.StatusCode <= 599 {
		return pe.StatusCode
	}
	return http.StatusInternalServerError
}

// errorType is the API's error type for an HTTP status.
func errorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusMethodNotAllowed:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// errCut reports that the stream was cut on purpose.
var errCut = errors.New("stream cut")

// sseWriter writes SSE events, flushing each, and cuts the connection after cutAfter.
type sseWriter struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	cutAfter int
	written  int
}

// toolUse writes one tool_use block: its start with an empty input, the input as two
// input_json_delta pieces, and its stop.
func (o *sseWriter) toolUse(index int, id string, b llm.Block) error {
	first, second := splitHalf(input(b))
	events := []struct {
		name string
		v    any
	}{
		{"content_block_start", blockStart{Type: "content_block_start", Index: index,
			ContentBlock: responseBlock{Type: "tool_use", ID: id, Name: b.Name, Input: json.RawMessage("{}")}}},
		{"content_block_delta", blockDelta{Type: "content_block_delta", Index: index,
			Delta: delta{Type: "input_json_delta", PartialJSON: new(first)}}},
		{"content_block_delta", blockDelta{Type: "content_block_delta", Index: index,
			Delta: delta{Type: "input_json_delta", PartialJSON: new(second)}}},
		{"content_block_stop", blockStop{Type: "content_block_stop", Index: index}},
	}
	for _, e := range events {
		if err := o.event(e.name, e.v); err != nil {
			return err
		}
	}
	return nil
}

func (o *sseWriter) event(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := o.write("event: " + name + "\ndata: " + string(b) + "\n\n"); err != nil {
		return err
	}
	o.written++
	if o.cutAfter > 0 && o.written >= o.cutAfter {
		conn, _, err := o.rc.Hijack() // flushes what was written
		if err != nil {
			return err
		}
		conn.Close()
		return errCut
	}
	return nil
}

// errorEvent ends a stream the way the API reports a failure after the 200 status.
func (o *sseWriter) errorEvent(status int, msg string) {
	b, _ := json.Marshal(apiError{Type: "error", Error: apiErrorBody{Type: errorType(status), Message: msg}})
	_ = o.write("event: error\ndata: " + string(b) + "\n\n")
}

func (o *sseWriter) write(s string) error {
	if _, err := io.WriteString(o.w, s); err != nil {
		return err
	}
	return o.rc.Flush()
}

// writeError writes an Anthropic-style error body.
func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, apiError{Type: "error", Error: apiErrorBody{Type: errorType(status), Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a failed write means the client went away
}

// splitHalf splits s near its middle, on a rune boundary.
func splitHalf(s string) (string, string) {
	i := len(s) / 2
	for i > 0 && i < len(s) && !isRuneStart(s[i]) {
		i--
	}
	return s[:i], s[i:]
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
