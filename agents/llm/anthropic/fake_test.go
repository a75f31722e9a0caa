package anthropic

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

const testKey = "sk-ant-test-123"

// step answers one HTTP request of a scripted fake endpoint.
type step func(w http.ResponseWriter, r *http.Request)

// recorded is one request the fake endpoint received.
type recorded struct {
	path   string
	header http.Header
	body   []byte
}

// fake is a scripted Messages API endpoint on loopback: each request consumes the
// next step, extra requests fail the test, and leftover steps fail it at cleanup.
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
	f.reqs = append(f.reqs, recorded{path: r.URL.Path, header: r.Header.Clone(), body: body})
	n := len(f.reqs)
	var s step
	if len(f.steps) > 0 {
		s, f.steps = f.steps[0], f.steps[1:]
	}
	f.mu.Unlock()
	if r.URL.Path != "/v1/messages" {
		f.t.Errorf("request %d: path %q, want /v1/messages", n, r.URL.Path)
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
	return newFakeWith(t, func(c *Config) { c.MaxRetries = retries }, steps...)
}

// newFakeWith is newFake with the Model's Config adjusted by adjust.
func newFakeWith(t *testing.T, adjust func(*Config), steps ...step) (*fake, *Model) {
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
	cfg := Config{APIKey: testKey, BaseURL: srv.URL, Model: "claude-default", HTTPClient: srv.Client()}
	adjust(&cfg)
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return f, m
}

// event is one server-sent event, formatted.
func event(name string, data any) string {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("event: %s\ndata: %s\n\n", name, b)
}

type obj = map[string]any

// messageStart opens a message with input-side usage.
func messageStart(input, cacheWrite, cacheRead int) string {
	return event("message_start", obj{"type": "message_start", "message": obj{
		"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-served", "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": obj{"input_tokens": input, "cache_creation_input_tokens": cacheWrite,
			"cache_read_input_tokens": cacheRead, "output_tokens": 1},
	}})
}

func ping() string { return event("ping", obj{"type": "ping"}) }

func textStart(i int) string {
	return event("content_block_start", obj{"type": "content_block_start", "index": i,
		"content_block": obj{"type": "text", "text": ""}})
}

func textDelta(i int, s string) string {
	return event("content_block_delta", obj{"type": "content_block_delta", "index": i,
		"delta": obj{"type": "text_delta", "text": s}})
}

func toolStart(i int, id, name string) string {
	return event("content_block_start", obj{"type": "content_block_start", "index": i,
		"content_block": obj{"type": "tool_use", "id": id, "name": name, "input": obj{}}})
}

func jsonDelta(i int, s string) string {
	return event("content_block_delta", obj{"type": "content_block_delta", "index": i,
		"delta": obj{"type": "input_json_delta", "partial_json": s}})
}

func blockStop(i int) string {
	return event("content_block_stop", obj{"type": "content_block_stop", "index": i})
}

// messageDelta carries the stop reason and usage (output_tokens, plus extra keys).
func messageDelta(stop string, usage obj) string {
	return event("message_delta", obj{"type": "message_delta",
		"delta": obj{"stop_reason": stop, "stop_sequence": nil}, "usage": usage})
}

func messageStop() string { return event("message_stop", obj{"type": "message_stop"}) }

func errorEvent(typ, msg string) string {
	return event("error", obj{"type": "error", "error": obj{"type": typ, "message": msg}})
}

// writeSSE writes the formatted events and flushes them.
func writeSSE(w http.ResponseWriter, events ...string) {
	for _, e := range events {
		fmt.Fprint(w, e)
	}
	w.(http.Flusher).Flush()
}

// sse answers with an event stream of the given formatted events.
func sse(events ...string) step {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		writeSSE(w, events...)
	}
}

// endTurn is a minimal complete answer.
func endTurn() step {
	return sse(messageStart(1, 0, 0), messageDelta("end_turn", obj{"output_tokens": 1}), messageStop())
}

// apiError answers with an Anthropic-style error body.
func apiError(status int, typ, msg string) step {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("retry-after-ms", "1")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
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

func (b *blocker) step(events ...string) step {
	return func(w http.ResponseWriter, r *http.Request) {
		close(b.arrived)
		if len(events) > 0 {
			w.Header().Set("Content-Type", "text/event-stream")
			writeSSE(w, events...)
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
func newBlockingFake(t *testing.T, events ...string) (*blocker, *Model) {
	t.Helper()
	b := newBlocker()
	_, m := newFake(t, 0, b.step(events...))
	t.Cleanup(func() { close(b.release) }) // cleanups run last-in first-out
	return b, m
}
