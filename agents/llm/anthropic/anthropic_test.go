package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/llm"
)

func hello() *llm.Request {
	return &llm.Request{Agent: "parent", Messages: []llm.Message{llm.UserText("hello")}}
}

func TestGenerateStream(t *testing.T) {
	t.Parallel()
	done := func(stop string, u llm.Usage) llm.Event {
		return llm.Event{Kind: llm.EventDone, StopReason: stop, Usage: u, MessageID: "msg_01", Model: "claude-served"}
	}
	tests := []struct {
		name   string
		events []string
		want   []llm.Event
	}{
		{
			name: "plain text",
			events: []string{
				messageStart(12, 0, 0), ping(), textStart(0), textDelta(0, "Hel"), ping(), textDelta(0, "lo"), blockStop(0),
				messageDelta("end_turn", obj{"output_tokens": 3}), messageStop(),
			},
			want: []llm.Event{
				{Kind: llm.EventTextDelta, Text: "Hel"},
				{Kind: llm.EventTextDelta, Text: "lo"},
				done(llm.StopEndTurn, llm.Usage{InputTokens: 12, OutputTokens: 3}),
			},
		},
		{
			name: "text then several tool calls with split input JSON",
			events: []string{
				messageStart(40, 0, 0), textStart(0), textDelta(0, "Reading."), blockStop(0),
				toolStart(1, "toolu_a", "read_file"), jsonDelta(1, ""), jsonDelta(1, `{"file_pa`), jsonDelta(1, `th":"a.go"}`), blockStop(1),
				toolStart(2, "toolu_b", "glob"), jsonDelta(2, `{"pat`), jsonDelta(2, `tern":"*.go"`), jsonDelta(2, `}`), blockStop(2),
				toolStart(3, "toolu_c", "list_agents"), blockStop(3),
				messageDelta("tool_use", obj{"output_tokens": 20}), messageStop(),
			},
			want: []llm.Event{
				{Kind: llm.EventTextDelta, Text: "Reading."},
				{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "toolu_a", Name: "read_file",
					Input: json.RawMessage(`{"file_path":"a.go"}`)}},
				{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "toolu_b", Name: "glob",
					Input: json.RawMessage(`{"pattern":"*.go"}`)}},
				{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "toolu_c", Name: "list_agents",
					Input: json.RawMessage(`{}`)}},
				done(llm.StopToolUse, llm.Usage{InputTokens: 40, OutputTokens: 20}),
			},
		},
		{
			name: "interleaved tool blocks, invalid input JSON",
			events: []string{
				messageStart(5, 0, 0),
				toolStart(0, "toolu_x", "shell"), toolStart(1, "toolu_y", "glob"),
				jsonDelta(1, `{"pattern":"*"}`), jsonDelta(0, `{"command": "ls`), blockStop(1), blockStop(0),
				messageDelta("tool_use", obj{"output_tokens": 9}), messageStop(),
			},
			want: []llm.Event{
				{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "toolu_y", Name: "glob",
					Input: json.RawMessage(`{"pattern":"*"}`)}},
				{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "toolu_x", Name: "shell",
					Input: json.RawMessage(`{"_raw_arguments":"{\"command\": \"ls"}`)}},
				done(llm.StopToolUse, llm.Usage{InputTokens: 5, OutputTokens: 9}),
			},
		},
		{
			name: "cache usage from message_start, output from message_delta",
			events: []string{
				messageStart(7, 300, 1200), textStart(0), textDelta(0, "ok"), blockStop(0),
				messageDelta("end_turn", obj{"output_tokens": 5}), messageStop(),
			},
			want: []llm.Event{
				{Kind: llm.EventTextDelta, Text: "ok"},
				done(llm.StopEndTurn, llm.Usage{InputTokens: 7, CacheCreationInputTokens: 300, CacheReadInputTokens: 1200, OutputTokens: 5}),
			},
		},
		{
			name: "cumulative input counts in message_delta win",
			events: []string{
				messageStart(7, 300, 1200),
				messageDelta("end_turn", obj{"output_tokens": 5, "input_tokens": 9, "cache_creation_input_tokens": 310, "cache_read_input_tokens": 1200}),
				messageStop(),
			},
			want: []llm.Event{
				done(llm.StopEndTurn, llm.Usage{InputTokens: 9, CacheCreationInputTokens: 310, CacheReadInputTokens: 1200, OutputTokens: 5}),
			},
		},
		{
			name: "max_tokens",
			events: []string{
				messageStart(3, 0, 0), textStart(0), textDelta(0, "trunc"), blockStop(0),
				messageDelta("max_tokens", obj{"output_tokens": 8192}), messageStop(),
			},
			want: []llm.Event{
				{Kind: llm.EventTextDelta, Text: "trunc"},
				done(llm.StopMaxTokens, llm.Usage{InputTokens: 3, OutputTokens: 8192}),
			},
		},
		{
			name:   "other stop reason passes through",
			events: []string{messageStart(3, 0, 0), messageDelta("refusal", obj{"output_tokens": 1}), messageStop()},
			want:   []llm.Event{done("refusal", llm.Usage{InputTokens: 3, OutputTokens: 1})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, m := newFake(t, 0, sse(tt.events...))
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

func TestGenerateToolCallsAtBlockStop(t *testing.T) {
	t.Parallel()
	// The server holds the stream open after the first tool block closes: the call
	// must already have been delivered.
	b, m := newBlockingFake(t, messageStart(1, 0, 0), toolStart(0, "toolu_1", "glob"), jsonDelta(0, `{}`), blockStop(0))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got []llm.Event
	var err error
	for ev, e := range m.Generate(ctx, hello()) {
		if e != nil {
			err = e
			break
		}
		got = append(got, ev)
		cancel()
	}
	<-b.gone
	if len(got) != 1 || got[0].Kind != llm.EventToolCall || got[0].ToolCall.ID != "toolu_1" {
		t.Errorf("events before message_stop = %+v, want the tool call", got)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

func TestGenerateModelFallsBackToRequested(t *testing.T) {
	t.Parallel()
	start := strings.ReplaceAll(messageStart(1, 0, 0), `"model":"claude-served"`, `"model":""`)
	_, m := newFake(t, 0, sse(start, messageDelta("end_turn", obj{"output_tokens": 1}), messageStop()))
	req := hello()
	req.Model = "claude-override"
	evs, err := collect(t.Context(), m, req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if got := evs[len(evs)-1].Model; got != "claude-override" {
		t.Errorf("Model = %q, want the requested model", got)
	}
}

func TestGenerateRetries(t *testing.T) {
	t.Parallel()
	ok := sse(messageStart(2, 0, 0), textStart(0), textDelta(0, "fine"), blockStop(0),
		messageDelta("end_turn", obj{"output_tokens": 1}), messageStop())
	f, m := newFake(t, 1, apiError(http.StatusInternalServerError, "api_error", "flaky"), ok)
	evs, err := collect(t.Context(), m, hello())
	if err != nil {
		t.Fatalf("Generate with MaxRetries 1 after one 500: %v", err)
	}
	if evs[0].Text != "fine" {
		t.Errorf("first event = %+v, want the retried answer", evs[0])
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(reqs))
	}
	if string(reqs[0].body) != string(reqs[1].body) {
		t.Errorf("the retry sent a different body:\n%s\n%s", reqs[0].body, reqs[1].body)
	}
}

func TestGenerateProviderError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		status    int
		typ       string
		retryable bool
	}{
		{name: "bad request", status: http.StatusBadRequest, typ: "invalid_request_error"},
		{name: "bad key", status: http.StatusUnauthorized, typ: "authentication_error"},
		{name: "rate limited", status: http.StatusTooManyRequests, typ: "rate_limit_error", retryable: true},
		{name: "overloaded", status: 529, typ: "overloaded_error", retryable: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, m := newFake(t, 0, apiError(tt.status, tt.typ, "model: claude-nope"))
			_, err := collect(t.Context(), m, hello())
			var pe *llm.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *llm.ProviderError", err, err)
			}
			want := llm.ProviderError{Provider: "anthropic", StatusCode: tt.status, Message: "model: claude-nope"}
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
	tests := []struct {
		typ       string
		status    int
		retryable bool
	}{
		{typ: "overloaded_error", status: 529, retryable: true},
		{typ: "api_error", status: http.StatusInternalServerError, retryable: true},
		{typ: "invalid_request_error", status: http.StatusBadRequest},
		{typ: "some_new_error", status: 0},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			t.Parallel()
			_, m := newFake(t, 0, sse(messageStart(1, 0, 0), textStart(0), textDelta(0, "par"), errorEvent(tt.typ, "Overloaded")))
			evs, err := collect(t.Context(), m, hello())
			var pe *llm.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *llm.ProviderError", err, err)
			}
			if pe.Message != "Overloaded" || pe.StatusCode != tt.status || pe.Retryable() != tt.retryable {
				t.Errorf("ProviderError = %+v (retryable %v), want message Overloaded, status %d, retryable %v",
					*pe, pe.Retryable(), tt.status, tt.retryable)
			}
			if len(evs) != 1 || evs[0].Text != "par" {
				t.Errorf("events before the error = %+v, want the text delta", evs)
			}
		})
	}
}

