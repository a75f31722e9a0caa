package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Backend is a model for the tests of mock servers and providers: every call records
// its request, then yields Reply's events and error (by default Events, then Err, if
// set). With Hold, a call that yielded them all waits until its context ends (the
// client went away), and says so on Released. Safe for concurrent use; set the fields
// before the first call.
type Backend struct {
	Events []llm.Event
	Err    error
	// Reply, when set, answers each request in place of Events and Err.
	Reply func(*llm.Request) ([]llm.Event, error)
	Hold  bool

	once              sync.Once
	arrived, released chan struct{} // one value per call, up to their buffer; sends never block

	mu   sync.Mutex
	reqs []*llm.Request
}

// NewBackend returns a Backend that answers every call with events, and holds after
// them if hold.
func NewBackend(hold bool, events ...llm.Event) *Backend {
	return &Backend{Events: events, Hold: hold}
}

func (b *Backend) init() {
	b.once.Do(func() {
		b.arrived, b.released = make(chan struct{}, 64), make(chan struct{}, 64)
	})
}

// Arrived gets a value when a call starts.
func (b *Backend) Arrived() <-chan struct{} { b.init(); return b.arrived }

// Released gets a value when a held call's context ends.
func (b *Backend) Released() <-chan struct{} { b.init(); return b.released }

// Name implements llm.Model.
func (b *Backend) Name() string { return "backend" }

// Generate implements llm.Model.
func (b *Backend) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	b.init()
	return func(yield func(llm.Event, error) bool) {
		b.mu.Lock()
		b.reqs = append(b.reqs, req)
		b.mu.Unlock()
		signal(b.arrived)
		events, err := b.Events, b.Err
		if b.Reply != nil {
			events, err = b.Reply(req)
		}
		for _, ev := range events {
			if !yield(ev, nil) {
				return
			}
		}
		if err != nil {
			yield(llm.Event{}, err)
			return
		}
		if b.Hold {
			<-ctx.Done()
			signal(b.released)
		}
	}
}

// Requests returns the requests received so far, in order.
func (b *Backend) Requests() []*llm.Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*llm.Request(nil), b.reqs...)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Text is a text delta event.
func Text(s string) llm.Event { return llm.Event{Kind: llm.EventTextDelta, Text: s} }

// ToolCall is a tool call event; input is its JSON.
func ToolCall(id, name, input string) llm.Event {
	return llm.Event{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(input)}}
}

// Post sends body (a string, bytes, or a value to marshal as JSON) to url with the
// given header pairs, for tests that speak to a mock server directly. The response
// body is closed when the test ends.
func Post(t testing.TB, c *http.Client, url string, body any, header ...string) *http.Response {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case string:
		raw = []byte(b)
	case []byte:
		raw = b
	default:
		var err error
		if raw, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// AgentTools is a tool list of a realistic size for cache and request-size tests: six
// workspace tools, each with a description and a JSON Schema of typical length.
func AgentTools() []llm.ToolSpec {
	var tools []llm.ToolSpec
	for _, name := range []string{"read_file", "write_file", "edit", "glob", "grep", "shell"} {
		tools = append(tools, llm.ToolSpec{
			Name:        name,
			Description: strings.Repeat("Does "+name+" in the workspace. ", 12),
			Parameters: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string","description":"` +
				strings.Repeat("a path relative to the workspace root ", 4) + `"},"limit":{"type":"integer"}},"required":["file_path"]}`),
		})
	}
	return tools
}
