package anthropictest

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

func done(stop string, u llm.Usage) llm.Event {
	return llm.Event{Kind: llm.EventDone, StopReason: stop, Usage: u}
}

type obj = map[string]any

// simpleBody is a valid request body.
func simpleBody(stream bool) obj {
	return obj{
		"model": "claude-test", "max_tokens": 100, "stream": stream,
		"messages": []any{obj{"role": "user", "content": "hi"}},
	}
}

// post sends body (a string, or a value to marshal) with an anthropic-version header
// and the given extra header pairs.
func post(t *testing.T, s *Server, body any, header ...string) *http.Response {
	t.Helper()
	return llmtest.Post(t, s.Client(), s.URL()+"/v1/messages", body, append([]string{"anthropic-version", "2023-06-01"}, header...)...)
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string
	data gjson.Result
}

// readSSE parses an event stream; err is the read error of a cut connection.
func readSSE(t *testing.T, resp *http.Response) (events []sseEvent, err error) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	var name string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			name = ""
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data := strings.TrimPrefix(line, "data: ")
			if !gjson.Valid(data) {
				t.Fatalf("event %s: invalid JSON %q", name, data)
			}
			r := gjson.Parse(data)
			if got := r.Get("type").String(); got != name {
				t.Errorf("event %q carries type %q", name, got)
			}
			events = append(events, sseEvent{name: name, data: r})
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	return events, sc.Err()
}

func names(events []sseEvent) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.name
	}
	return out
}

func readError(t *testing.T, resp *http.Response, status int) apiError {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d", resp.StatusCode, status)
	}
	var e apiError
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatalf("error body: %v", err)
	}
	if e.Type != "error" || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("error body lacks type or message: %+v", e)
	}
	return e
}

func TestStream(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{
		llmtest.Text("Hel"), llmtest.Text("lo"),
		llmtest.ToolCall("toolu_1", "read_file", `{"file_path":"a.go"}`),
		llmtest.ToolCall("", "glob", `{"pattern":"*.gö"}`),
		done(llm.StopEndTurn, llm.Usage{OutputTokens: 7, InputTokens: 999}),
	}}
	s := New(m)
	defer s.Close()
	events, err := readSSE(t, post(t, s, simpleBody(true)))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	want := []string{
		"message_start", "ping",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop",
	}
	if diff := cmp.Diff(want, names(events)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
	start := events[0].data.Get("message")
	if start.Get("role").String() != "assistant" || start.Get("model").String() != "claude-test" ||
		!strings.HasPrefix(start.Get("id").String(), "msg_") || start.Get("usage.input_tokens").Int() == 999 {
		t.Errorf("message_start = %s", start.Raw)
	}
	if got := events[2].data.Get("content_block.type").String(); got != "text" {
		t.Errorf("block 0 type %q, want text", got)
	}
	if got := events[3].data.Get("delta.text").String() + events[4].data.Get("delta.text").String(); got != "Hello" {
		t.Errorf("text = %q, want Hello", got)
	}
	for i, tc := range []struct{ id, name, input string }{
		{"toolu_1", "read_file", `{"file_path":"a.go"}`},
		{"toolu_mock_", "glob", `{"pattern":"*.gö"}`},
	} {
		at := 6 + 4*i
		cb := events[at].data
		if cb.Get("index").Int() != int64(i+1) || cb.Get("content_block.type").String() != "tool_use" ||
			!strings.HasPrefix(cb.Get("content_block.id").String(), tc.id) || cb.Get("content_block.name").String() != tc.name ||
			cb.Get("content_block.input").Raw != "{}" {
			t.Errorf("tool block %d start = %s", i, cb.Raw)
		}
		first, second := events[at+1].data.Get("delta.partial_json").String(), events[at+2].data.Get("delta.partial_json").String()
		if first+second != tc.input || first == "" || second == "" {
			t.Errorf("tool block %d input pieces %q + %q, want two halves of %s", i, first, second, tc.input)
		}
	}
	md := events[14].data
	if md.Get("delta.stop_reason").String() != "tool_use" || md.Get("usage.output_tokens").Int() != 7 {
		t.Errorf("message_delta = %s, want stop_reason tool_use (calls were made) and output_tokens 7", md.Raw)
	}
}

func TestNonStream(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{
		llmtest.Text("Let me "), llmtest.Text("look."), llmtest.ToolCall("toolu_1", "glob", `{}`), done(llm.StopToolUse, llm.Usage{OutputTokens: 4}),
	}}
	s := New(m)
	defer s.Close()
	resp := post(t, s, simpleBody(false))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	checks := map[string]string{
		"type": "message", "role": "assistant", "model": "claude-test", "stop_reason": "tool_use",
		"content.#": "2", "content.0.type": "text", "content.0.text": "Let me look.",
		"content.1.type": "tool_use", "content.1.id": "toolu_1", "content.1.name": "glob", "content.1.input": "{}",
		"usage.output_tokens": "4",
	}
	for path, want := range checks {
		if got := gjson.Get(body, path).String(); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
}

