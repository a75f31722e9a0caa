package openaitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func done(stop string, u llm.Usage) llm.Event {
	return llm.Event{Kind: llm.EventDone, StopReason: stop, Usage: u}
}

// simpleBody is a valid request body; stream and includeUsage as given.
func simpleBody(stream, includeUsage bool) map[string]any {
	b := map[string]any{
		"model":    "gpt-test",
		"messages": []any{map[string]any{"role": "user", "content": "hi"}},
		"stream":   stream,
	}
	if includeUsage {
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	return b
}

func post(t *testing.T, s *Server, body any, header ...string) *http.Response {
	t.Helper()
	return llmtest.Post(t, s.Client(), s.URL()+"/chat/completions", body, header...)
}

// sse is a parsed event stream.
type sse struct {
	chunks []chunk
	errors []apiError // data lines holding an error object
	done   bool       // saw data: [DONE]
	err    error      // read error (a cut connection)
}

func readSSE(t *testing.T, resp *http.Response) sse {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	var out sse
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			if line != "" {
				t.Fatalf("unexpected SSE line %q", line)
			}
			continue
		}
		if out.done {
			t.Fatalf("data after [DONE]: %q", data)
		}
		if data == "[DONE]" {
			out.done = true
			continue
		}
		if strings.HasPrefix(data, `{"error"`) {
			var e apiError
			if err := json.Unmarshal([]byte(data), &e); err != nil {
				t.Fatal(err)
			}
			out.errors = append(out.errors, e)
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		out.chunks = append(out.chunks, c)
	}
	out.err = sc.Err()
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
	if e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("error body lacks message or type: %+v", e)
	}
	return e
}

func TestStreamText(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{llmtest.Text("Hel"), llmtest.Text("lo"), done(llm.StopEndTurn, llm.Usage{InputTokens: 10, OutputTokens: 3})}}
	s := New(m)
	defer s.Close()

	got := readSSE(t, post(t, s, simpleBody(true, true)))
	if got.err != nil || !got.done || len(got.errors) > 0 {
		t.Fatalf("stream: err=%v done=%v errors=%v", got.err, got.done, got.errors)
	}
	// role, 2 text deltas, finish, usage
	if len(got.chunks) != 5 {
		t.Fatalf("got %d chunks, want 5: %+v", len(got.chunks), got.chunks)
	}
	for _, c := range got.chunks {
		if c.ID != got.chunks[0].ID || c.Object != "chat.completion.chunk" || c.Model != "gpt-test" {
			t.Errorf("chunk envelope %+v", c)
		}
	}
	if d := got.chunks[0].Choices[0].Delta; d.Role != "assistant" {
		t.Errorf("first chunk delta %+v, want role assistant", d)
	}
	var content string
	for _, c := range got.chunks[:3] {
		if c.Choices[0].FinishReason != nil {
			t.Errorf("finish_reason before the end: %+v", c)
		}
		if c.Choices[0].Delta.Content != nil {
			content += *c.Choices[0].Delta.Content
		}
	}
	if content != "Hello" {
		t.Errorf("content %q, want Hello", content)
	}
	if fr := got.chunks[3].Choices[0].FinishReason; fr == nil || *fr != "stop" {
		t.Errorf("finish chunk %+v", got.chunks[3])
	}
	last := got.chunks[4]
	if len(last.Choices) != 0 || last.Usage == nil {
		t.Fatalf("usage chunk %+v", last)
	}
	if diff := cmp.Diff(usage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13}, *last.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestStreamToolCalls(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{
		llmtest.Text("Looking."),
		llmtest.ToolCall("call_1", "read_file", `{"file_path":"é/ü.txt"}`),
		llmtest.ToolCall("", "glob", `{"pattern":"**/*.go"}`),
		done(llm.StopToolUse, llm.Usage{}),
	}}
	s := New(m)
	defer s.Close()

	got := readSSE(t, post(t, s, simpleBody(true, false)))
	if got.err != nil || !got.done {
		t.Fatalf("stream: err=%v done=%v", got.err, got.done)
	}
	type acc struct {
		id, typ, name, args string
		pieces              int
	}
	calls := map[int]*acc{}
	var finish []string
	for _, c := range got.chunks {
		if c.Usage != nil {
			t.Errorf("usage chunk without stream_options.include_usage: %+v", c)
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				finish = append(finish, *ch.FinishReason)
			}
			for _, tc := range ch.Delta.ToolCalls {
				a := calls[tc.Index]
				if a == nil {
					a = &acc{id: tc.ID, typ: tc.Type, name: tc.Function.Name}
					calls[tc.Index] = a
				} else if tc.ID != "" || tc.Function.Name != "" {
					t.Errorf("later piece of call %d repeats id or name: %+v", tc.Index, tc)
				}
				a.args += tc.Function.Arguments
				a.pieces++
			}
		}
	}
	want := map[int]*acc{
		0: {id: "call_1", typ: "function", name: "read_file", args: `{"file_path":"é/ü.txt"}`, pieces: 2},
		1: {id: "call_mock_1", typ: "function", name: "glob", args: `{"pattern":"**/*.go"}`, pieces: 2},
	}
	if diff := cmp.Diff(want, calls, cmp.AllowUnexported(acc{})); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"tool_calls"}, finish); diff != "" {
		t.Errorf("finish reasons (-want +got):\n%s", diff)
	}
}

