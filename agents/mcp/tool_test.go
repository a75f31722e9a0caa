package mcp

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stoke-cli/stoke/agents/tools"
)

func TestToolName(t *testing.T) {
	tests := []struct{ server, tool, want string }{
		{"everything", "echo", "mcp__everything__echo"},
		{"my server", "get.thing", "mcp__my_server__get_thing"},
		{"fs-1", "read_file", "mcp__fs-1__read_file"},
		{"ünï", "x/y", "mcp___n___x_y"},
	}
	for _, tt := range tests {
		if got := ToolName(tt.server, tt.tool); got != tt.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
	}
}

func TestInputSchema(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{nil, `{"type":"object","properties":{}}`},
		{map[string]any{}, `{"type":"object","properties":{}}`},
		{map[string]any{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "required": []any{"a"}},
			`{"required":["a"],"type":"object"}`},
		{map[string]any{"properties": map[string]any{"a": map[string]any{"type": "string"}}},
			`{"properties":{"a":{"type":"string"}},"type":"object"}`},
	}
	for _, tt := range tests {
		if got := string(inputSchema(tt.in)); got != tt.want {
			t.Errorf("inputSchema(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestResultText(t *testing.T) {
	tests := []struct {
		name string
		res  *sdk.CallToolResult
		want string
	}{
		{"text parts", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b"}}}, "a\nb"},
		{"image", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{MIMEType: "image/png", Data: make([]byte, 10)}}}, "[image: image/png, 10 bytes]"},
		{"embedded text", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///a", Text: "contents"}}}}, "contents"},
		{"embedded blob", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b", MIMEType: "application/gzip", Blob: []byte("xyz")}}}}, "[resource: file:///b, application/gzip, 3 bytes]"},
		{"link", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ResourceLink{URI: "test://r/1", Name: "one"}}}, "[resource link: test://r/1 one]"},
		{"structured only", &sdk.CallToolResult{StructuredContent: map[string]any{"t": 1}}, `{"t":1}`},
		{"text wins over structured", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "t"}}, StructuredContent: map[string]any{"t": 1}}, "t"},
		{"empty", &sdk.CallToolResult{}, ""},
	}
	for _, tt := range tests {
		if got := resultText(tt.res); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	long := strings.Repeat("é", maxResultChars) // two bytes each
	got := resultText(&sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: long}}})
	if !strings.Contains(got, "[output truncated:") || len(got) > maxResultChars+100 || !strings.HasPrefix(got, "éé") {
		t.Errorf("long output: %d bytes, ends %q", len(got), got[len(got)-60:])
	}
	if body, _, _ := strings.Cut(got, "\n[output"); strings.ContainsRune(body, '\uFFFD') || len(body)%2 != 0 {
		t.Errorf("the cut splits a character")
	}
}

// Model APIs refuse a request whose tool names repeat one, and OpenAI's one whose tool
// names are longer than 64 characters: one such tool of one server would fail every model
// call of the run. Long names are shortened, and names that collide once sanitized are
// told apart, each the same way every run.
func TestToolNamesTheModelAPIsAccept(t *testing.T) {
	long := strings.Repeat("list_pull_request_review_comments_", 2)
	a, b := ToolName("github-enterprise", long+"a"), ToolName("github-enterprise", long+"b")
	for _, n := range []string{a, b} {
		if len(n) > maxToolName || !strings.HasPrefix(n, "mcp__github-enterprise__list_pull") {
			t.Errorf("ToolName = %q (%d characters), want at most %d, starting with the server's prefix", n, len(n), maxToolName)
		}
	}
	if a == b {
		t.Errorf("two long tools share the name %q", a)
	}
	if again := ToolName("github-enterprise", long+"a"); again != a {
		t.Errorf("ToolName is not stable: %q, then %q", a, again)
	}

	p := newInproc()
	for _, name := range []string{"get.thing", "get_thing", "get thing"} {
		sdk.AddTool(p.srv, &sdk.Tool{Name: name, Description: name},
			func(_ context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
				return text("I am " + name), nil, nil
			})
	}
	m := newTestManager(t, p, "s")
	ts := m.Tools(t.Context(), "s")
	seen := map[string]bool{}
	for _, n := range toolNames(ts) {
		if seen[n] {
			t.Errorf("the name %q is offered twice: %v", n, toolNames(ts))
		}
		seen[n] = true
	}
	answers := map[string]bool{}
	for _, n := range toolNames(ts) {
		if strings.Contains(n, "thing") {
			answers[run(t, t.Context(), ts, n, `{}`).Content] = true
		}
	}
	if len(answers) != 3 {
		t.Errorf("the three colliding tools answered %v, want each its own", answers)
	}
}

// A tool the server annotates readOnlyHint is read-only (its calls of one reply may run
// together); any other is not, also through a Set.
func TestReadOnlyHint(t *testing.T) {
	m := newTestManager(t, newInproc(), "a")
	ts := m.Tools(t.Context(), "a")
	var list []tools.Tool
	got := map[string]bool{}
	for _, x := range ts {
		list = append(list, x)
		got[x.Spec().Name] = x.ReadOnly()
	}
	want := map[string]bool{"mcp__a__echo": true, "mcp__a__fail": false, "mcp__a__block": false}
	set := tools.NewSet(list...)
	for name, ro := range want {
		if got[name] != ro || set.ReadOnly(name) != ro {
			t.Errorf("%s: ReadOnly = %v (in a Set %v), want %v", name, got[name], set.ReadOnly(name), ro)
		}
	}
}