func TestGenerateStreamCut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		step step
	}{
		{
			// The handler returns cleanly: the body ends without message_stop.
			name: "ended without message_stop",
			step: sse(messageStart(1, 0, 0), textStart(0), textDelta(0, "half an ans"), blockStop(0),
				messageDelta("end_turn", obj{"output_tokens": 1})),
		},
		{
			name: "ended inside a tool block",
			step: sse(messageStart(1, 0, 0), toolStart(0, "toolu_1", "shell"), jsonDelta(0, `{"comm`)),
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
				events := messageStart(1, 0, 0) + textStart(0) + textDelta(0, "half")
				fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
				fmt.Fprintf(buf, "%x\r\n%s\r\n", len(events), events)
				fmt.Fprintf(buf, "400\r\nevent: content_block_delta\ndata: {\"ty") // a chunk cut short
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
				if ev.Kind == llm.EventDone {
					t.Errorf("got EventDone before the cut")
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
		_, m := newBlockingFake(t, messageStart(1, 0, 0), textStart(0), textDelta(0, "thinking"))
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
	b, m := newBlockingFake(t, messageStart(1, 0, 0), textStart(0), textDelta(0, "first"))
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

func TestGenerateRejectsBadRequests(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		req      *llm.Request
		contains string
	}{
		{name: "nil request", req: nil, contains: "nil request"},
		{
			name: "tool schema not an object",
			req: &llm.Request{Messages: []llm.Message{llm.UserText("x")},
				Tools: []llm.ToolSpec{{Name: "broken", Parameters: json.RawMessage(`[1,2]`)}}},
			contains: "broken",
		},
		{
			name: "tool schema null",
			req: &llm.Request{Messages: []llm.Message{llm.UserText("x")},
				Tools: []llm.ToolSpec{{Name: "nothing", Parameters: json.RawMessage(`null`)}}},
			contains: "nothing",
		},
		{
			name:     "unknown role",
			req:      &llm.Request{Messages: []llm.Message{{Role: "system", Content: []llm.Block{llm.TextBlock("x")}}}},
			contains: `unknown role "system"`,
		},
		{
			name:     "unknown block type",
			req:      &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: "image"}}}}},
			contains: `unknown block type "image"`,
		},
		{
			name: "invalid tool input",
			req: &llm.Request{Messages: []llm.Message{
				llm.UserText("x"),
				{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolUse, ID: "toolu_1", Name: "t", Input: json.RawMessage(`{`)}}},
			}},
			contains: "toolu_1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, m := newFake(t, 0) // no request may reach the server
			_, err := collect(t.Context(), m, tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error = %v, want one containing %q", err, tt.contains)
			}
		})
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
		{name: "no key", cfg: Config{Model: "m"}, wantErr: llm.ErrNoAPIKey, contains: "ANTHROPIC_API_KEY"},
		{name: "no model", cfg: Config{APIKey: testKey}, wantErr: llm.ErrBadConfig, contains: "model"},
		{name: "bad base URL", cfg: Config{APIKey: testKey, Model: "m", BaseURL: "localhost:8080"}, wantErr: llm.ErrBadConfig, contains: "base URL"},
		{name: "negative max tokens", cfg: Config{APIKey: testKey, Model: "m", MaxTokens: -1}, wantErr: llm.ErrBadConfig, contains: "max tokens"},
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

