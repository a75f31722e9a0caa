package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

// step answers one HTTP request of a scripted fake endpoint.
type step func(w http.ResponseWriter, r *http.Request)

// recorded is one request the fake endpoint received.
type recorded struct {
	auth string
	body []byte
}

// fake is a scripted OpenAI-compatible endpoint on loopback: each request consumes
// the next step, extra requests fail the test, and leftover steps fail it at cleanup.
type fake struct {
	t     *testing.T
	mu    sync.Mutex
	steps []step
	reqs  []recorded
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		f.t.Errorf("read request body: %v", err)
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, recorded{auth: r.Header.Get("Authorization"), body: body})
	n := len(f.reqs)
	var s step
	if len(f.steps) > 0 {
		s, f.steps = f.steps[0], f.steps[1:]
	}
	f.mu.Unlock()
	if r.URL.Path != "/v1/chat/completions" {
		f.t.Errorf("request %d: path %q, want /v1/chat/completions", n, r.URL.Path)
	}
	if s == nil {
		f.t.Errorf("request %d: no step left", n)
		http.Error(w, "no step left", http.StatusTeapot)
		return
	}
	s(w, r)
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// newFake starts a fake endpoint serving steps and returns it with a Model that
// talks to it with the given retries.
func newFake(t *testing.T, retries int, steps ...step) (*fake, *Model) {
	t.Helper()
	f := &fake{t: t, steps: steps}
	srv := httptest.NewServer(f)
	t.Cleanup(func() {
		srv.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.steps) > 0 {
			t.Errorf("%d scripted steps left unused", len(f.steps))
		}
	})
	m, err := New(Config{
		APIKey:     testKey,
		BaseURL:    srv.URL + "/v1",
		Model:      "m-default",
		MaxRetries: retries,
		HTTPClient: srv.Client(),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f, m
}

// chunk is one chat.completion.chunk as a JSON string. delta may be nil (usage chunk).
func chunk(delta map[string]any, finish string, usage map[string]any) string {
	c := map[string]any{
		"id": "chatcmpl-7", "object": "chat.completion.chunk", "created": 1, "model": "m-served",
		"choices": []any{},
	}
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
		panic(err)
	}
	return string(b)
}

func text(s string) string { return chunk(map[string]any{"content": s}, "", nil) }

func finish(reason string) string { return chunk(map[string]any{}, reason, nil) }

func usage(prompt, cached, completion int) string {
	return chunk(nil, "", map[string]any{
		"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
		"prompt_tokens_details": map[string]any{"cached_tokens": cached},
	})
}

// toolDelta is a tool call fragment; id and name are omitted when empty.
func toolDelta(index int, id, name, args string) string {
	call := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" {
		call["id"] = id
		call["type"] = "function"
	}
	if name != "" {
		call["function"].(map[string]any)["name"] = name
	}
	return chunk(map[string]any{"tool_calls": []any{call}}, "", nil)
}

// writeSSE writes each data line as one server-sent event and flushes it.
func writeSSE(w http.ResponseWriter, data ...string) {
	for _, d := range data {
		fmt.Fprintf(w, "data: %s\n\n", d)
	}
	w.(http.Flusher).Flush()
}

// sse answers with an event stream of the given data lines.
func sse(data ...string) step {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeSSE(w, data...)
	}
}

// apiError answers with an OpenAI-style error body.
func apiError(status int, msg string) step {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After-Ms", "1")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":"test_error","code":null,"param":null}}`, msg)
	}
}

// collect ranges over one Generate call.
func collect(ctx context.Context, m *Model, req *llm.Request) ([]llm.Event, error) {
	return llmtest.Collect(ctx, m, req)
}

// blocker is a step that reports when a request arrived, writes the given events
// (none: not even headers), then holds the request until the client goes away
// (reported on gone) or the test ends.
type blocker struct {
	arrived, gone, release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{arrived: make(chan struct{}), gone: make(chan struct{}), release: make(chan struct{})}
}

func (b *blocker) step(data ...string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		close(b.arrived)
		if len(data) > 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			writeSSE(w, data...)
		}
		select {
		case <-r.Context().Done():
			close(b.gone)
		case <-b.release:
		}
	}
}

// newBlockingFake serves one blocker step; the handler is released at test end,
// before the server closes.
func newBlockingFake(t *testing.T, data ...string) (*blocker, *Model) {
	t.Helper()
	b := newBlocker()
	_, m := newFake(t, 0, b.step(data...))
	t.Cleanup(func() { close(b.release) }) // cleanups run last-in first-out
	return b, m
}
