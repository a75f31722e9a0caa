package mcp

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// FuzzConfig parses arbitrary MCP configurations (.mcp.json, --mcp-config) and resolves
// their servers: never a panic; a parsed server has a name, and after Resolve a server
// that validates has what its transport needs; what is logged of it holds none of its
// env or header values.
func FuzzConfig(f *testing.F) {
	for _, seed := range []string{
		`{"mcpServers":{"fs":{"command":"npx","args":["-y","@modelcontextprotocol/server-filesystem","${HOME}"],"env":{"TOKEN":"${TOKEN:-dflt}"}}}}`,
		`{"mcpServers":{"gh":{"type":"http","url":"https://u:p@h/mcp?k=${KEY}","headers":{"Authorization":"Bearer ${KEY}"}}}}`,
		`{"mcpServers":{"s":{"type":"sse","url":"http://h/sse"},"x":{"type":"ws","url":"ws://h"}}}`,
		`{"mcpServers":{"":{"command":"a"}}}`, `{"mcpServers":{"a":{"command":"a","url":"http://h"}}}`,
		`{"mcpServers":{"sdk":{"type":"sdk"}}}`, `{"mcpServers":null}`, `{"servers":{}}`, `[]`, `{`, `{"mcpServers":{"a":1}}`,
		`{"mcpServers":{"a":{"command":"${A}${B:-}${}${C"}}}`,
	} {
		f.Add([]byte(seed))
	}
	lookup := func(name string) (string, bool) {
		switch name {
		case "HOME":
			return "/home/u", true
		case "KEY":
			return "secret-value-0123456789", true
		case "EMPTY":
			return "", true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := ParseJSON(data, "fuzz.json")
		if err != nil {
			return
		}
		for name, c := range servers {
			if strings.TrimSpace(name) == "" || c.Source != "fuzz.json" {
				t.Fatalf("server %q from %q", name, c.Source)
			}
			r, err := c.Resolve(lookup)
			if err != nil {
				continue
			}
			switch r.Transport() {
			case TransportStdio:
				if strings.TrimSpace(r.Command) == "" {
					t.Fatalf("a stdio server without a command validated: %+v", r)
				}
			case TransportHTTP, TransportSSE:
				if r.URL == "" || r.Command != "" {
					t.Fatalf("an %s server validated: %+v", r.Type, r)
				}
			}
			logged := fmt.Sprint(slog.AnyValue(r).Resolve())
			for _, v := range r.credentials() {
				if len(v) >= 8 && strings.Contains(logged, v) {
					t.Fatalf("logged %q holds the credential %q", logged, v)
				}
			}
		}
	})
}
