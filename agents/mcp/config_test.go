package mcp

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]ServerConfig
		wantErr string
	}{
		{
			name: "stdio, http and sse",
			in: `{"mcpServers": {
				"fs": {"command": "npx", "args": ["-y", "server-fs", "."], "env": {"K": "v"}},
				"web": {"type": "http", "url": "https://example.test/mcp", "headers": {"Authorization": "Bearer x"}},
				"old": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
				"typed": {"type": "stdio", "command": "srv", "timeout": 5000}}}`,
			want: map[string]ServerConfig{
				"fs":    {Command: "npx", Args: []string{"-y", "server-fs", "."}, Env: map[string]string{"K": "v"}},
				"web":   {Type: "http", URL: "https://example.test/mcp", Headers: map[string]string{"Authorization": "Bearer x"}},
				"old":   {Type: "sse", URL: "http://127.0.0.1:9/sse"},
				"typed": {Type: "stdio", Command: "srv"},
			},
		},
		{name: "streamable-http is http", in: `{"mcpServers":{"a":{"type":"streamable-http","url":"http://h/mcp"}}}`,
			want: map[string]ServerConfig{"a": {Type: "http", URL: "http://h/mcp"}}},
		{name: "no servers", in: `{"mcpServers":{}}`, want: map[string]ServerConfig{}},
		{name: "not wrapped", in: `{"fs":{"command":"x"}}`, wantErr: `want {"mcpServers"`},
		{name: "not JSON", in: `mcpServers: {}`, wantErr: "not JSON"},
		{name: "no command", in: `{"mcpServers":{"a":{"args":["x"]}}}`, wantErr: `server "a": a stdio server needs a command`},
		{name: "http without url", in: `{"mcpServers":{"a":{"type":"http"}}}`, wantErr: `server "a": an http server needs an http(s) url`},
		{name: "bad scheme", in: `{"mcpServers":{"a":{"type":"sse","url":"file:///etc/passwd"}}}`, wantErr: "needs an http(s) url"},
		{name: "unknown type", in: `{"mcpServers":{"a":{"type":"ws","url":"ws://h"}}}`, wantErr: `type "ws" is not supported`},
		{name: "wrong shape", in: `{"mcpServers":{"a":{"command":"x","env":{"K":1}}}}`, wantErr: `server "a": want {command, args, env}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseJSON([]byte(tt.in), "src")
			for name, c := range got {
				if err == nil {
					if _, err = c.Resolve(func(string) (string, bool) { return "", false }); err != nil {
						err = fmt.Errorf("server %q: %w", name, err)
					}
				}
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, c := range got {
				if c.Source != "src" {
					t.Errorf("%s: source %q", name, c.Source)
				}
			}
			if d := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(ServerConfig{}, "Source"), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("(-want +got)\n%s", d)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"TOKEN": "t0k", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	c := ServerConfig{
		Command: "${BIN:-npx}",
		Args:    []string{"--token=${TOKEN}", "$HOME stays", "${EMPTY:-fallback}", "${EMPTY}"},
		Env:     map[string]string{"A": "${TOKEN}"},
		URL:     "https://h/${TOKEN}",
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"},
	}
	got, err := c.Expand(lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := ServerConfig{
		Command: "npx",
		Args:    []string{"--token=t0k", "$HOME stays", "fallback", ""},
		Env:     map[string]string{"A": "t0k"},
		URL:     "https://h/t0k",
		Headers: map[string]string{"Authorization": "Bearer t0k"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got)\n%s", d)
	}
	if c.Args[0] != "--token=${TOKEN}" || c.Env["A"] != "${TOKEN}" {
		t.Errorf("Expand changed its receiver: %+v", c)
	}
	if _, err := (ServerConfig{Command: "x", Args: []string{"${NOPE}", "${ALSO_NOPE}"}}).Expand(lookup); err == nil ||
		!strings.Contains(err.Error(), "ALSO_NOPE, NOPE") {
		t.Errorf("missing variables: err = %v", err)
	}
}

func TestLogValueHidesEnvAndHeaderValues(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, nil))
	logger.Info("x", "config", ServerConfig{Command: "srv", Env: map[string]string{"API_TOKEN": "tok-123"}},
		"http", ServerConfig{Type: "http", URL: "http://u:pw-789@h/mcp?key=qk-000", Headers: map[string]string{"Authorization": "Bearer abc-456"}})
	out := buf.String()
	for _, secret := range []string{"tok-123", "abc-456", "pw-789", "qk-000"} {
		if strings.Contains(out, secret) {
			t.Errorf("log line holds %q: %s", secret, out)
		}
	}
	for _, name := range []string{"API_TOKEN", "Authorization"} {
		if !strings.Contains(out, name) {
			t.Errorf("log line lacks the name %s: %s", name, out)
		}
	}
}

func TestLoad(t *testing.T) {
	project := t.TempDir()
	write := func(path, data string) string {
		t.Helper()
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write(filepath.Join(project, ProjectFile), `{"mcpServers": {
		"shared": {"command": "from-project"},
		"project-only": {"command": "p", "env": {"T": "${PROJECT_TOKEN}"}}}}`)
	flagFile := write(filepath.Join(t.TempDir(), "flag.json"), `{"mcpServers": {"flag-file": {"type": "http", "url": "http://h/${PATH_PART:-mcp}"}}}`)
	settings := map[string]any{
		"shared":        map[string]any{"command": "from-settings"},
		"settings-only": map[string]any{"command": "s", "args": []any{"a"}},
	}
	env := map[string]string{"PROJECT_TOKEN": "pt"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	base := LoadInput{Settings: settings, SettingsSource: "home/settings.yaml", ProjectDir: project, LookupEnv: lookup}

	tests := []struct {
		name     string
		in       func(LoadInput) LoadInput
		want     map[string]string // name -> command or url
		warnings []string
	}{
		{
			name:     "untrusted: settings and flags, not .mcp.json",
			in:       func(in LoadInput) LoadInput { in.Configs = []string{flagFile}; return in },
			want:     map[string]string{"shared": "from-settings", "settings-only": "s", "flag-file": "http://h/mcp"},
			warnings: []string{"ignored: the project is not trusted"},
		},
		{
			name: "trusted: .mcp.json over settings, flags over both",
			in: func(in LoadInput) LoadInput {
				in.Trusted = true
				in.Configs = []string{flagFile, `{"mcpServers":{"shared":{"command":"from-flag"}}}`}
				return in
			},
			want: map[string]string{"shared": "from-flag", "settings-only": "s", "project-only": "p", "flag-file": "http://h/mcp"},
		},
		{
			name: "strict: only --mcp-config",
			in: func(in LoadInput) LoadInput {
				in.Trusted, in.Strict = true, true
				in.Configs = []string{flagFile}
				return in
			},
			want: map[string]string{"flag-file": "http://h/mcp"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warnings, err := Load(tt.in(base))
			if err != nil {
				t.Fatal(err)
			}
			gotNames := map[string]string{}
			for name, c := range got {
				gotNames[name] = c.Command + c.URL
			}
			if d := cmp.Diff(tt.want, gotNames); d != "" {
				t.Errorf("servers (-want +got)\n%s", d)
			}
			if len(warnings) != len(tt.warnings) {
				t.Fatalf("warnings = %q, want %d", warnings, len(tt.warnings))
			}
			for i, w := range tt.warnings {
				if !strings.Contains(warnings[i], w) {
					t.Errorf("warning %q, want it to contain %q", warnings[i], w)
				}
			}
		})
	}
	t.Run("expanded and sourced", func(t *testing.T) {
		in := base
		in.Trusted = true
		got, _, err := Load(in)
		if err != nil {
			t.Fatal(err)
		}
		if c := got["project-only"]; c.Env["T"] != "pt" || c.Source != filepath.Join(project, ProjectFile) {
			t.Errorf("project-only = %+v", c)
		}
		if c := got["settings-only"]; c.Source != "home/settings.yaml" {
			t.Errorf("settings-only source = %q", c.Source)
		}
	})

	errs := []struct {
		name string
		in   LoadInput
		want string
	}{
		{"bad flag JSON", LoadInput{Configs: []string{`{"mcpServers":`}}, "--mcp-config: not JSON"},
		{"missing flag file", LoadInput{Configs: []string{filepath.Join(project, "nope.json")}}, "--mcp-config: open"},
		{"bad flag server", LoadInput{Configs: []string{`{"mcpServers":{"x":{}}}`}}, `server "x" (--mcp-config): a stdio server needs a command`},
		{"unset variable in a flag", LoadInput{Configs: []string{`{"mcpServers":{"x":{"command":"${NOT_SET}"}}}`}}, "environment variables not set: NOT_SET"},
		{"bad settings", LoadInput{Settings: map[string]any{"x": "npx"}, SettingsSource: "s.yaml"}, "settings: mcp-servers (from s.yaml)"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := Load(tt.in); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}

	t.Run("a broken .mcp.json is skipped with a warning", func(t *testing.T) {
		dir := t.TempDir()
		write(filepath.Join(dir, ProjectFile), `{"mcpServers":{"x":{"type":"http"}}}`)
		got, warnings, err := Load(LoadInput{ProjectDir: dir, Trusted: true, Settings: settings})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || len(warnings) != 1 || !strings.Contains(warnings[0], "skipped") {
			t.Errorf("servers %v, warnings %q", got, warnings)
		}
	})
}
