package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/headless"
)

func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"max turns", fmt.Errorf("parent: %w", headless.ErrMaxTurns), 1},
		{"run failed", fmt.Errorf("model call: %w", headless.ErrRunFailed), 1},
		{"run failed on a provider config error", fmt.Errorf("%w: %w", headless.ErrRunFailed, llm.ErrBadConfig), 1},
		{"headless usage", fmt.Errorf("stream-json line 3: %w", headless.ErrUsage), 2},
		{"cmd usage", usageErrorf("no prompt"), 2},
		{"wrapped cmd usage", fmt.Errorf("load: %w", usageErrorf("bad")), 2},
		{"no api key", fmt.Errorf("openai: %w", llm.ErrNoAPIKey), 2},
		{"bad provider config", fmt.Errorf("scenario: %w", llm.ErrBadConfig), 2},
		{"SIGINT", &headless.InterruptedError{Signal: syscall.SIGINT}, 130},
		{"SIGTERM", fmt.Errorf("run: %w", &headless.InterruptedError{Signal: syscall.SIGTERM}), 143},
		{"interrupted beats run failed", fmt.Errorf("%w: %w", headless.ErrRunFailed, &headless.InterruptedError{Signal: syscall.SIGINT}), 130},
		{"anything else", errors.New("disk full"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := exitCode(tt.err); got != tt.want {
				t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

// The error runF returns reaches the exit code and is reported on one stderr line.
func TestRunErrorReported(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, 0},
		{"max turns", fmt.Errorf("after 3 turns: %w", headless.ErrMaxTurns), 1},
		{"run failed", fmt.Errorf("provider said:\n500 internal\n%w", headless.ErrRunFailed), 1},
		{"bad stream-json input", fmt.Errorf("line 2: %w", headless.ErrUsage), 2},
		{"SIGINT", &headless.InterruptedError{Signal: syscall.SIGINT}, 130},
		{"SIGTERM", &headless.InterruptedError{Signal: syscall.SIGTERM}, 143},
		{"other", errors.New("boom"), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			p.env["OPENAI_API_KEY"] = "sk-test"
			p.runErr = tt.err
			got := p.run(t, "-p", "hello")
			if got.opts == nil {
				t.Fatal("runF was not called")
			}
			if got.code != tt.want {
				t.Errorf("exit code = %d, want %d (stderr %q)", got.code, tt.want, got.stderr)
			}
			if tt.err == nil {
				if got.stderr != "" {
					t.Errorf("stderr = %q, want nothing", got.stderr)
				}
				return
			}
			requireOneErrorLine(t, got.stderr)
		})
	}
}

