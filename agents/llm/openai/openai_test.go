package openai

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
	"github.com/stoke-cli/stoke/agents/llm/openai/openaitest"
)

// The behaviour every provider shares is checked by the conformance suite
// (suite_test.go); this file holds what is particular to chat completions.

const testKey = "sk-test-123"

func hello() *llm.Request {
	return &llm.Request{Agent: "parent", Messages: []llm.Message{llm.UserText("hello")}}
}

// serve starts a mock endpoint answering "ok" to every call, with opts, and returns it
// with a Model talking to it (no SDK retries).
func serve(t *testing.T, opts ...openaitest.Option) (*openaitest.Server, *Model) {
	t.Helper()
	return serveModel(t, llmtest.EndTurn("ok"), opts...)
}

// serveModel is serve with the endpoint answering from backend.
func serveModel(t *testing.T, backend llm.Model, opts ...openaitest.Option) (*openaitest.Server, *Model) {
	t.Helper()
	srv := openaitest.New(backend, append([]openaitest.Option{openaitest.WithAPIKey(testKey)}, opts...)...)
	t.Cleanup(srv.Close)
	m, err := New(Config{APIKey: testKey, BaseURL: srv.URL(), Model: "m-default", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return srv, m
}

func richRequest() *llm.Request {
	schema := json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string","description":"path"},"limit":{"type":"integer","maximum":12345678901234567890}},"required":["file_path"]}`)
	return &llm.Request{
		Agent:  "parent",
		Model:  "m-override",
		System: "You are stoke.",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hi"), llm.TextBlock("there")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{
				llm.TextBlock("Looking."),
				{Type: llm.BlockToolUse, ID: "call_1", Name: "read_file", Input: json.RawMessage(`{"file_path":"a.go"}`)},
				{Type: llm.BlockToolUse, ID: "call_2", Name: "list_agents"},
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolUseID: "call_1", Content: "package a"},
				{Type: llm.BlockToolResult, ToolUseID: "call_2", Content: "boom", IsError: true},
				llm.TextBlock("now fix it"),
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{
				{Type: llm.BlockToolUse, ID: "call_3", Name: "glob", Input: json.RawMessage(`{"pattern":"*.go"}`)},
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolUseID: "call_3", Content: "a.go"},
			}},
		},
		Tools: []llm.ToolSpec{
			{Name: "read_file", Description: "Read a file.", Parameters: schema},
			{Name: "list_agents", Description: "List agents."},
		},
	}
}

