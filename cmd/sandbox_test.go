package cmd

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/sandbox"
)

// The sandbox's flags, variables and settings, and what a project may set of them.
func TestSandboxConfig(t *testing.T) {
	t.Parallel()
	type want struct {
		mode              sandbox.Mode
		network, required bool
		prompt            string
		warn              string // in stderr
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		home    string // home settings
		project string // project settings
		trusted bool
		want    want
	}{
		{name: "default", want: want{mode: sandbox.ModeWorkspaceWrite}},
		{name: "--sandbox MODE", args: []string{"--sandbox", "read-only"}, want: want{mode: sandbox.ModeReadOnly}},
		{name: "--sandbox=off", args: []string{"--sandbox=off"}, want: want{mode: sandbox.ModeOff}},
		{name: "bare --sandbox (Qwen Code's boolean)", args: []string{"--sandbox", "--sandbox-network"}, want: want{mode: sandbox.ModeWorkspaceWrite, network: true}},
		{name: "bare --sandbox before the prompt", args: []string{"--sandbox", "fix it"}, want: want{mode: sandbox.ModeWorkspaceWrite, prompt: "fix it"}},
		{name: "Qwen Code's --sandbox=true", args: []string{"--sandbox=true"}, want: want{mode: sandbox.ModeWorkspaceWrite}},
		{name: "STOKE_SANDBOX", env: map[string]string{"STOKE_SANDBOX": "read-only", "STOKE_SANDBOX_REQUIRED": "true"}, want: want{mode: sandbox.ModeReadOnly, required: true}},
		{name: "home settings", home: "sandbox: off\nsandbox-network: true\nsandbox-required: true\n", want: want{mode: sandbox.ModeOff, network: true, required: true}},
		{name: "a project narrows", project: "sandbox: read-only\n", want: want{mode: sandbox.ModeReadOnly}},
		{name: "a project does not widen", project: "sandbox: off\nsandbox-network: true\nsandbox-required: false\n",
			want: want{mode: sandbox.ModeWorkspaceWrite, warn: "key=sandbox"}},
		{name: "a trusted project does not widen either", project: "sandbox: off\n", trusted: true,
			want: want{mode: sandbox.ModeWorkspaceWrite, warn: "a project may only narrow it, trusted or not"}},
		{name: "a project under a home that turned it off narrows again", home: "sandbox: off\n", project: "sandbox: workspace-write\n", want: want{mode: sandbox.ModeWorkspaceWrite}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			p.env["OPENAI_API_KEY"] = "sk-test"
			for k, v := range tt.env {
				p.env[k] = v
			}
			if tt.home != "" {
				p.homeSettings(t, tt.home)
			}
			if tt.project != "" {
				p.projectSettings(t, tt.project)
			}
			args := tt.args
			if tt.trusted {
				args = append(args, "--trust-project")
			}
			if tt.want.prompt == "" {
				args = append(args, "-p", "hi")
			}
			got := p.run(t, args...)
			if got.code != 0 || got.opts == nil {
				t.Fatalf("exit %d: %s", got.code, got.stderr)
			}
			cfg := got.opts.Sandbox.Config()
			if cfg.Mode != tt.want.mode || cfg.Network != tt.want.network || cfg.Required != tt.want.required {
				t.Errorf("sandbox %+v, want %+v", cfg, tt.want)
			}
			if tt.want.prompt != "" && got.opts.Prompt != tt.want.prompt {
				t.Errorf("prompt %q, want %q", got.opts.Prompt, tt.want.prompt)
			}
			if tt.want.warn != "" && !strings.Contains(got.stderr, tt.want.warn) {
				t.Errorf("stderr lacks %q: %s", tt.want.warn, got.stderr)
			}
			if cfg.StokeHome != got.opts.Home || cfg.UserHome != p.userHome {
				t.Errorf("StokeHome %q UserHome %q", cfg.StokeHome, cfg.UserHome)
			}
		})
	}
}

func TestSandboxPaths(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-test"
	extra := t.TempDir()
	writeFile(t, filepath.Join(p.cwd, "build", "x"), "")
	p.homeSettings(t, "sandbox-writable: ["+extra+", relative/dir]\nsandbox-deny-read: [/srv/secrets]\n")
	p.projectSettings(t, "sandbox-writable: [/]\n")
	got := p.run(t, "-p", "hi", "--sandbox-writable", "build", "--sandbox-deny-read", "keys")
	if got.code != 0 {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	cfg := got.opts.Sandbox.Config()
	if want := []string{extra, filepath.Join(p.cwd, "build")}; !slices.Equal(cfg.Writable, want) {
		t.Errorf("Writable %q, want %q", cfg.Writable, want)
	}
	if want := []string{"/srv/secrets", filepath.Join(p.cwd, "keys")}; !slices.Equal(cfg.DenyRead, want) {
		t.Errorf("DenyRead %q, want %q", cfg.DenyRead, want)
	}
	for _, w := range []string{`relative/dir\" is not an absolute path`, "only " + filepath.Join(p.userHome, ".stoke", "settings.yaml") + " may set it"} {
		if !strings.Contains(got.stderr, w) {
			t.Errorf("stderr lacks %q: %s", w, got.stderr)
		}
	}
}

func TestSandboxBadUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--sandbox=danger-full-access"},
		{"--sandbox-writable", "no/such/dir"},
	} {
		p := newTestProcess(t)
		p.env["OPENAI_API_KEY"] = "sk-test"
		got := p.run(t, append(args, "-p", "hi")...)
		if got.code != 2 || strings.Count(got.stderr, "\n") != 1 || !strings.Contains(got.stderr, "sandbox") {
			t.Errorf("%q: exit %d, stderr %q", args, got.code, got.stderr)
		}
	}
}
