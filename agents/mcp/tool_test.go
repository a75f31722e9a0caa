package mcp

import (
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
