package sdkhost

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/mcp"
)

func TestParseMCPServers(t *testing.T) {
	t.Parallel()
	sdk := mcp.ServerConfig{Type: mcp.TransportSDK, Source: sourceInitialize}
	tests := []struct {
		name    string
		request string
		want    map[string]mcp.ServerConfig
		applied bool
		warns   []string
	}{
		{name: "none", request: `{}`, want: map[string]mcp.ServerConfig{}},
		{name: "the Claude Agent SDK's list of in-process servers", request: `{"sdkMcpServers":["calc","notes"]}`,
			want: map[string]mcp.ServerConfig{"calc": sdk, "notes": sdk}},
		{name: "Qwen Code's object of in-process servers", request: `{"sdkMcpServers":{"calc":{"type":"sdk","name":"calc"}}}`,
			want: map[string]mcp.ServerConfig{"calc": sdk}},
		{name: "delivered servers, in Claude Code's and Qwen Code's keys", applied: true,
			request: `{"mcpServers":{"fs":{"command":"node","args":["s.js"]},"web":{"type":"http","url":"http://127.0.0.1:1/mcp"},` +
				`"q":{"httpUrl":"http://127.0.0.1:2/mcp"},"old":{"url":"http://127.0.0.1:3/sse"}}}`,
			want: map[string]mcp.ServerConfig{
				"fs":  {Command: "node", Args: []string{"s.js"}, Source: sourceInitialize},
				"web": {Type: mcp.TransportHTTP, URL: "http://127.0.0.1:1/mcp", Source: sourceInitialize},
				"q":   {Type: mcp.TransportHTTP, URL: "http://127.0.0.1:2/mcp", Source: sourceInitialize},
				"old": {Type: mcp.TransportSSE, URL: "http://127.0.0.1:3/sse", Source: sourceInitialize},
			}},
		{name: "an entry that cannot be used is skipped with a warning", applied: true,
			request: `{"mcpServers":{"bad":{"type":"ftp"},"env":{"command":"x","env":{"K":"${STOKE_TEST_UNSET_VAR}"}}}}`,
			want:    map[string]mcp.ServerConfig{}, warns: []string{"bad", "env"}},
		{name: "an empty list of delivered servers still says applied", applied: true, request: `{"mcpServers":{}}`,
			want: map[string]mcp.ServerConfig{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var warned []string
			got, applied := parseMCPServers(gjson.Parse(tt.request), func(_ string, args ...any) {
				warned = append(warned, args[1].(string))
			})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("servers (-want +got):\n%s", diff)
			}
			if applied != tt.applied {
				t.Errorf("applied = %v", applied)
			}
			if strings.Join(warned, ",") != strings.Join(tt.warns, ",") {
				t.Errorf("warned about %v, want %v", warned, tt.warns)
			}
		})
	}
}
