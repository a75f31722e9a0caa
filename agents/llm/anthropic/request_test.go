package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

func richRequest() *llm.Request {
	schema := json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string","description":"path"},"limit":{"type":"integer","maximum":12345678901234567890}},"required":["file_path"]}`)
	return &llm.Request{
		Agent:  "parent",
		Model:  "claude-override",
		System: "You are stoke. <rules>",
		Messages: []llm.Message{
			{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("hi"), llm.TextBlock("there")}},
			{Role: llm.RoleAssistant, Content: []llm.Block{
				llm.TextBlock("Looking."),
				{Type: llm.BlockToolUse, ID: "toolu_1", Name: "read_file", Input: json.RawMessage(`{"file_path": "a.go"}`)},
				{Type: llm.BlockToolUse, ID: "toolu_2", Name: "list_agents"},
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolUseID: "toolu_1", Content: "package a"},
				{Type: llm.BlockToolResult, ToolUseID: "toolu_2", Content: "boom", IsError: true},
				llm.TextBlock("now fix it"),
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{
				llm.TextBlock(""), // dropped: the API rejects empty text
				{Type: llm.BlockToolUse, ID: "toolu_3", Name: "glob", Input: json.RawMessage(`{"pattern":"*.go"}`)},
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolUseID: "toolu_3"},
			}},
		},
		Tools: []llm.ToolSpec{
			{Name: "read_file", Description: "Read a file.", Parameters: schema},
			{Name: "list_agents", Description: "List agents."},
		},
	}
}

// bodies sends each request to a fresh mock (which rejects what the API rejects) and
// returns the bodies it received.
func bodies(t *testing.T, adjust func(*Config), reqs ...*llm.Request) []string {
	t.Helper()
	srv, m := serve(t, adjust)
	for _, req := range reqs {
		if _, err := llmtest.Collect(t.Context(), m, req); err != nil {
			t.Fatalf("Generate: %v", err)
		}
	}
	var out []string
	for _, b := range srv.Requests() {
		out = append(out, string(b))
	}
	return out
}

func TestRequestBody(t *testing.T) {
	t.Parallel()
	got := bodies(t, noRetries, richRequest(), richRequest())
	if got[0] != got[1] {
		t.Errorf("the same request serialised differently:\n%s\n%s", got[0], got[1])
	}
	body := got[0]
	checks := []struct {
		path string
		want string
	}{
		{"model", "claude-override"},
		{"max_tokens", "8192"},
		{"stream", "true"},
		{"system.#", "1"},
		{"system.0.type", "text"},
		{"system.0.text", "You are stoke. <rules>"},
		{"system.0.cache_control.type", "ephemeral"},
		{"tools.#", "2"},
		{"tools.0.name", "read_file"},
		{"tools.0.description", "Read a file."},
		{"tools.0.input_schema.type", "object"},
		{"tools.0.input_schema.properties.file_path.type", "string"},
		{"tools.0.input_schema.required.0", "file_path"},
		{"tools.1.name", "list_agents"},
		{"tools.1.input_schema.type", "object"},
		{"tools.1.cache_control.type", "ephemeral"},
		{"messages.#", "5"},
		{"messages.0.role", "user"},
		{"messages.0.content.#", "2"},
		{"messages.0.content.0.type", "text"},
		{"messages.0.content.0.text", "hi"},
		{"messages.0.content.1.text", "there"},
		{"messages.1.role", "assistant"},
		{"messages.1.content.#", "3"},
		{"messages.1.content.0.text", "Looking."},
		{"messages.1.content.1.type", "tool_use"},
		{"messages.1.content.1.id", "toolu_1"},
		{"messages.1.content.1.name", "read_file"},
		{"messages.1.content.1.input.file_path", "a.go"},
		{"messages.1.content.2.id", "toolu_2"},
		{"messages.1.content.2.input", "{}"},
		{"messages.2.role", "user"},
		{"messages.2.content.#", "3"},
		{"messages.2.content.0.type", "tool_result"},
		{"messages.2.content.0.tool_use_id", "toolu_1"},
		{"messages.2.content.0.content.0.type", "text"},
		{"messages.2.content.0.content.0.text", "package a"},
		{"messages.2.content.1.tool_use_id", "toolu_2"},
		{"messages.2.content.1.is_error", "true"},
		{"messages.2.content.1.content.0.text", "boom"},
		{"messages.2.content.2.text", "now fix it"},
		{"messages.2.content.2.cache_control.type", "ephemeral"},
		{"messages.3.role", "assistant"},
		{"messages.3.content.#", "1"},
		{"messages.3.content.0.name", "glob"},
		{"messages.4.content.0.tool_use_id", "toolu_3"},
		{"messages.4.content.0.cache_control.type", "ephemeral"},
	}
	for _, c := range checks {
		if got := gjson.Get(body, c.path); !got.Exists() || got.String() != c.want {
			t.Errorf("%s = %q (exists %v), want %q", c.path, got.String(), got.Exists(), c.want)
		}
	}
	absent := []string{
		"tools.0.cache_control", "messages.0.content.1.cache_control", "messages.1.content.2.cache_control",
		"messages.2.content.0.is_error", "messages.4.content.0.content", "messages.4.content.0.is_error",
		"tool_choice", "thinking", "cache_control",
	}
	for _, path := range absent {
		if r := gjson.Get(body, path); r.Exists() {
			t.Errorf("%s = %s, want it absent", path, r.Raw)
		}
	}
	if raw := gjson.Get(body, "tools.0.input_schema.properties.limit.maximum").Raw; raw != "12345678901234567890" {
		t.Errorf("schema number = %s, want it kept verbatim", raw)
	}
	if n := strings.Count(body, `"cache_control"`); n != 4 {
		t.Errorf("%d cache_control keys, want 4", n)
	}
}

