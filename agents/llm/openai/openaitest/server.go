// Package openaitest is an OpenAI-compatible chat-completions server on loopback, backed by
// any llm.Model (usually the scripted provider). It lets the provider's tests, the e2e
// scripts (the mockllm command) and benchmarks drive stoke's real openai provider, over
// real HTTP and SSE, with no network and no cost. It is built on the loopback core of
// agents/llm/llmtest, which it shares with the Anthropic mock.
//
// It serves POST /v1/chat/completions, streaming (SSE chat.completion.chunk lines) and
// not. Each request body is converted to an llm.Request (see toRequest and agentOf),
// handed to the model, and the model's events are written back the way the OpenAI API
// writes them: a role chunk, text deltas, tool calls (id, type, name, then the arguments
// split over two chunks so that clients must accumulate), a finish_reason chunk, a usage
// chunk when the client asked for one with stream_options.include_usage, and
// "data: [DONE]".
//
// Histories the real API rejects (tool calls left unanswered, tool messages answering
// no call, no model) get its 400 answer, so a client bug shows up here first.
// WithPrefixCache simulates OpenAI's automatic prompt caching, so that what a client
// gains from keeping its requests' prefixes stable can be measured.
// Fault options (WithFailFirst, WithCutAfter, WithFaults) exercise retries, cut
// streams and requests that get no answer (llmtest.Faults.StallFirst). A model error before the first event is an HTTP error (the status of an
// *llm.ProviderError, else 500); after it, an error event ends the stream without [DONE].
//
// A Server is safe for concurrent requests; Requests may be called at any time.
package openaitest

import (
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

// Option configures a Server.
type Option func(*config)

type config struct {
	apiKey      string
	faults      llmtest.Faults
	cached      int64
	cachedIsSet bool
	prefixMin   int64
	prefixCache bool
}

// WithAPIKey makes the server require "Authorization: Bearer key"; other requests get
// 401 with an OpenAI-style JSON error.
func WithAPIKey(key string) Option { return func(c *config) { c.apiKey = key } }

// WithFailFirst answers the first n authorised requests with HTTP status and an
// OpenAI-style JSON error body (and a Retry-After-Ms: 10 header, so that clients that
// honour it retry at once). They are recorded like any other request.
func WithFailFirst(n, status int) Option {
	return func(c *config) { c.faults.FailFirst, c.faults.FailStatus = n, status }
}

// WithCutAfter makes every streamed response stop after n chunk lines: the connection
// is hijacked and closed, with no finish_reason, no usage and no [DONE]. n <= 0 means
// never. Non-streamed responses are not affected.
func WithCutAfter(n int) Option { return func(c *config) { c.faults.CutAfter = n } }

// WithFaults sets every injected fault at once (replacing WithFailFirst and
// WithCutAfter): which requests fail, which streams are cut after how many chunk
// lines, and how (see llmtest.Faults).
func WithFaults(f llmtest.Faults) Option { return func(c *config) { c.faults = f } }

// WithCachedTokens reports n as usage.prompt_tokens_details.cached_tokens on every
// response (prompt_tokens is raised to n if it was smaller). Without it (or
// WithPrefixCache), cached_tokens is the model's CacheReadInputTokens, and the details
// object is sent only when that is not zero. It replaces an earlier WithPrefixCache.
func WithCachedTokens(n int64) Option {
	return func(c *config) { c.cached, c.cachedIsSet, c.prefixCache = n, true, false }
}

// WithPrefixCache simulates OpenAI's automatic prompt caching. The server remembers
// every message-boundary prefix of each valid request (model, tools, then the messages
// one by one, each as the exact bytes sent) and reports, for every response:
//   - prompt_tokens: the tools and messages of the request, at bytes/4;
//   - prompt_tokens_details.cached_tokens (always sent): the longest prefix of the
//     request that ends at a message boundary and that an earlier request also had,
//     rounded down to a multiple of 128 tokens, or 0 when that is below minTokens
//     (1024 for the real API).
//
// The model's input usage is then ignored; its output tokens are kept. Nothing
// expires. It replaces an earlier WithCachedTokens.
func WithPrefixCache(minTokens int) Option {
	return func(c *config) { c.prefixMin, c.prefixCache, c.cachedIsSet = int64(minTokens), true, false }
}

// Server is a running mock. Create it with New; Close it when done. It embeds its
// loopback core: Client, Close, Connections, Streams, Requests and Headers are
// llmtest.Loopback's (its other methods serve the handlers).
type Server struct {
	*llmtest.Loopback
	model llm.Model
	cfg   config
	cache *prefixCache // nil unless WithPrefixCache

	seq atomic.Int64 // completion ids
}

// New starts a server on a loopback port that answers from model.
func New(model llm.Model, opts ...Option) *Server {
	s := &Server{model: model}
	for _, o := range opts {
		o(&s.cfg)
	}
	if s.cfg.prefixCache {
		s.cache = newPrefixCache(s.cfg.prefixMin)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.serveCompletions)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("unknown url %s", r.URL.Path))
	})
	// Close cancels in-flight model calls instead of waiting for them.
	s.Loopback = llmtest.NewLoopback(mux, s.cfg.faults)
	s.Start()
	return s
}

