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
// Fault options (WithFailFirst, WithFaults) exercise retries and cut
// streams. A model error before the first event is an HTTP error (the status of an
// *llm.ProviderError, else 500); after it, an error event ends the stream.
//
// It is built on the loopback core of agents/llm/llmtest, which it shares with the
// OpenAI mock.
//
// A Server is safe for concurrent requests; Requests may be called at any time.
package anthropictest

import (
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"sync/atomic"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

// Option configures a Server.
type Option func(*config)

type config struct {
	apiKey     string
	faults     llmtest.Faults
	minCache   int64
	modelUsage bool
}

// WithAPIKey makes the server require the header "x-api-key: key"; other requests get
// 401 with an authentication_error body.
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithFailFirst answers the first n authorised requests with HTTP status and an
// Anthropic-style error body (and a retry-after-ms: 10 header, so that clients that
// honour it retry at once). They are recorded like any other request.
func WithFailFirst(n, status int) Option {
	return func(c *config) { c.faults.FailFirst, c.faults.FailStatus = n, status }
}

// WithFaults sets every injected fault at once (replacing WithFailFirst): which
// requests fail, which streams are cut after how many events (the connection is then
// closed with no message_stop), and how (see llmtest.Faults).
func WithFaults(f llmtest.Faults) Option { return func(c *config) { c.faults = f } }

// WithModelUsage reports the model's own usage (input, cache reads and writes,
// output) instead of the simulated prompt cache's.
func WithModelUsage() Option { return func(c *config) { c.modelUsage = true } }

// WithMinCacheTokens makes the simulated cache skip writing prefixes shorter than n
// tokens, as the API does (its minimum is 1024 or more, by model). The default is 0.
func WithMinCacheTokens(n int64) Option { return func(c *config) { c.minCache = n } }

// Server is a running mock. Create it with New; Close it when done. It embeds its
// loopback core: Client, Close, Connections, Streams, Requests and Headers are
// llmtest.Loopback's (its other methods serve the handlers).
type Server struct {
	*llmtest.Loopback
	model llm.Model
	cfg   config
	cache *promptCache

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
	s.Loopback = llmtest.NewLoopback(mux, s.cfg.faults)
	s.Start()
	return s
}

// URL is the API base URL (no /v1): the anthropic provider's Config.BaseURL.
func (s *Server) URL() string { return s.BaseURL() }

func (s *Server) serveMessages(w http.ResponseWriter, r *http.Request) {
	body, err := s.Record(r)
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
	p, err := parse(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if s.StallNow(p.req.Agent) {
		s.Stall(r)
		return
	}
	if s.FailNow(p.req.Agent) {
		w.Header().Set("retry-after-ms", "10")
		status := s.FailStatus()
		writeError(w, status, fmt.Sprintf("injected failure (HTTP %d)", status))
		return
	}
	var in *llm.Usage // nil: the model's own usage
	if !s.cfg.modelUsage {
		in = new(s.cache.account(p.body.Model, p.elems))
	}
	id := fmt.Sprintf("msg_mock_%d", s.seq.Add(1))
	events := s.model.Generate(r.Context(), p.req)
	if p.body.Stream {
		s.stream(w, p.req.Agent, id, p.body.Model, in, events)
	} else {
		s.complete(w, id, p.body.Model, in, events)
	}
}

// stream writes the answer as events. in is the prompt's usage, or nil for the model's
// own, which then comes in message_delta (cumulative counts, as the API may send them).
func (s *Server) stream(w http.ResponseWriter, agent, id, model string, in *llm.Usage, events iter.Seq2[llm.Event, error]) {
	next, stop := iter.Pull2(events)
	defer stop()
	ev, err, ok := next()
	switch {
	case err != nil:
		writeError(w, llmtest.ErrorStatus(err), "model: "+err.Error())
		return
	case !ok:
		writeError(w, http.StatusInternalServerError, "model: no events")
		return
	}
	out := &sseWriter{s.Stream(w, agent)}

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
			out.errorEvent(llmtest.ErrorStatus(err), "model: "+err.Error())
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
		Usage: deltaUsage{OutputTokens: max(done.Usage.OutputTokens, 1)}}
	if in == nil {
		u := done.Usage
		md.Usage.InputTokens, md.Usage.CacheCreationInputTokens, md.Usage.CacheReadInputTokens =
			&u.InputTokens, &u.CacheCreationInputTokens, &u.CacheReadInputTokens
	}
	if out.event("message_delta", md) != nil {
		return
	}
	out.End()
	_ = out.event("message_stop", typeOnly{Type: "message_stop"})
}

func (s *Server) complete(w http.ResponseWriter, id, model string, in *llm.Usage, events iter.Seq2[llm.Event, error]) {
	a, err := llmtest.ReadAnswer(events)
	if err != nil {
		writeError(w, llmtest.ErrorStatus(err), "model: "+err.Error())
		return
	}
	msg := newMessage(id, model, in)
	if a.Text != "" {
		msg.Content = append(msg.Content, responseBlock{Type: "text", Text: new(a.Text)})
	}
	for _, c := range a.Calls {
		msg.Content = append(msg.Content, responseBlock{Type: "tool_use", ID: s.toolID(c), Name: c.Name,
			Input: json.RawMessage(llmtest.Input(c))})
	}
	msg.StopReason = new(stopReason(a.Done.StopReason, len(a.Calls)))
	if in == nil {
		msg.Usage = newMessage(id, model, &a.Done.Usage).Usage
	}
	msg.Usage.OutputTokens = max(a.Done.Usage.OutputTokens, 1)
	llmtest.WriteJSON(w, http.StatusOK, msg)
}

// newMessage starts the answer; in (nil: not known yet) is its input usage.
func newMessage(id, model string, in *llm.Usage) message {
	m := message{ID: id, Type: "message", Role: "assistant", Model: model, Content: []responseBlock{}}
	if in != nil {
		m.Usage = usage{
			InputTokens:              in.InputTokens,
			CacheCreationInputTokens: in.CacheCreationInputTokens,
			CacheReadInputTokens:     in.CacheReadInputTokens,
		}
	}
	return m
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

// sseWriter writes events over the loopback core's SSE writer, which flushes each and
// cuts the stream as the faults say.
type sseWriter struct{ *llmtest.SSE }

// toolUse writes one tool_use block: its start with an empty input, the input as two
// input_json_delta pieces, and its stop.
func (o *sseWriter) toolUse(index int, id string, b llm.Block) error {
	first, second := llmtest.SplitHalf(llmtest.Input(b))
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
	return o.Event("event: " + name + "\ndata: " + string(b) + "\n\n")
}

// errorEvent ends a stream the way the API reports a failure after the 200 status.
func (o *sseWriter) errorEvent(status int, msg string) {
	b, _ := json.Marshal(apiError{Type: "error", Error: apiErrorBody{Type: errorType(status), Message: msg}})
	_ = o.Write("event: error\ndata: " + string(b) + "\n\n")
}

// writeError writes an Anthropic-style error body.
func writeError(w http.ResponseWriter, status int, msg string) {
	llmtest.WriteJSON(w, status, apiError{Type: "error", Error: apiErrorBody{Type: errorType(status), Message: msg}})
}