func TestRequestBodyDefaults(t *testing.T) {
	t.Parallel()
	plain := bodies(t, noRetries, hello())[0]
	if got := gjson.Get(plain, "model").String(); got != "claude-default" {
		t.Errorf("model = %q, want the configured default", got)
	}
	for _, path := range []string{"tools", "system"} {
		if r := gjson.Get(plain, path); r.Exists() {
			t.Errorf("%s = %s, want absent when the request has none", path, r.Raw)
		}
	}
	if got := gjson.Get(plain, "messages.0.content.0.cache_control.type").String(); got != "ephemeral" {
		t.Errorf("the only message has no breakpoint: %s", plain)
	}

	capped := bodies(t, func(c *Config) { c.MaxRetries, c.MaxTokens = 0, 512 }, hello())[0]
	if got := gjson.Get(capped, "max_tokens").Int(); got != 512 {
		t.Errorf("max_tokens = %d, want the configured 512", got)
	}
}

// breakpoints lists the JSON paths of the blocks that carry cache_control.
func breakpoints(body string) []string {
	var out []string
	for i, tool := range gjson.Get(body, "tools").Array() {
		if tool.Get("cache_control").Exists() {
			out = append(out, fmt.Sprintf("tools.%d", i))
		}
	}
	for i, b := range gjson.Get(body, "system").Array() {
		if b.Get("cache_control").Exists() {
			out = append(out, fmt.Sprintf("system.%d", i))
		}
	}
	for i, m := range gjson.Get(body, "messages").Array() {
		for j, b := range m.Get("content").Array() {
			if b.Get("cache_control").Exists() {
				out = append(out, fmt.Sprintf("messages.%d.content.%d", i, j))
			}
		}
	}
	return out
}

func TestCacheBreakpoints(t *testing.T) {
	t.Parallel()
	tools := []llm.ToolSpec{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	call := func(id string) llm.Message {
		return llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolUse, ID: id, Name: "a"}}}
	}
	result := func(id string) llm.Message {
		return llm.Message{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolResult, ToolUseID: id, Content: "r"}}}
	}
	tests := []struct {
		name string
		req  *llm.Request
		want []string
	}{
		{
			name: "first call of an agent",
			req:  &llm.Request{System: "s", Tools: tools, Messages: []llm.Message{llm.UserText("go")}},
			want: []string{"tools.2", "system.0", "messages.0.content.0"},
		},
		{
			name: "tool round",
			req: &llm.Request{System: "s", Tools: tools, Messages: []llm.Message{
				llm.UserText("go"), call("t1"), result("t1"),
			}},
			want: []string{"tools.2", "system.0", "messages.0.content.0", "messages.2.content.0"},
		},
		{
			name: "continued agent",
			req: &llm.Request{System: "s", Tools: tools, Messages: []llm.Message{
				llm.UserText("go"), call("t1"), result("t1"),
				{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("done")}},
				{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("more"), llm.TextBlock("please")}},
			}},
			want: []string{"tools.2", "system.0", "messages.2.content.0", "messages.4.content.1"},
		},
		{
			name: "no tools, no system",
			req: &llm.Request{Messages: []llm.Message{
				llm.UserText("go"), {Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}}, llm.UserText("again"),
			}},
			want: []string{"messages.0.content.0", "messages.2.content.0"},
		},
		{
			name: "assistant prefill last",
			req: &llm.Request{Messages: []llm.Message{
				llm.UserText("go"), {Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("{")}},
			}},
			want: []string{"messages.1.content.0"},
		},
		{
			name: "empty message dropped before placing breakpoints",
			req: &llm.Request{Messages: []llm.Message{
				llm.UserText("go"), {Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}},
				llm.UserText("again"), {Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("")}},
			}},
			want: []string{"messages.0.content.0", "messages.2.content.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body := bodies(t, noRetries, tt.req)[0]
			got := breakpoints(body)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("breakpoints (-want +got):\n%s\nbody: %s", diff, body)
			}
			if len(got) > maxBreakpoints {
				t.Errorf("%d breakpoints, the API allows %d", len(got), maxBreakpoints)
			}
		})
	}
}