// Bad usage and bad configuration exit 2 with one line on stderr, before anything runs.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, p *testProcess)
		args  []string
		want  string // in the stderr line
	}{
		{name: "unknown flag", args: []string{"--bogus"}, want: "unknown flag: --bogus"},
		{name: "flag value of the wrong type", args: []string{"-p", "x", "--max-turns", "many"}, want: "--max-turns"},
		{name: "two prompt arguments", args: []string{"fix", "it"}, want: `unexpected argument "it" after the prompt "fix"`},
		{name: "misspelt command", args: []string{"versoin"}, want: `did you mean "version"`},
		{name: "unknown provider", args: []string{"-p", "x", "--provider", "gemini"}, want: `invalid --provider "gemini": want one of openai, anthropic, scripted`},
		{name: "unknown provider from env", args: []string{"-p", "x"}, want: "(from STOKE_PROVIDER)",
			setup: func(_ *testing.T, p *testProcess) { p.env["STOKE_PROVIDER"] = "gemini" }},
		{name: "anthropic without key", args: []string{"-p", "x", "--provider", "anthropic"}, want: "set ANTHROPIC_API_KEY"},
		{name: "bad approval mode", args: []string{"-p", "x", "--approval-mode", "sometimes"}, want: `invalid --approval-mode "sometimes": want one of plan, default, auto-edit, yolo`},
		{name: "bad approval mode from project settings", args: []string{"-p", "x"}, want: "settings.yaml",
			setup: func(t *testing.T, p *testProcess) { p.projectSettings(t, "approval-mode: always\n") }},
		{name: "bad output format", args: []string{"-p", "x", "--output-format", "xml"}, want: "--output-format"},
		{name: "bad input format", args: []string{"-p", "x", "--input-format", "json"}, want: "--input-format"},
		{name: "bad background-on-exit", args: []string{"-p", "x", "--background-on-exit", "detach"}, want: "wait, cancel"},
		{name: "negative max turns", args: []string{"-p", "x", "--max-turns", "-1"}, want: "--max-turns"},
		{name: "negative timeout", args: []string{"-p", "x", "--timeout", "-5s"}, want: "--timeout"},
		{name: "zero max background", args: []string{"-p", "x", "--max-background", "0"}, want: "--max-background"},
		{name: "zero max foreground", args: []string{"-p", "x", "--max-foreground", "0"}, want: "invalid --max-foreground 0: want 1 or more"},
		{name: "negative max queued", args: []string{"-p", "x", "--max-queued", "-3"}, want: "invalid --max-queued -3: want 0 (no queue) or more"},
		{name: "zero max retained", args: []string{"-p", "x", "--max-retained", "0"}, want: "invalid --max-retained 0: want 1 or more"},
		{name: "max turns env not a number", args: []string{"-p", "x"}, want: "STOKE_MAX_TURNS",
			setup: func(_ *testing.T, p *testProcess) { p.env["STOKE_MAX_TURNS"] = "lots" }},
		{name: "timeout env without unit", args: []string{"-p", "x"}, want: "STOKE_TIMEOUT",
			setup: func(_ *testing.T, p *testProcess) { p.env["STOKE_TIMEOUT"] = "30" }},
		{name: "bad log level", args: []string{"-p", "x"}, want: "STOKE_LOG_LEVEL",
			setup: func(_ *testing.T, p *testProcess) { p.env["STOKE_LOG_LEVEL"] = "chatty" }},
		{name: "session id not a UUID", args: []string{"-p", "x", "--session-id", "../../etc"}, want: "--session-id"},
		{name: "resume and continue", args: []string{"-p", "x", "--resume", "abc", "--continue"}, want: "--resume and --continue"},
		{name: "session id with resume", args: []string{"-p", "x", "--resume", "abc", "--session-id", fixedSessionID}, want: "--session-id"},
		{name: "scripted without scenario", args: []string{"-p", "x", "--provider", "scripted"}, want: "--scenario"},
		{name: "missing scenario file", args: []string{"-p", "x", "--scenario", "nope.yaml"}, want: "nope.yaml"},
		{name: "malformed scenario", args: []string{"-p", "x", "--scenario", "bad.yaml"}, want: "bad.yaml",
			setup: func(t *testing.T, p *testProcess) { writeFile(t, filepath.Join(p.cwd, "bad.yaml"), "rules: [\n") }},
		{name: "no api key", args: []string{"-p", "x"}, want: "OPENAI_API_KEY"},
		{name: "malformed project settings", args: []string{"-p", "x"}, want: filepath.Join(".stoke", "settings.yaml"),
			setup: func(t *testing.T, p *testProcess) { p.projectSettings(t, "model: [gpt\n") }},
		{name: "malformed home settings", args: []string{"-p", "x"}, want: filepath.Join("statehome", "settings.yaml"),
			setup: func(t *testing.T, p *testProcess) {
				p.env["STOKE_HOME"] = filepath.Join(p.userHome, "statehome")
				p.homeSettings(t, "- just\n- a list\n")
			}},
		{name: "settings value of the wrong type", args: []string{"-p", "x"}, want: "max-turns",
			setup: func(t *testing.T, p *testProcess) { p.projectSettings(t, "max-turns: plenty\n") }},
		{name: "no prompt, stdin is a terminal", args: nil, want: "no prompt: pass the prompt as an argument"},
		{name: "empty stdin", args: nil, want: "no prompt",
			setup: func(_ *testing.T, p *testProcess) { p.tty, p.stdin = false, "\n\n" }},
		{name: "blank -p", args: []string{"-p", "  "}, want: "empty prompt"},
		{name: "prompt with stream-json input", args: []string{"-p", "x", "--input-format", "stream-json"}, want: "stream-json"},
		{name: "unknown sessions command", args: []string{"sessions", "rm"}, want: `unknown command "rm"`},
		{name: "agents without list", args: []string{"agents"}, want: "missing command"},
		{name: "run flag on a subcommand", args: []string{"version", "--model", "x"}, want: "unknown flag: --model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			if tt.name != "no api key" {
				p.env["OPENAI_API_KEY"] = "sk-test"
			}
			if tt.setup != nil {
				tt.setup(t, p)
			}
			got := p.run(t, tt.args...)
			if got.code != 2 {
				t.Errorf("exit code = %d, want 2 (stderr %q)", got.code, got.stderr)
			}
			if got.opts != nil {
				t.Error("runF was called")
			}
			if got.stdout != "" {
				t.Errorf("stdout = %q, want nothing", got.stdout)
			}
			requireOneErrorLine(t, got.stderr)
			if !strings.Contains(got.stderr, tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", got.stderr, tt.want)
			}
			if strings.Contains(got.stderr, "sk-test") {
				t.Errorf("stderr shows the API key: %q", got.stderr)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	first := fmt.Sprintf("stoke 1.2.3 (%s %s/%s)\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	got := newTestProcess(t).run(t, "--version")
	if got.code != 0 || got.stdout != first || got.stderr != "" {
		t.Errorf("stoke --version: code %d, stdout %q, stderr %q; want 0, %q, nothing", got.code, got.stdout, got.stderr, first)
	}
	got = newTestProcess(t).run(t, "version")
	if got.code != 0 || !strings.HasPrefix(got.stdout, first) || got.stderr != "" {
		t.Errorf("stoke version: code %d, stdout %q, stderr %q; want 0, %q first", got.code, got.stdout, got.stderr, first)
	}
	got = newTestProcess(t).run(t, "version", "--json")
	var info BuildInfo
	if err := json.Unmarshal([]byte(got.stdout), &info); err != nil || got.code != 0 {
		t.Fatalf("stoke version --json: code %d, stdout %q: %v", got.code, got.stdout, err)
	}
	if info.Version != "1.2.3" || info.Go != runtime.Version() || info.OS != runtime.GOOS || info.Arch != runtime.GOARCH {
		t.Errorf("version --json = %+v", info)
	}
	if strings.Count(got.stdout, "\n") != 1 {
		t.Errorf("version --json printed %q, want one line", got.stdout)
	}
}

func TestListCommandsReadDisk(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	home := filepath.Join(p.userHome, ".stoke")
	sess := store.New(home, p.cwd, fixedSessionID)
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	if err := sess.WriteInfo(store.Info{SessionID: fixedSessionID, CWD: p.cwd, Model: "m1", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	row := agents.Row{TaskID: "a0123456789abcdef", Description: "keep nonce", SubagentType: "general-purpose",
		Status: agents.StatusCompleted, Turn: 2, Backgrounded: true, ParentSessionID: fixedSessionID, CreatedAt: now}
	data, err := agents.EncodeSidecar(agents.Sidecar{Row: row, CWD: p.cwd}, sess.Rel)
	if err == nil {
		err = sess.WriteSidecar(string(row.TaskID), data)
	}
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"sessions", "list"}, []string{"SESSION ID", fixedSessionID, "m1"}},
		{[]string{"sessions", "list", "--json"}, []string{`"session_id": "` + fixedSessionID + `"`}},
		{[]string{"agents", "list"}, []string{"TASK ID", "a0123456789abcdef", "completed", "keep nonce"}},
		{[]string{"agents", "list", "--session", fixedSessionID, "--json"}, []string{`"task_id": "a0123456789abcdef"`, `"turn": 2`}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			got := p.run(t, tt.args...)
			if got.code != 0 || got.stderr != "" {
				t.Fatalf("code %d, stderr %q", got.code, got.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(got.stdout, w) {
					t.Errorf("stdout %q lacks %q", got.stdout, w)
				}
			}
		})
	}
	t.Run("unknown session", func(t *testing.T) {
		t.Parallel()
		got := p.run(t, "agents", "list", "--session", "00000000-0000-4000-8000-00000000ffff")
		if got.code != 2 || strings.Count(got.stderr, "\n") != 1 || !strings.Contains(got.stderr, "no stored session") {
			t.Errorf("code %d, stderr %q", got.code, got.stderr)
		}
	})
	t.Run("empty", func(t *testing.T) {
		t.Parallel()
		got := newTestProcess(t).run(t, "sessions", "list", "--json")
		if got.code != 0 || got.stdout != "[]\n" {
			t.Errorf("code %d, stdout %q", got.code, got.stdout)
		}
	})
}

// The list commands hand their flags and paths to the hook.
func TestListCommandsHooks(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["STOKE_HOME"] = filepath.Join(p.cwd, "state")

	t.Run("sessions", func(t *testing.T) {
		t.Parallel()
		deps, _, _ := p.deps()
		var got SessionsListOptions
		c := NewCmdSessions(deps, func(_ context.Context, o SessionsListOptions) error { got = o; return nil })
		c.SetArgs([]string{"list", "--json"})
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		if !got.JSON || got.Home != p.env["STOKE_HOME"] || got.CWD != p.cwd || got.Out != deps.Out {
			t.Errorf("options = %+v", got)
		}
	})
	t.Run("agents", func(t *testing.T) {
		t.Parallel()
		deps, _, _ := p.deps()
		var got AgentsListOptions
		c := NewCmdAgents(deps, func(_ context.Context, o AgentsListOptions) error { got = o; return nil })
		c.SetArgs([]string{"list", "--session", "s-1"})
		if err := c.Execute(); err != nil {
			t.Fatal(err)
		}
		if got.JSON || got.Session != "s-1" || got.Home != p.env["STOKE_HOME"] || got.CWD != p.cwd {
			t.Errorf("options = %+v", got)
		}
	})
}