func TestRequestBody(t *testing.T) {
	t.Parallel()
	srv, m := serve(t)
	for _, req := range []*llm.Request{richRequest(), richRequest(), hello()} {
		if _, err := llmtest.Collect(t.Context(), m, req); err != nil {
			t.Fatalf("Generate: %v", err)
		}
	}
	reqs := srv.Requests()
	for i, h := range srv.Headers() {
		if got := h.Get("Authorization"); got != "Bearer "+testKey {
			t.Errorf("request %d: Authorization = %q, want the bearer key", i, got)
		}
	}
	if string(reqs[0]) != string(reqs[1]) {
		t.Errorf("the same request serialised differently:\n%s\n%s", reqs[0], reqs[1])
	}

	body := string(reqs[0])
	checks := []struct {
		path string
		want string
	}{
		{"model", "m-override"},
		{"stream", "true"},
		{"stream_options.include_usage", "true"},
		{"messages.#", "8"},
		{"messages.0.role", "system"},
		{"messages.0.content", "You are stoke."},
		{"messages.1.role", "user"},
		{"messages.1.content", "hi\n\nthere"},
		{"messages.2.role", "assistant"},
		{"messages.2.content", "Looking."},
		{"messages.2.tool_calls.#", "2"},
		{"messages.2.tool_calls.0.id", "call_1"},
		{"messages.2.tool_calls.0.type", "function"},
		{"messages.2.tool_calls.0.function.name", "read_file"},
		{"messages.2.tool_calls.0.function.arguments", `{"file_path":"a.go"}`},
		{"messages.2.tool_calls.1.id", "call_2"},
		{"messages.2.tool_calls.1.function.arguments", `{}`},
		{"messages.3.role", "tool"},
		{"messages.3.tool_call_id", "call_1"},
		{"messages.3.content", "package a"},
		{"messages.4.role", "tool"},
		{"messages.4.tool_call_id", "call_2"},
		{"messages.4.content", "boom"},
		{"messages.5.role", "user"},
		{"messages.5.content", "now fix it"},
		{"messages.6.role", "assistant"},
		{"messages.6.tool_calls.0.function.name", "glob"},
		{"messages.7.role", "tool"},
		{"messages.7.tool_call_id", "call_3"},
		{"messages.7.content", "a.go"},
		{"tools.#", "2"},
		{"tools.0.type", "function"},
		{"tools.0.function.name", "read_file"},
		{"tools.0.function.description", "Read a file."},
		{"tools.0.function.parameters.type", "object"},
		{"tools.0.function.parameters.properties.file_path.type", "string"},
		{"tools.0.function.parameters.required.0", "file_path"},
		{"tools.1.function.name", "list_agents"},
		{"tools.1.function.parameters.type", "object"},
	}
	for _, c := range checks {
		if got := gjson.Get(body, c.path); !got.Exists() || got.String() != c.want {
			t.Errorf("%s = %q (exists %v), want %q", c.path, got.String(), got.Exists(), c.want)
		}
	}
	if raw := gjson.Get(body, "tools.0.function.parameters.properties.limit.maximum").Raw; raw != "12345678901234567890" {
		t.Errorf("schema number = %s, want it kept verbatim", raw)
	}
	if gjson.Get(body, "messages.6.content").Exists() {
		t.Errorf("assistant message with only tool calls has content %s, want none", gjson.Get(body, "messages.6.content").Raw)
	}

	plain := string(reqs[2])
	if got := gjson.Get(plain, "model").String(); got != "m-default" {
		t.Errorf("model = %q, want the configured default", got)
	}
	if gjson.Get(plain, "tools").Exists() {
		t.Errorf("tools = %s, want absent when the request has none", gjson.Get(plain, "tools").Raw)
	}
	if gjson.Get(plain, "messages.0.role").String() != "user" {
		t.Errorf("messages = %s, want the user message first without a system prompt", gjson.Get(plain, "messages").Raw)
	}
}

func TestGenerateRejectsBadToolSchema(t *testing.T) {
	t.Parallel()
	srv, m := serve(t)
	req := hello()
	req.Tools = []llm.ToolSpec{{Name: "broken", Parameters: json.RawMessage(`[1,2]`)}}
	if _, err := llmtest.Collect(t.Context(), m, req); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("error = %v, want one naming the tool", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests reached the server, want none", n)
	}
}

func TestNoKeyNamesTheVariables(t *testing.T) {
	t.Parallel()
	_, err := New(Config{Model: "m"})
	if !errors.Is(err, llm.ErrNoAPIKey) || !strings.Contains(err.Error(), "OPENAI_API_KEY") {
		t.Errorf("error = %v, want ErrNoAPIKey naming OPENAI_API_KEY", err)
	}
}

// A 404 from a base URL that ends in /v1 (an unknown model, say) gets no /v1 hint.
func TestNotFoundUnderV1HasNoHint(t *testing.T) {
	t.Parallel()
	_, m := serve(t, openaitest.WithFailFirst(1, http.StatusNotFound))
	_, err := llmtest.Collect(t.Context(), m, hello())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != http.StatusNotFound {
		t.Fatalf("error = %v, want a 404", err)
	}
	if pe.Hint != "" || !strings.Contains(err.Error(), "/v1/chat/completions") {
		t.Errorf("error %q: want the URL and no hint", err)
	}
}

func BenchmarkRequestParams(b *testing.B) {
	req := richRequest()
	for b.Loop() {
		p, err := params(req, "m")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
}