// withoutCacheControl returns raw (a JSON object or array) with every cache_control
// key of its blocks deleted; all other bytes are kept as they are.
func withoutCacheControl(t *testing.T, raw string) string {
	t.Helper()
	out := raw
	paths := []string{"cache_control"}
	for j := range gjson.Get(raw, "content.#").Int() {
		paths = append(paths, fmt.Sprintf("content.%d.cache_control", j))
	}
	for _, p := range paths {
		if !gjson.Get(out, p).Exists() {
			continue
		}
		var err error
		if out, err = sjson.Delete(out, p); err != nil {
			t.Fatalf("delete %s: %v", p, err)
		}
	}
	return out
}

// TestPrefixStable checks the property the prompt cache relies on: request N+1, which
// extends N's history, repeats N's tools and system byte for byte, and N's messages
// byte for byte except for cache_control keys.
func TestPrefixStable(t *testing.T) {
	t.Parallel()
	base := richRequest()
	base.Messages = base.Messages[:3]
	turns := []*llm.Request{base}
	next := func(prev *llm.Request, msgs ...llm.Message) *llm.Request {
		r := *prev
		r.Messages = append(slices.Clone(prev.Messages), msgs...)
		return &r
	}
	turns = append(turns,
		next(turns[0], richRequest().Messages[3:]...), // a tool round
		next(turns[0], richRequest().Messages[3:]...), // the same again: identical bytes
	)
	turns = append(turns, next(turns[2],
		llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Fixed.")}},
		llm.UserText("<task-notification>more</task-notification>"), // a send_message continuation
	))
	got := bodies(t, noRetries, turns...)
	if got[1] != got[2] {
		t.Fatalf("the same request serialised differently")
	}
	for n := 0; n+1 < len(got); n++ {
		a, b := got[n], got[n+1]
		for _, key := range []string{"tools", "system", "model", "max_tokens"} {
			if ra, rb := gjson.Get(a, key).Raw, gjson.Get(b, key).Raw; ra != rb {
				t.Errorf("request %d→%d: %s changed:\n%s\n%s", n, n+1, key, ra, rb)
			}
		}
		ma, mb := gjson.Get(a, "messages").Array(), gjson.Get(b, "messages").Array()
		if len(mb) < len(ma) {
			t.Fatalf("request %d has fewer messages than request %d", n+1, n)
		}
		moved := 0
		for i := range ma {
			if withoutCacheControl(t, ma[i].Raw) != withoutCacheControl(t, mb[i].Raw) {
				t.Errorf("request %d→%d: message %d differs beyond cache_control:\n%s\n%s", n, n+1, i, ma[i].Raw, mb[i].Raw)
			}
			if ma[i].Raw != mb[i].Raw {
				moved++
			}
		}
		// Only the older breakpoint moves; the last block of request N keeps its
		// breakpoint in N+1 (where the next call's cache read is found).
		if len(mb) > len(ma) {
			last := ma[len(ma)-1]
			if last.Raw != mb[len(ma)-1].Raw {
				t.Errorf("request %d→%d: the final message of request %d changed:\n%s\n%s", n, n+1, n, last.Raw, mb[len(ma)-1].Raw)
			}
			if moved > 1 {
				t.Errorf("request %d→%d: %d messages changed their cache_control, want at most 1", n, n+1, moved)
			}
		}
	}
	// The body as a whole: request N's bytes up to the end of its messages reappear in
	// N+1 with only cache_control keys removed or added.
	strip := func(s string) string { return strings.ReplaceAll(s, `"cache_control":{"type":"ephemeral"},`, "") }
	prefix := strip(got[2][:strings.Index(got[2], `],"model"`)])
	if whole := strip(got[3]); !strings.HasPrefix(whole, prefix) {
		t.Errorf("request 3 does not start with request 2's messages (cache_control aside)")
	}
}

func TestToolInputBytesKept(t *testing.T) {
	t.Parallel()
	// Spacing is compacted, but key order and number text are kept as the model sent them.
	in := json.RawMessage(`{"z": 1, "a": 1.50, "big": 12345678901234567890}`)
	req := &llm.Request{Messages: []llm.Message{
		llm.UserText("go"),
		{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolUse, ID: "t", Name: "x", Input: in}}},
		{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolResult, ToolUseID: "t", Content: "ok"}}},
	}}
	body := bodies(t, noRetries, req)[0]
	var want bytes.Buffer
	if err := json.Compact(&want, in); err != nil {
		t.Fatal(err)
	}
	if got := gjson.Get(body, "messages.1.content.0.input").Raw; got != want.String() {
		t.Errorf("input = %s, want %s", got, want.String())
	}
}

func BenchmarkRequestParams(b *testing.B) {
	req := richRequest()
	for b.Loop() {
		p, err := params(req, "m", DefaultMaxTokens)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(p); err != nil {
			b.Fatal(err)
		}
	}
}