func TestRequestConversion(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{done(llm.StopEndTurn, llm.Usage{})}}
	s := New(m)
	defer s.Close()

	body := `{
	  "model": "gpt-test", "stream": true,
	  "messages": [
	    {"role": "system", "content": "You are stoke."},
	    {"role": "user", "content": "list files"},
	    {"role": "assistant", "content": null, "tool_calls": [
	      {"id": "c1", "type": "function", "function": {"name": "glob", "arguments": "{\"pattern\":\"*\"}"}},
	      {"id": "c2", "type": "function", "function": {"name": "nope", "arguments": ""}}
	    ]},
	    {"role": "tool", "tool_call_id": "c1", "content": "a.go"},
	    {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "unknown tool"}]},
	    {"role": "user", "content": [{"type": "text", "text": "and "}, {"type": "text", "text": "then?"}]},
	    {"role": "assistant", "content": "done"},
	    {"role": "user", "content": "thanks"}
	  ],
	  "tools": [
	    {"type": "function", "function": {"name": "task", "description": "run a subagent", "parameters": {"type": "object"}}},
	    {"type": "function", "function": {"name": "glob", "parameters": {"type": "object"}}}
	  ]
	}`
	if resp := post(t, s, body); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	want := &llm.Request{
		Agent:  "parent",
		Model:  "gpt-test",
		System: "You are stoke.",
		Messages: []llm.Message{
			llm.UserText("list files"),
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Type: llm.BlockToolUse, ID: "c1", Name: "glob", Input: json.RawMessage(`{"pattern":"*"}`)},
				{Type: llm.BlockToolUse, ID: "c2", Name: "nope", Input: json.RawMessage(`{}`)},
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolUseID: "c1", Content: "a.go"},
				{Type: llm.BlockToolResult, ToolUseID: "c2", Content: "unknown tool"},
				llm.TextBlock("and then?"), // a user message after tool results joins them
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}},
			llm.UserText("thanks"),
		},
		Tools: []llm.ToolSpec{
			{Name: "task", Description: "run a subagent", Parameters: json.RawMessage(`{"type": "object"}`)},
			{Name: "glob", Parameters: json.RawMessage(`{"type": "object"}`)},
		},
	}
	reqs := m.Requests()
	if len(reqs) != 1 {
		t.Fatalf("model saw %d requests, want 1", len(reqs))
	}
	if diff := cmp.Diff(want, reqs[0]); diff != "" {
		t.Errorf("llm.Request (-want +got):\n%s", diff)
	}
	if got := s.Requests(); len(got) != 1 || !bytes.Equal(got[0], []byte(body)) {
		t.Errorf("Requests() = %q, want the raw body", got)
	}
}

func TestRejectsWhatTheAPIRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
	}{
		{"not json", `{"model":`},
		{"no model", `{"messages":[{"role":"user","content":"hi"}]}`},
		{"no messages", `{"model":"m","messages":[]}`},
		{"unknown role", `{"model":"m","messages":[{"role":"robot","content":"hi"}]}`},
		{"unanswered tool call", `{"model":"m","messages":[{"role":"user","content":"hi"},
			{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"x","arguments":"{}"}}]},
			{"role":"user","content":"next"}]}`},
		{"unanswered at the end", `{"model":"m","messages":[{"role":"user","content":"hi"},
			{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"x","arguments":"{}"}}]}]}`},
		{"tool answers nothing", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c9","content":"x"}]}`},
		{"bad tool name", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"a b"}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &llmtest.Backend{Events: []llm.Event{done(llm.StopEndTurn, llm.Usage{})}}
			s := New(m)
			defer s.Close()
			e := readError(t, post(t, s, tt.body), http.StatusBadRequest)
			if e.Error.Type != "invalid_request_error" {
				t.Errorf("error type %q", e.Error.Type)
			}
			if n := len(m.Requests()); n != 0 {
				t.Errorf("model called %d times", n)
			}
			if n := len(s.Requests()); n != 1 {
				t.Errorf("recorded %d requests, want 1", n)
			}
		})
	}
}

func TestAPIKey(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{llmtest.Text("ok"), done(llm.StopEndTurn, llm.Usage{})}}
	s := New(m, WithAPIKey("sk-test"))
	defer s.Close()

	for _, header := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "sk-test"}} {
		e := readError(t, post(t, s, simpleBody(true, false), header...), http.StatusUnauthorized)
		if e.Error.Code == nil || *e.Error.Code != "invalid_api_key" {
			t.Errorf("header %q: error %+v, want code invalid_api_key", header, e.Error)
		}
	}
	if got := readSSE(t, post(t, s, simpleBody(true, false), "Authorization", "Bearer sk-test")); !got.done {
		t.Errorf("authorised request: stream not done: %+v", got)
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("model called %d times, want 1", n)
	}
	if n := len(s.Requests()); n != 4 {
		t.Errorf("recorded %d requests, want 4", n)
	}
}

func TestFailFirst(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status   int
		wantType string
	}{
		{http.StatusInternalServerError, "server_error"},
		{http.StatusServiceUnavailable, "server_error"},
		{http.StatusTooManyRequests, "requests"},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			t.Parallel()
			m := &llmtest.Backend{Events: []llm.Event{llmtest.Text("ok"), done(llm.StopEndTurn, llm.Usage{})}}
			s := New(m, WithFailFirst(2, tt.status))
			defer s.Close()
			for range 2 {
				resp := post(t, s, simpleBody(true, false))
				if e := readError(t, resp, tt.status); e.Error.Type != tt.wantType {
					t.Errorf("error type %q, want %q", e.Error.Type, tt.wantType)
				}
				if resp.Header.Get("Retry-After-Ms") == "" {
					t.Error("no Retry-After-Ms header")
				}
			}
			if got := readSSE(t, post(t, s, simpleBody(true, false))); !got.done {
				t.Errorf("third request: stream not done")
			}
			if n := len(s.Requests()); n != 3 {
				t.Errorf("recorded %d requests, want 3", n)
			}
			if n := len(m.Requests()); n != 1 {
				t.Errorf("model called %d times, want 1", n)
			}
		})
	}
}

