package catalog

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDefinitionMCPServers(t *testing.T) {
	tests := []struct {
		name  string
		front string
		want  []MCPServer
	}{
		{"absent", "", nil},
		{"names and an inline server, as Claude Code writes them", `
mcpServers:
  - github
  - local:
      command: node
      args: [server.js]
      env: {TOKEN: "${TOKEN}"}`,
			[]MCPServer{{Name: "github"}, {Name: "local", Config: map[string]any{
				"command": "node", "args": []any{"server.js"}, "env": map[string]any{"TOKEN": "${TOKEN}"}}}}},
		{"a map", `
mcpServers:
  github:
  web: {type: http, url: "http://127.0.0.1:9/mcp"}`,
			[]MCPServer{{Name: "github"}, {Name: "web", Config: map[string]any{"type": "http", "url": "http://127.0.0.1:9/mcp"}}}},
		{"a comma-separated string", "\nmcpServers: github, slack", []MCPServer{{Name: "github"}, {Name: "slack"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, _, err := ParseDefinition("a.md", []byte("---\nname: a\ndescription: d"+tt.front+"\n---\nprompt\n"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, d.MCPServers); diff != "" {
				t.Errorf("MCPServers (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"mcpServers: [[a]]", "mcpServers:\n  - x: [1, 2]", "mcpServers: [\"\"]"} {
		if _, _, err := ParseDefinition("a.md", []byte("---\nname: a\n"+bad+"\n---\n")); err == nil || !strings.Contains(err.Error(), "mcpServers") {
			t.Errorf("%q: err = %v, want an mcpServers error", bad, err)
		}
	}
}
