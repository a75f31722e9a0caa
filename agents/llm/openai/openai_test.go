package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
)

const testKey = "sk-test-123"

func hello() *llm.Request {
	return &llm.Request{Agent: "parent", Messages: []llm.Message{llm.UserText("hello")}}
}

func TestGenerateStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data []string
		want []llm.Event
	}{
		{
			name: "plain text",
			data: []string{
				chunk(map[string]any{"role": "assistant", "content": ""}, "", nil),
				text("Hel"), text("lo"), finish("stop"), usage(12, 0, 3), "[DONE]",
			},
			want: []llm.Event{
				{Kind: llm.EventTextDelta, Text: "Hel"},
				{Kind: llm.EventTextDelta, Text: "lo"},
				{Kind: llm.EventDone, StopReason: llm.StopEndTurn, MessageID: "chatcmpl-7", Model: "m-served",
					Usage: llm.Usage{InputTokens: 12, OutputTokens: 3}},
			},
		},
		{
			name: "two tool calls with split arguments",
			data: []string{
				text("Reading."),
				toolDelta(0, "call_a", "read_file", ""),
				toolDelta(0, "", "", `{"file_pa`),
				toolDelta(1, "call_b", "glob", `{"pat`),
				toolDelta(0, "", "", `th":"a.go"}`),
				toolDelta(1, "", "", `tern":"*.go"}`),
				finish("tool_calls"), usage(40, 0, 20), "[DONE]",
			},
			want: []llm.Event{
				{Kind: llm.EventTextDelta, Text: "Reading."},
				{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "call_a", Name: "read_file",
					Input: json.RawMessage(`{"file_path":"a.go"}`)}},
				{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "call_b", Name: "glob",
					Input: json.RawMessage(`{"pattern":"*.go"}`)}},
				{Kind: llm.EventDone, StopReason: llm.StopToolUse, MessageID: "chatcmpl-7", Model: "m-served",
					Usage: llm.Usage{InputTokens: 40, OutputTokens: 20}},
			},
		},
		{
			name: "tool calls with finish stop, empty and invalid arguments, missing id",
			data: []string{
				toolDelta(1, "", "shell", `{"command": "ls`),
				toolDelta(0, "call_x", "list_agents", ""),
				finish("stop"), "[DONE]",
			},
			want: []llm.Event{
				{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "call_x", Name: "list_agents",
					Input: json.RawMessage(`{}`)}},
				{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "call_chatcmpl-7_1", Name: "shell",
					Input: json.RawMessage(`{"_raw_arguments":"{\"command\": \"ls"}`)}},
				{Kind: llm.EventDone, StopReason: llm.StopToolUse, MessageID: "chatcmpl-7", Model: "m-served"},
			},
		},
		{
			name: "cached tokens",
			data: []string{text("ok"), finish("stop"), usage(1000, 800, 5), "[DONE]"},
			want: []llm.Event{
				{Kind: llm.EventTextDelta, Text: "ok"},
				{Kind: llm.EventDone, StopReason: llm.StopEndTurn, MessageID: "chatcmpl-7", Model: "m-served",
					Usage: llm.Usage{InputTokens: 200, CacheReadInputTokens: 800, OutputTokens: 5}},
			},
		},
		{
			name: "length",
			data: []string{text("trunc"), finish("length"), "[DONE]"},
			want: []llm.Event{
				{Kind: llm.EventTextDelta, Text: "trunc"},
				{Kind: llm.EventDone, StopReason: llm.StopMaxTokens, MessageID: "chatcmpl-7", Model: "m-served"},
			},
		},
		{
			name: "other finish reason passes through",
			data: []string{finish("content_filter"), "[DONE]"},
			want: []llm.Event{
				{Kind: llm.EventDone, StopReason: "content_filter", MessageID: "chatcmpl-7", Model: "m-served"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, m := newFake(t, 0, sse(tt.data...))
			got, err := collect(t.Context(), m, hello())
			if err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGenerateModelFallsBackToRequested(t *testing.T) {
	t.Parallel()
	// A server that leaves "model" empty in its chunks.
	data := strings.ReplaceAll(finish("stop"), `"model":"m-served"`, `"model":""`)
	_, m := newFake(t, 0, sse(data, "[DONE]"))
	req := hello()
	req.Model = "m-override"
	evs, err := collect(t.Context(), m, req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if got := evs[len(evs)-1].Model; got != "m-override" {
		t.Errorf("Done.Model = %q, want m-override", got)
	}
}

func TestGenerateRetriesServerError(t *testing.T) {
	t.Parallel()
	f, m := newFake(t, 1, apiError(http.StatusInternalServerError, "try again"), sse(text("hi"), finish("stop"), "[DONE]"))
	evs, err := collect(t.Context(), m, hello())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("server saw %d requests, want 2", n)
	}
	if len(evs) != 2 || evs[0].Text != "hi" || evs[1].Kind != llm.EventDone {
		t.Errorf("events = %+v, want text hi then done", evs)
	}
}

func TestGenerateProviderError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		status    int
		retryable bool
	}{
		{name: "bad request", status: http.StatusBadRequest},
		{name: "rate limited", status: http.StatusTooManyRequests, retryable: true},
		{name: "server error", status: http.StatusBadGateway, retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, m := newFake(t, 0, apiError(tt.status, "model not found"))
			_, err := collect(t.Context(), m, hello())
			var pe *llm.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *llm.ProviderError", err, err)
			}
			want := llm.ProviderError{Provider: "openai", StatusCode: tt.status, Message: "model not found"}
			if pe.Provider != want.Provider || pe.StatusCode != want.StatusCode || pe.Message != want.Message {
				t.Errorf("ProviderError = %+v, want %+v", *pe, want)
			}
			if pe.Retryable() != tt.retryable {
				t.Errorf("Retryable() = %v, want %v", pe.Retryable(), tt.retryable)
			}
			if pe.Err == nil {
				t.Error("ProviderError.Err is nil, want the SDK error")
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error text %q leaks the API key", err)
			}
			if n := len(f.requests()); n != 1 {
				t.Errorf("server saw %d requests with MaxRetries 0, want 1", n)
			}
		})
	}
}