func TestModelError(t *testing.T) {
	t.Parallel()
	t.Run("before the first event", func(t *testing.T) {
		t.Parallel()
		s := New(&llmtest.Backend{Err: errors.New("scenario has no rule")})
		defer s.Close()
		for _, stream := range []bool{true, false} {
			e := readError(t, post(t, s, simpleBody(stream, false)), http.StatusInternalServerError)
			if e.Error.Type != "server_error" || !strings.Contains(e.Error.Message, "scenario has no rule") {
				t.Errorf("stream=%v: error %+v", stream, e.Error)
			}
		}
	})
	t.Run("provider error keeps its status", func(t *testing.T) {
		t.Parallel()
		s := New(&llmtest.Backend{Err: &llm.ProviderError{Provider: "scripted", StatusCode: http.StatusTooManyRequests, Message: "slow down"}})
		defer s.Close()
		for _, stream := range []bool{true, false} {
			e := readError(t, post(t, s, simpleBody(stream, false)), http.StatusTooManyRequests)
			if e.Error.Type != "requests" || !strings.Contains(e.Error.Message, "slow down") {
				t.Errorf("stream=%v: error %+v", stream, e.Error)
			}
		}
	})
	t.Run("mid stream", func(t *testing.T) {
		t.Parallel()
		s := New(&llmtest.Backend{Events: []llm.Event{llmtest.Text("partial")}, Err: errors.New("boom")})
		defer s.Close()
		got := readSSE(t, post(t, s, simpleBody(true, true)))
		if got.done || len(got.errors) != 1 || !strings.Contains(got.errors[0].Error.Message, "boom") {
			t.Errorf("want one error event and no [DONE], got %+v", got)
		}
	})
	t.Run("no final event", func(t *testing.T) {
		t.Parallel()
		s := New(&llmtest.Backend{Events: []llm.Event{llmtest.Text("partial")}})
		defer s.Close()
		got := readSSE(t, post(t, s, simpleBody(true, true)))
		if got.done || len(got.errors) != 1 {
			t.Errorf("want one error event and no [DONE], got %+v", got)
		}
	})
}

func TestNonStream(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{
		llmtest.Text("Reading "), llmtest.Text("it."),
		llmtest.ToolCall("c1", "read_file", `{"file_path":"a"}`),
		done(llm.StopToolUse, llm.Usage{InputTokens: 4, CacheReadInputTokens: 6, OutputTokens: 2}),
	}}
	s := New(m)
	defer s.Close()

	resp := post(t, s, simpleBody(false, false))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var got completion
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := completion{
		ID: got.ID, Object: "chat.completion", Created: got.Created, Model: "gpt-test",
		Choices: []completionChoice{{
			Message: completionMessage{Role: "assistant", Content: new("Reading it."), ToolCalls: []toolCall{
				{ID: "c1", Type: "function", Function: functionCall{Name: "read_file", Arguments: `{"file_path":"a"}`}},
			}},
			FinishReason: "tool_calls",
		}},
		Usage: usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12, PromptTokensDetails: &promptDetail{CachedTokens: 6}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("completion (-want +got):\n%s", diff)
	}
}

func TestCachedTokens(t *testing.T) {
	t.Parallel()
	m := &llmtest.Backend{Events: []llm.Event{llmtest.Text("ok"), done(llm.StopEndTurn, llm.Usage{InputTokens: 20, OutputTokens: 1})}}
	s := New(m, WithCachedTokens(7))
	defer s.Close()

	got := readSSE(t, post(t, s, simpleBody(true, true)))
	last := got.chunks[len(got.chunks)-1]
	want := &usage{PromptTokens: 20, CompletionTokens: 1, TotalTokens: 21, PromptTokensDetails: &promptDetail{CachedTokens: 7}}
	if diff := cmp.Diff(want, last.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestUnknownPath(t *testing.T) {
	t.Parallel()
	s := New(&llmtest.Backend{})
	defer s.Close()
	resp, err := s.Client().Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	readError(t, resp, http.StatusNotFound)
}