// URL is the OpenAI base URL, ending in /v1.
func (s *Server) URL() string { return s.BaseURL() + "/v1" }

func (s *Server) serveCompletions(w http.ResponseWriter, r *http.Request) {
	body, err := s.Record(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}

	if r.Method != http.MethodPost {
		writeError(w, http.StatusMethodNotAllowed, "method not allowed: "+r.Method)
		return
	}
	if s.cfg.apiKey != "" && r.Header.Get("Authorization") != "Bearer "+s.cfg.apiKey {
		writeError(w, http.StatusUnauthorized, "Incorrect API key provided.")
		return
	}
	var cr chatRequest
	if err := json.Unmarshal(body, &cr); err != nil {
		writeError(w, http.StatusBadRequest, "We could not parse the JSON body of your request: "+err.Error())
		return
	}
	req, err := toRequest(cr)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if s.StallNow(req.Agent) {
		s.Stall(r)
		return
	}
	if s.FailNow(req.Agent) {
		w.Header().Set("Retry-After-Ms", "10")
		status := s.FailStatus()
		writeError(w, status, fmt.Sprintf("injected failure (HTTP %d)", status))
		return
	}
	var in *promptUsage
	if s.cache != nil {
		var raw struct {
			Tools    json.RawMessage   `json:"tools"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(body, &raw); err != nil {
			writeError(w, http.StatusBadRequest, "We could not parse the JSON body of your request: "+err.Error())
			return
		}
		if string(raw.Tools) == "null" {
			raw.Tools = nil
		}
		in = new(s.cache.account(cr.Model, raw.Tools, raw.Messages))
	}
	id := fmt.Sprintf("chatcmpl-mock-%d", s.seq.Add(1))
	model := cr.Model
	events := s.model.Generate(r.Context(), req)
	if cr.Stream {
		s.stream(w, req.Agent, id, model, cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage, in, events)
	} else {
		s.complete(w, id, model, in, events)
	}
}

func (s *Server) stream(w http.ResponseWriter, agent, id, model string, includeUsage bool, in *promptUsage, events iter.Seq2[llm.Event, error]) {
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
	out := &sseWriter{SSE: s.Stream(w, agent),
		base: chunk{ID: id, Object: "chat.completion.chunk", Created: time.Now().Unix(), Model: model}}

	if out.delta(delta{Role: "assistant", Content: new("")}) != nil {
		return
	}
	var done *llm.Event
	calls := 0
	for ; ok; ev, err, ok = next() {
		if err != nil {
			out.errorEvent("model: " + err.Error())
			return
		}
		var werr error
		switch ev.Kind {
		case llm.EventTextDelta:
			if ev.Text != "" {
				werr = out.delta(delta{Content: new(ev.Text)})
			}
		case llm.EventToolCall:
			werr = out.toolCall(calls, ev.ToolCall)
			calls++
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
		out.errorEvent("model: stream ended without a final event")
		return
	}
	finish := finishReason(done.StopReason, calls)
	if out.write(chunkWith(out.base, chunkChoice{FinishReason: &finish})) != nil {
		return
	}
	if includeUsage {
		c := out.base
		c.Choices = []chunkChoice{}
		c.Usage = new(s.usageOf(done.Usage, in))
		if out.write(c) != nil {
			return
		}
	}
	out.End()
	_ = out.Write("data: [DONE]\n\n")
}

func (s *Server) complete(w http.ResponseWriter, id, model string, in *promptUsage, events iter.Seq2[llm.Event, error]) {
	a, err := llmtest.ReadAnswer(events)
	if err != nil {
		writeError(w, llmtest.ErrorStatus(err), "model: "+err.Error())
		return
	}
	msg := completionMessage{Role: "assistant"}
	for i, c := range a.Calls {
		msg.ToolCalls = append(msg.ToolCalls, toolCall{
			ID: callID(c, i), Type: "function",
			Function: functionCall{Name: c.Name, Arguments: llmtest.Input(c)},
		})
	}
	if a.Text != "" || len(msg.ToolCalls) == 0 {
		msg.Content = new(a.Text)
	}
	llmtest.WriteJSON(w, http.StatusOK, completion{
		ID: id, Object: "chat.completion", Created: time.Now().Unix(), Model: model,
		Choices: []completionChoice{{Message: msg, FinishReason: finishReason(a.Done.StopReason, len(msg.ToolCalls))}},
		Usage:   s.usageOf(a.Done.Usage, in),
	})
}

// usageOf maps llm usage to OpenAI's, where prompt_tokens includes cached tokens. in,
// when not nil, is the prefix cache's account of the prompt and replaces the model's.
func (s *Server) usageOf(u llm.Usage, in *promptUsage) usage {
	out := usage{
		PromptTokens:     u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		CompletionTokens: u.OutputTokens,
	}
	switch {
	case in != nil:
		out.PromptTokens = in.prompt
		out.PromptTokensDetails = &promptDetail{CachedTokens: in.cached}
	case s.cfg.cachedIsSet:
		out.PromptTokens = max(out.PromptTokens, s.cfg.cached)
		out.PromptTokensDetails = &promptDetail{CachedTokens: s.cfg.cached}
	case u.CacheReadInputTokens > 0:
		out.PromptTokensDetails = &promptDetail{CachedTokens: u.CacheReadInputTokens}
	}
	out.TotalTokens = out.PromptTokens + out.CompletionTokens
	return out
}

func chunkWith(base chunk, choice chunkChoice) chunk {
	base.Choices = []chunkChoice{choice}
	return base
}

func callID(b llm.Block, i int) string {
	if b.ID != "" {
		return b.ID
	}
	return fmt.Sprintf("call_mock_%d", i)
}

// sseWriter writes chunk lines over the loopback core's SSE writer, which flushes each
// and cuts the stream as the faults say.
type sseWriter struct {
	*llmtest.SSE
	base chunk
}

func (o *sseWriter) delta(d delta) error {
	return o.write(chunkWith(o.base, chunkChoice{Delta: d}))
}

// toolCall writes one call as two chunks: id, type, name and the first half of the
// arguments, then the second half.
func (o *sseWriter) toolCall(index int, b llm.Block) error {
	first, second := llmtest.SplitHalf(llmtest.Input(b))
	err := o.delta(delta{ToolCalls: []toolCallDelta{{
		Index: index, ID: callID(b, index), Type: "function",
		Function: functionDelta{Name: b.Name, Arguments: first},
	}}})
	if err != nil {
		return err
	}
	return o.delta(delta{ToolCalls: []toolCallDelta{{Index: index, Function: functionDelta{Arguments: second}}}})
}

func (o *sseWriter) write(c chunk) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	return o.Event("data: " + string(b) + "\n\n")
}

// errorEvent ends a stream the way the API reports a failure after the 200 status.
func (o *sseWriter) errorEvent(msg string) {
	b, _ := json.Marshal(apiError{Error: apiErrorBody{Message: msg, Type: "server_error"}})
	_ = o.Write("data: " + string(b) + "\n\n")
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, msg string) {
	body := apiErrorBody{Message: msg, Type: "invalid_request_error"}
	switch {
	case status == http.StatusUnauthorized:
		body.Code = new("invalid_api_key")
	case status == http.StatusTooManyRequests:
		body.Type, body.Code = "requests", new("rate_limit_exceeded")
	case status >= 500:
		body.Type = "server_error"
	}
	llmtest.WriteJSON(w, status, apiError{Error: body})
}
