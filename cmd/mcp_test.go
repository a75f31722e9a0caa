package cmd

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func serverNames(o outcome) []string {
	if o.opts == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(o.opts.MCP.Servers))
}

// Where MCP servers come from: --mcp-config (file or JSON, repeatable, both spellings, in
// SDK mode too), STOKE_MCP_CONFIG, mcp-servers in the home settings, and the project's
// settings and .mcp.json only when the project is trusted.
func TestMCPConfigSources(t *testing.T) {
	t.Parallel()
	const home = "mcp-servers:\n  home-srv: {command: h}\n"
	const projectSettings = "mcp-servers:\n  settings-srv: {command: s}\n"
	const dotMCP = `{"mcpServers": {"dot-srv": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}`
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		want     []string
		stderrIn []string
	}{
		{name: "untrusted", want: []string{"home-srv"},
			stderrIn: []string{"key=mcp-servers", "the project is not trusted", ".mcp.json: ignored"}},
		{name: "--trust-project", args: []string{"--trust-project"}, want: []string{"dot-srv", "home-srv", "settings-srv"}},
		{name: "STOKE_TRUST_PROJECT", env: map[string]string{"STOKE_TRUST_PROJECT": "1"}, want: []string{"dot-srv", "home-srv", "settings-srv"}},
		{name: "--bare skips the project", args: []string{"--trust-project", "--bare"}, want: []string{"home-srv"}},
		{name: "--mcp-config JSON, both spellings", args: []string{"--mcp-config", `{"mcpServers":{"a":{"command":"a"}}}`, `--mcp-config={"mcpServers":{"b":{"command":"b"}}}`},
			want: []string{"a", "b", "home-srv"}},
		{name: "--mcp-config FILE", args: []string{"--mcp-config", "extra.json"}, want: []string{"extra-srv", "home-srv"}},
		{name: "STOKE_MCP_CONFIG", env: map[string]string{"STOKE_MCP_CONFIG": "extra.json"}, want: []string{"extra-srv", "home-srv"}},
		{name: "--strict-mcp-config", args: []string{"--trust-project", "--strict-mcp-config", "--mcp-config", "extra.json"}, want: []string{"extra-srv"}},
		{name: "strict without --mcp-config", args: []string{"--strict-mcp-config"}, want: nil},
		{name: "SDK mode", args: append(slices.Clone(sdkArgs), "--mcp-config", `{"mcpServers":{"a":{"command":"a"}}}`, "--strict-mcp-config"), want: []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			writeFile(t, filepath.Join(p.cwd, "s.yaml"), "rules:\n  - reply: {text: hi}\n")
			writeFile(t, filepath.Join(p.userHome, ".stoke", "settings.yaml"), home)
			writeFile(t, filepath.Join(p.cwd, ".stoke", "settings.yaml"), projectSettings)
			writeFile(t, filepath.Join(p.cwd, ".mcp.json"), dotMCP)
			writeFile(t, filepath.Join(p.cwd, "extra.json"), `{"mcpServers":{"extra-srv":{"command":"x"}}}`)
			maps.Copy(p.env, tt.env)
			args := append([]string{"--scenario", "s.yaml"}, tt.args...)
			if !slices.Contains(args, "stream-json") {
				args = append(args, "-p", "hi")
			}
			got := p.run(t, args...)
			if got.code != 0 {
				t.Fatalf("exit %d: %s", got.code, got.stderr)
			}
			if names := serverNames(got); !slices.Equal(names, tt.want) {
				t.Errorf("servers = %v, want %v", names, tt.want)
			}
			for _, s := range tt.stderrIn {
				if !strings.Contains(got.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, got.stderr)
				}
			}
			if strings.Contains(got.stderr, "Claude Code flag ignored") {
				t.Errorf("an MCP flag is still ignored:\n%s", got.stderr)
			}
		})
	}
}

func TestMCPConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"not JSON", []string{"--mcp-config", "{nope"}, nil, "--mcp-config: not JSON"},
		{"no such file", []string{"--mcp-config", "missing.json"}, nil, "missing.json"},
		{"bad server", []string{"--mcp-config", `{"mcpServers":{"x":{"type":"http"}}}`}, nil, `server "x" (--mcp-config): an http server needs an http(s) url`},
		{"unset variable", []string{"--mcp-config", `{"mcpServers":{"x":{"command":"${NOT_SET_HERE}"}}}`}, nil, "NOT_SET_HERE"},
		{"bad MCP_TIMEOUT", []string{"--mcp-config", `{"mcpServers":{}}`}, map[string]string{"MCP_TIMEOUT": "soon"}, "MCP_TIMEOUT"},
		{"bad MCP_TOOL_TIMEOUT", []string{"--mcp-config", `{"mcpServers":{}}`}, map[string]string{"MCP_TOOL_TIMEOUT": "-5"}, `MCP_TOOL_TIMEOUT="-5": want a number of milliseconds`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := sdkProcess(t)
			maps.Copy(p.env, tt.env)
			got := p.run(t, append([]string{"-p", "hi"}, tt.args...)...)
			if got.code != 2 || !strings.Contains(got.stderr, tt.want) || strings.Count(strings.TrimSpace(got.stderr), "\n") != 0 {
				t.Errorf("exit %d, stderr %q; want 2 and one line with %q", got.code, got.stderr, tt.want)
			}
		})
	}
}

func TestMCPConfigExpandsAndTimesOut(t *testing.T) {
	t.Parallel()
	p := sdkProcess(t)
	p.env["GH_TOKEN"] = "ghp-test"
	p.env["MCP_TIMEOUT"] = "1500"
	p.env["MCP_TOOL_TIMEOUT"] = "2500"
	got := p.run(t, "-p", "hi", "--mcp-config", `{"mcpServers":{"gh":{"type":"http","url":"https://h/mcp","headers":{"Authorization":"Bearer ${GH_TOKEN}"}}}}`)
	if got.code != 0 {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	if h := got.opts.MCP.Servers["gh"].Headers["Authorization"]; h != "Bearer ghp-test" {
		t.Errorf("Authorization = %q", h)
	}
	if got.opts.MCP.StartTimeout != 1500*time.Millisecond || got.opts.MCP.CallTimeout != 2500*time.Millisecond {
		t.Errorf("StartTimeout = %v, CallTimeout = %v", got.opts.MCP.StartTimeout, got.opts.MCP.CallTimeout)
	}
}