func TestRequestConversion(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{done(llm.StopEndTurn, llm.Usage{})}}
	s := New(m)
	defer s.Close()
	body := `{"model":"claude-x","max_tokens":10,"system":"You are a subagent.\nAgent type: explorer.",
	"tools":[{"name":"read_file","description":"Read.","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}}},"cache_control":{"type":"ephemeral"}}],
	"messages":[
		{"role":"user","content":"first"},
		{"role":"user","content":[{"type":"text","text":"merged","cache_control":{"type":"ephemeral"}}]},
		{"role":"assistant","content":[{"type":"text","text":"ok"},{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"file_path": "a.go"}}]},
		{"role":"user","content":[
			{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"line 1"},{"type":"text","text":"line 2"}],"is_error":true},
			{"type":"text","text":"and now?"}]},
		{"role":"assistant","content":"fine"},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"nope"}]}
	]}`
	// The last message answers no tool call: rejected. Without it, accepted.
	readError(t, post(t, s, body), http.StatusBadRequest)
	body = strings.Replace(body, `,
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"nope"}]}`, "", 1)
	if resp := post(t, s, body); resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("model saw %d requests, want 1 (the rejected one must not reach it)", len(reqs))
	}
	want := &llm.Request{
		Agent:  "explorer",
		Model:  "claude-x",
		System: "You are a subagent.\nAgent type: explorer.",
		Tools: []llm.ToolSpec{{Name: "read_file", Description: "Read.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`)}},
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("first"), llm.TextBlock("merged")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok"),
				{Type: llm.BlockToolUse, ID: "toolu_1", Name: "read_file", Input: json.RawMessage(`{"file_path":"a.go"}`)}}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolUseID: "toolu_1", Content: "line 1\n\nline 2", IsError: true},
				llm.TextBlock("and now?")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("fine")}},
		},
	}
	if diff := cmp.Diff(want, reqs[0]); diff != "" {
		t.Errorf("llm.Request (-want +got):\n%s", diff)
	}
}

func TestRejectsWhatTheAPIRejects(t *testing.T) {
	t.Parallel()
	msgs := func(m ...any) []any { return m }
	user := func(content any) obj { return obj{"role": "user", "content": content} }
	cc := obj{"type": "ephemeral"}
	textCC := func(s string) obj { return obj{"type": "text", "text": s, "cache_control": cc} }
	tests := []struct {
		name     string
		body     obj
		contains string
	}{
		{"no model", obj{"max_tokens": 1, "messages": msgs(user("hi"))}, "model"},
		{"no max_tokens", obj{"model": "m", "messages": msgs(user("hi"))}, "max_tokens"},
		{"no messages", obj{"model": "m", "max_tokens": 1, "messages": msgs()}, "messages"},
		{"bad role", obj{"model": "m", "max_tokens": 1, "messages": msgs(obj{"role": "system", "content": "x"})}, "role"},
		{"empty text", obj{"model": "m", "max_tokens": 1, "messages": msgs(user([]any{obj{"type": "text", "text": ""}}))}, "non-empty"},
		{"empty string content", obj{"model": "m", "max_tokens": 1, "messages": msgs(user(""))}, "non-empty"},
		{"unknown block", obj{"model": "m", "max_tokens": 1, "messages": msgs(user([]any{obj{"type": "search_result"}}))}, "search_result"},
		{"image without a source", obj{"model": "m", "max_tokens": 1, "messages": msgs(user([]any{obj{"type": "image"}}))}, "source"},
		{"unanswered tool_use", obj{"model": "m", "max_tokens": 1, "messages": msgs(user("hi"),
			obj{"role": "assistant", "content": []any{obj{"type": "tool_use", "id": "toolu_1", "name": "t", "input": obj{}}}},
			user("what?"))}, "toolu_1"},
		{"tool_use left last", obj{"model": "m", "max_tokens": 1, "messages": msgs(user("hi"),
			obj{"role": "assistant", "content": []any{obj{"type": "tool_use", "id": "toolu_2", "name": "t", "input": obj{}}}})}, "toolu_2"},
		{"stray tool_result", obj{"model": "m", "max_tokens": 1, "messages": msgs(
			user([]any{obj{"type": "tool_result", "tool_use_id": "toolu_3", "content": "x"}}))}, "toolu_3"},
		{"bad tool", obj{"model": "m", "max_tokens": 1, "messages": msgs(user("hi")),
			"tools": []any{obj{"name": "bad name", "input_schema": obj{"type": "object"}}}}, "bad name"},
		{"tool schema not an object", obj{"model": "m", "max_tokens": 1, "messages": msgs(user("hi")),
			"tools": []any{obj{"name": "t", "input_schema": obj{"type": "string"}}}}, "input_schema"},
		{"five breakpoints", obj{"model": "m", "max_tokens": 1, "system": []any{textCC("a"), textCC("b")},
			"messages": msgs(user([]any{textCC("c"), textCC("d"), textCC("e")}))}, "Found 5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &llmtest.Backend{Events: []llm.Event{done(llm.StopEndTurn, llm.Usage{})}}
			s := New(m)
			defer s.Close()
			e := readError(t, post(t, s, tt.body), http.StatusBadRequest)
			if e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tt.contains) {
				t.Errorf("error = %+v, want an invalid_request_error mentioning %q", e.Error, tt.contains)
			}
			if n := len(m.Requests()); n != 0 {
				t.Errorf("model saw %d requests, want none", n)
			}
		})
	}
}

