package tools

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

func echoTool(name string) Tool {
	return Func{
		ToolSpec: llm.ToolSpec{
			Name:       name,
			Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"},"n":{"type":"integer"}},"required":["text"]}`),
		},
		Fn: func(_ context.Context, c Call) Result {
			var in struct{ Text string }
			_ = json.Unmarshal(c.Input, &in)
			return Result{Content: name + ":" + in.Text}
		},
	}
}

func TestSetRun(t *testing.T) {
	t.Parallel()
	s := NewSet(echoTool("echo"), echoTool("other"), echoTool("echo"))
	if got := strings.Join(s.Names(), ","); got != "echo,other" {
		t.Fatalf("Names = %s (duplicates must be dropped, order kept)", got)
	}
	tests := []struct {
		name, tool, input string
		wantErr           bool
		want              string
	}{
		{"valid", "echo", `{"text":"hi"}`, false, "echo:hi"},
		{"unknown tool", "nope", `{}`, true, `unknown tool "nope"; available tools: echo, other`},
		{"missing required", "echo", `{}`, true, "invalid arguments for echo"},
		{"wrong type", "echo", `{"text":"x","n":"seven"}`, true, "invalid arguments for echo"},
		{"not JSON", "echo", `{"text":`, true, "not JSON"},
		{"empty input means {}", "echo", ``, true, "invalid arguments for echo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := s.Run(t.Context(), Call{ID: "c1", Name: tt.tool, Input: json.RawMessage(tt.input)})
			if res.IsError != tt.wantErr || !strings.Contains(res.Content, tt.want) {
				t.Errorf("Run = %+v, want error=%v containing %q", res, tt.wantErr, tt.want)
			}
			if strings.Contains(res.Content, "\n") {
				t.Errorf("tool error spans lines: %q", res.Content)
			}
		})
	}
}

func TestSetConcurrent(t *testing.T) {
	t.Parallel()
	s := NewSet(echoTool("echo"))
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if res := s.Run(context.Background(), Call{Name: "echo", Input: json.RawMessage(`{"text":"x"}`)}); res.IsError {
				t.Errorf("Run: %+v", res)
			}
		})
	}
	wg.Wait()
}

func TestNilSet(t *testing.T) {
	t.Parallel()
	var s *Set
	if s.Specs() != nil || len(s.Names()) != 0 {
		t.Fatal("nil set is not empty")
	}
	if res := s.Run(t.Context(), Call{Name: "x"}); !res.IsError {
		t.Fatal("nil set ran a tool")
	}
}

func TestSetAround(t *testing.T) {
	t.Parallel()
	ro := echoTool("ro").(Func)
	ro.Parallel = true
	var seen []string
	s := NewSet(echoTool("echo"), ro).Around(func(ctx context.Context, c Call, run func(context.Context, Call) Result) Result {
		seen = append(seen, c.Name)
		if c.Name == "ro" {
			c.Input = json.RawMessage(`{"text":"rewritten"}`)
		}
		res := run(ctx, c)
		res.Content += "!"
		return res
	})
	if got := strings.Join(s.Names(), ","); got != "echo,ro" {
		t.Fatalf("Names = %s, want the wrapped set's", got)
	}
	if s.ReadOnly("echo") || !s.ReadOnly("ro") {
		t.Fatalf("ReadOnly(echo)=%v ReadOnly(ro)=%v, want the wrapped tools' declarations", s.ReadOnly("echo"), s.ReadOnly("ro"))
	}
	for _, tc := range []struct{ tool, input, want string }{
		{"echo", `{"text":"hi"}`, "echo:hi!"},
		{"ro", `{"text":"hi"}`, "ro:rewritten!"},
	} {
		if got := s.Run(t.Context(), Call{Name: tc.tool, Input: json.RawMessage(tc.input)}); got.Content != tc.want {
			t.Errorf("Run(%s) = %q, want %q", tc.tool, got.Content, tc.want)
		}
	}
	if res := s.Run(t.Context(), Call{Name: "echo", Input: json.RawMessage(`{}`)}); !res.IsError || !strings.Contains(res.Content, "invalid arguments") {
		t.Errorf("a call the schema refuses = %+v, want the schema error", res)
	}
	if got := strings.Join(seen, ","); got != "echo,ro" {
		t.Errorf("around saw %s, want every valid call (a call the schema refuses is not run)", got)
	}
}
