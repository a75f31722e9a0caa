package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"regexp"
	"strings"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/anthropic/anthropictest"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

// The behaviour every provider shares is checked by the conformance suite
// (suite_test.go); this file holds what is particular to the Messages API.

const testKey = "sk-ant-test-123"

func hello() *llm.Request {
	return &llm.Request{Agent: "parent", Messages: []llm.Message{llm.UserText("hello")}}
}

func noRetries(c *Config) { c.MaxRetries = 0 }

// serve starts a mock endpoint answering "ok" to every call and returns it with a
// Model talking to it, its Config adjusted by adjust.
func serve(t *testing.T, adjust func(*Config)) (*anthropictest.Server, *Model) {
	t.Helper()
	return serveModel(t, llmtest.EndTurn("ok"), adjust)
}

func serveModel(t *testing.T, backend llm.Model, adjust func(*Config)) (*anthropictest.Server, *Model) {
	t.Helper()
	srv := anthropictest.New(backend, anthropictest.WithAPIKey(testKey))
	t.Cleanup(srv.Close)
	cfg := Config{APIKey: testKey, BaseURL: srv.URL(), Model: "claude-default", HTTPClient: srv.Client()}
	adjust(&cfg)
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return srv, m
}

// holdAfter yields its events, then waits until the call's context ends.
type holdAfter []llm.Event

func (holdAfter) Name() string { return "hold" }

func (h holdAfter) Generate(ctx context.Context, _ *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		for _, ev := range h {
			if !yield(ev, nil) {
				return
			}
		}
		<-ctx.Done()
	}
}

// Each tool_use block is delivered when it closes, before the message ends: the
// server holds the stream open after the first call.
func TestToolCallsAtBlockStop(t *testing.T) {
	t.Parallel()
	call := llm.Block{Type: llm.BlockToolUse, ID: "toolu_1", Name: "glob", Input: json.RawMessage(`{"pattern":"*"}`)}
	_, m := serveModel(t, holdAfter{{Kind: llm.EventToolCall, ToolCall: call}}, noRetries)
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
	if len(got) != 1 || got[0].Kind != llm.EventToolCall || got[0].ToolCall.ID != "toolu_1" {
		t.Errorf("events before message_stop = %+v, want the tool call", got)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

func TestStatusOfType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		typ  string
		want int
	}{
		{"overloaded_error", 529},
		{"api_error", http.StatusInternalServerError},
		{"rate_limit_error", http.StatusTooManyRequests},
		{"invalid_request_error", http.StatusBadRequest},
		{"authentication_error", http.StatusUnauthorized},
		{"not_found_error", http.StatusNotFound},
		{"some_new_error", 0},
	}
	for _, tt := range tests {
		if got := statusOfType(sdk.ErrorType(tt.typ)); got != tt.want {
			t.Errorf("statusOfType(%s) = %d, want %d", tt.typ, got, tt.want)
		}
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
			req:      &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: "search_result"}}}}},
			contains: `unknown block type "search_result"`,
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
			srv, m := serve(t, noRetries)
			_, err := llmtest.Collect(t.Context(), m, tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error = %v, want one containing %q", err, tt.contains)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Errorf("%d requests reached the server, want none", n)
			}
		})
	}
}

// TestNew covers what the conformance suite does not: the variable a missing key
// names, and max tokens.
func TestNew(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Model: "m"}); !errors.Is(err, llm.ErrNoAPIKey) || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Errorf("no key: error = %v, want ErrNoAPIKey naming ANTHROPIC_API_KEY", err)
	}
	if _, err := New(Config{APIKey: testKey, Model: "m", MaxTokens: -1}); !errors.Is(err, llm.ErrBadConfig) || !strings.Contains(err.Error(), "max tokens") {
		t.Errorf("negative max tokens: error = %v, want ErrBadConfig", err)
	}
}

func TestBaseURL(t *testing.T) {
	t.Parallel()
	for _, suffix := range []string{"", "/", "/v1", "/v1/"} {
		t.Run("suffix "+suffix, func(t *testing.T) {
			t.Parallel()
			// The mock serves only /v1/messages.
			_, m := serve(t, func(c *Config) { c.MaxRetries, c.BaseURL = 0, c.BaseURL+suffix })
			if _, err := llmtest.Collect(t.Context(), m, hello()); err != nil {
				t.Fatalf("Generate: %v", err)
			}
		})
	}
}

// Not parallel: it sets environment variables the SDK would read on its own.
// Not parallel: it sets environment variables the SDK would read on its own.
func TestHeadersAndNoEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-from-env")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "token-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Leak: yes")
	srv, m := serve(t, noRetries)
	if _, err := llmtest.Collect(t.Context(), m, hello()); err != nil {
		t.Fatalf("Generate: %v", err)
	}
	h := srv.Headers()[0]
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