func TestHeaders(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{done(llm.StopEndTurn, llm.Usage{})}}
	s := New(m, WithAPIKey("sk-right"))
	t.Cleanup(s.Close) // after the parallel subtests
	tests := []struct {
		name   string
		header []string
		status int
	}{
		{"no key", nil, http.StatusUnauthorized},
		{"wrong key", []string{"x-api-key", "sk-wrong"}, http.StatusUnauthorized},
		{"bearer instead of x-api-key", []string{"Authorization", "Bearer sk-right"}, http.StatusUnauthorized},
		{"no anthropic-version", []string{"x-api-key", "sk-right", "anthropic-version", ""}, http.StatusBadRequest},
		{"right key", []string{"x-api-key", "sk-right"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := post(t, s, simpleBody(false), tt.header...)
			if tt.status == http.StatusOK {
				if resp.StatusCode != http.StatusOK {
					t.Errorf("status %d, want 200", resp.StatusCode)
				}
				return
			}
			e := readError(t, resp, tt.status)
			if tt.status == http.StatusUnauthorized && e.Error.Type != "authentication_error" {
				t.Errorf("error type %q, want authentication_error", e.Error.Type)
			}
		})
	}
}

func TestFailFirst(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{llmtest.Text("ok"), done(llm.StopEndTurn, llm.Usage{})}}
	s := New(m, WithFailFirst(2, 529))
	defer s.Close()
	for i := range 2 {
		resp := post(t, s, simpleBody(true))
		if e := readError(t, resp, 529); e.Error.Type != "overloaded_error" {
			t.Errorf("request %d: error type %q, want overloaded_error", i, e.Error.Type)
		}
		if resp.Header.Get("retry-after-ms") == "" {
			t.Errorf("request %d: no retry-after-ms header", i)
		}
	}
	events, err := readSSE(t, post(t, s, simpleBody(true)))
	if err != nil || events[len(events)-1].name != "message_stop" {
		t.Errorf("third request: %v, %v; want a complete stream", names(events), err)
	}
	if got := len(s.Requests()); got != 3 {
		t.Errorf("recorded %d requests, want 3", got)
	}
	if got := len(m.Requests()); got != 1 {
		t.Errorf("model saw %d requests, want 1", got)
	}
}

func TestModelError(t *testing.T) {
	t.Parallel()
	t.Run("before the first event", func(t *testing.T) {
		t.Parallel()
		m := &llmtest.Backend{Err: &llm.ProviderError{Provider: "scripted", StatusCode: 429, Message: "slow down"}}
		s := New(m)
		defer s.Close()
		e := readError(t, post(t, s, simpleBody(true)), http.StatusTooManyRequests)
		if e.Error.Type != "rate_limit_error" || !strings.Contains(e.Error.Message, "slow down") {
			t.Errorf("error = %+v", e.Error)
		}
	})
	t.Run("mid-stream", func(t *testing.T) {
		t.Parallel()
		m := &llmtest.Backend{Events: []llm.Event{llmtest.Text("half")}, Err: errors.New("boom")}
		s := New(m)
		defer s.Close()
		events, err := readSSE(t, post(t, s, simpleBody(true)))
		if err != nil {
			t.Fatal(err)
		}
		last := events[len(events)-1]
		if last.name != "error" || last.data.Get("error.type").String() != "api_error" ||
			!strings.Contains(last.data.Get("error.message").String(), "boom") {
			t.Errorf("last event = %s %s, want an api_error event", last.name, last.data.Raw)
		}
	})
	t.Run("no final event", func(t *testing.T) {
		t.Parallel()
		m := &llmtest.Backend{Events: []llm.Event{llmtest.Text("half")}}
		s := New(m)
		defer s.Close()
		readError(t, post(t, s, simpleBody(false)), http.StatusInternalServerError)
	})
}

func TestUnknownPath(t *testing.T) {
	t.Parallel()
	s := New(&llmtest.Backend{})
	defer s.Close()
	resp, err := s.Client().Get(s.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if e := readError(t, resp, http.StatusNotFound); e.Error.Type != "not_found_error" {
		t.Errorf("error type %q, want not_found_error", e.Error.Type)
	}
}