func TestBaseURL(t *testing.T) {
	t.Parallel()
	for _, suffix := range []string{"", "/", "/v1", "/v1/"} {
		t.Run("suffix "+suffix, func(t *testing.T) {
			t.Parallel()
			// The fake fails the test unless the path is /v1/messages.
			f, m := newFakeWith(t, func(c *Config) { c.MaxRetries, c.BaseURL = 0, c.BaseURL+suffix }, endTurn())
			if _, err := collect(t.Context(), m, hello()); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			if got := f.requests()[0].path; got != "/v1/messages" {
				t.Errorf("path = %q, want /v1/messages", got)
			}
		})
	}
}

// Not parallel: it sets environment variables the SDK would read on its own.
func TestHeadersAndNoEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Leak: yes")
	f, m := newFake(t, 0, endTurn())
	if _, err := collect(t.Context(), m, hello()); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	h := f.requests()[0].header
	if got := h.Get("x-api-key"); got != testKey {
		t.Errorf("x-api-key = %q, want the configured key", got)
	}
	if got := h.Get("anthropic-version"); !regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`).MatchString(got) {
		t.Errorf("anthropic-version = %q, want a dated API version", got)
	}
	for _, name := range []string{"Authorization", "X-Leak", "Traceparent"} {
		if got := h.Get(name); got != "" {
			t.Errorf("%s = %q, want none", name, got)
		}
	}
	if got := h.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", got)
	}
}

func TestNormalizeBaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", "https://api.anthropic.com/"},
		{"https://api.anthropic.com", "https://api.anthropic.com/"},
		{"https://api.anthropic.com/v1", "https://api.anthropic.com/"},
		{"http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/"},
		{"https://proxy.example/apps/anthropic", "https://proxy.example/apps/anthropic/"},
		{"https://proxy.example/anthropic/v1", "https://proxy.example/anthropic/"},
		{"https://proxy.example/v1x", "https://proxy.example/v1x/"},
	}
	for _, tt := range tests {
		got, err := normalizeBaseURL(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("normalizeBaseURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