func TestGenerateErrorEventInStream(t *testing.T) {
	t.Parallel()
	_, m := newFake(t, 0, sse(text("par"), `{"error":{"message":"upstream overloaded","type":"server_error"}}`))
	_, err := collect(t.Context(), m, hello())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *llm.ProviderError", err, err)
	}
	if pe.Message != "upstream overloaded" {
		t.Errorf("Message = %q, want upstream overloaded", pe.Message)
	}
}

func TestGenerateStreamCut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		step step
	}{
		{
			// The handler returns cleanly: the body ends without finish_reason or [DONE].
			name: "ended without finish_reason",
			step: sse(text("half an ans"), toolDelta(0, "call_1", "shell", `{"comm`)),
		},
		{
			// The connection drops in the middle of a chunked body.
			name: "connection dropped",
			step: func(w http.ResponseWriter, _ *http.Request) {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					panic(err)
				}
				defer conn.Close()
				event := "data: " + text("half") + "\n\n"
				fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
				fmt.Fprintf(buf, "%x\r\n%s\r\n", len(event), event)
				fmt.Fprintf(buf, "400\r\ndata: {\"id\":") // a chunk cut short
				_ = buf.Flush()
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, m := newFake(t, 0, tt.step)
			evs, err := collect(t.Context(), m, hello())
			if !errors.Is(err, llm.ErrStreamCut) {
				t.Fatalf("error = %v, want llm.ErrStreamCut", err)
			}
			for _, ev := range evs {
				if ev.Kind != llm.EventTextDelta {
					t.Errorf("got %v event before the cut, want only text deltas", ev.Kind)
				}
			}
		})
	}
}

func TestGenerateContextCanceled(t *testing.T) {
	t.Parallel()
	t.Run("before the response starts", func(t *testing.T) {
		t.Parallel()
		b, m := newBlockingFake(t)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() {
			select {
			case <-b.arrived:
				cancel()
			case <-ctx.Done():
			}
		}()
		_, err := collect(ctx, m, hello())
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
	})
	t.Run("mid-stream", func(t *testing.T) {
		t.Parallel()
		_, m := newBlockingFake(t, text("thinking"))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var err error
		for ev, e := range m.Generate(ctx, hello()) {
			if e != nil {
				err = e
				break
			}
			if ev.Kind == llm.EventTextDelta {
				cancel()
			}
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
	})
	t.Run("with a cause", func(t *testing.T) {
		t.Parallel()
		b, m := newBlockingFake(t)
		stopped := errors.New("task_stop")
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		go func() {
			select {
			case <-b.arrived:
				cancel(stopped)
			case <-ctx.Done():
			}
		}()
		_, err := collect(ctx, m, hello())
		if !errors.Is(err, context.Canceled) || !errors.Is(err, stopped) {
			t.Fatalf("error = %v, want context.Canceled and the cause", err)
		}
	})
}

func TestGenerateConsumerStopClosesStream(t *testing.T) {
	t.Parallel()
	b, m := newBlockingFake(t, text("first"))

	for ev, err := range m.Generate(t.Context(), hello()) {
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if ev.Kind == llm.EventTextDelta {
			break
		}
	}
	select {
	case <-b.gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server still holds the connection after the consumer stopped ranging")
	}
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
	reply := sse(finish("stop"), "[DONE]")
	f, m := newFake(t, 0, reply, reply, reply)
	for _, req := range []*llm.Request{richRequest(), richRequest(), hello()} {
		if _, err := collect(t.Context(), m, req); err != nil {
			t.Fatalf("Generate: %v", err)
		}
	}
	reqs := f.requests()
	for i, r := range reqs {
		if r.auth != "Bearer "+testKey {
			t.Errorf("request %d: Authorization = %q, want the bearer key", i, r.auth)
		}
	}
	if string(reqs[0].body) != string(reqs[1].body) {
		t.Errorf("the same request serialised differently:\n%s\n%s", reqs[0].body, reqs[1].body)
	}

	body := string(reqs[0].body)
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

	plain := string(reqs[2].body)
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
	_, m := newFake(t, 0) // no request may reach the server
	req := hello()
	req.Tools = []llm.ToolSpec{{Name: "broken", Parameters: json.RawMessage(`[1,2]`)}}
	if _, err := collect(t.Context(), m, req); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("error = %v, want one naming the tool", err)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cfg      Config
		wantErr  error
		contains string
	}{
		{name: "no key", cfg: Config{Model: "m"}, wantErr: llm.ErrNoAPIKey, contains: "OPENAI_API_KEY"},
		{name: "no model", cfg: Config{APIKey: testKey}, wantErr: llm.ErrBadConfig, contains: "model"},
		{name: "bad base URL", cfg: Config{APIKey: testKey, Model: "m", BaseURL: "localhost:8080/v1"}, wantErr: llm.ErrBadConfig, contains: "base URL"},
		{name: "defaults", cfg: Config{APIKey: testKey, Model: "m", MaxRetries: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, err := New(tt.cfg)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if m.Name() != tt.cfg.Model {
					t.Errorf("Name() = %q, want %q", m.Name(), tt.cfg.Model)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q does not mention %q", err, tt.contains)
			}
		})
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
