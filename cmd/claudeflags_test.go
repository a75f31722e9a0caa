package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless/sdkhost"
)

// sdkProcess is a fake process with a scenario, as an SDK app configures stoke through
// options.env.
func sdkProcess(t *testing.T) *testProcess {
	t.Helper()
	p := newTestProcess(t)
	writeFile(t, filepath.Join(p.cwd, "s.yaml"), "rules:\n  - reply: {text: hi}\n")
	p.env["STOKE_SCENARIO"] = "s.yaml"
	return p
}

// checkSDKOptions fails t unless the run exited 0 with the approval mode and the SDK
// options want.
func checkSDKOptions(t *testing.T, got outcome, approval tools.Mode, want sdkhost.Options) {
	t.Helper()
	if got.code != 0 || got.opts == nil {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	if got.opts.ApprovalMode != approval {
		t.Errorf("approval mode = %q, want %q", got.opts.ApprovalMode, approval)
	}
	if diff := cmp.Diff(want, got.opts.SDK, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("SDK options (-want +got):\n%s", diff)
	}
}

// sdkArgs is what the Claude Agent SDK always passes.
var sdkArgs = []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}

func TestClaudeFlagsHonoured(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		approval tools.Mode
		want     sdkhost.Options
		noHome   bool
	}{
		{name: "the SDK's bare invocation", approval: "default"},
		{name: "acceptEdits, one token", args: []string{"--permission-mode=acceptEdits"}, approval: "auto-edit"},
		{name: "bypassPermissions, two tokens", args: []string{"--permission-mode", "bypassPermissions"}, approval: "yolo"},
		{name: "plan", args: []string{"--permission-mode=plan"}, approval: "plan"},
		{name: "dontAsk never asks", args: []string{"--permission-mode=dontAsk", "--permission-prompt-tool=stdio"}, approval: "default",
			want: sdkhost.Options{PermissionPromptStdio: true, NoPrompt: true}},
		{name: "an unknown mode is default", args: []string{"--permission-mode=auto"}, approval: "default"},
		{name: "--approval-mode wins", args: []string{"--permission-mode=plan", "--approval-mode", "yolo"}, approval: "yolo"},
		{name: "--dangerously-skip-permissions", args: []string{"--dangerously-skip-permissions"}, approval: "yolo"},
		{name: "tool rules in both spellings, commas inside parentheses kept",
			args:     []string{"--allowedTools=Read,Bash(git log:*)", "--allowed-tools", "Edit Bash(echo a,b)", "--disallowedTools=WebFetch", "--disallowed-tools", "Bash(rm:*)"},
			approval: "default",
			want:     sdkhost.Options{AllowedTools: []string{"Read", "Bash(git log:*)", "Edit", "Bash(echo a,b)"}, DisallowedTools: []string{"WebFetch", "Bash(rm:*)"}}},
		{name: "--tools list", args: []string{"--tools=Read,Bash"}, approval: "default", want: sdkhost.Options{Tools: []string{"Read", "Bash"}}},
		{name: "--tools default is all", args: []string{"--tools=default"}, approval: "default"},
		{name: "--tools empty is none", args: []string{"--tools="}, approval: "default", want: sdkhost.Options{Tools: []string{}}},
		{name: "--permission-prompt-tool=stdio", args: []string{"--permission-prompt-tool=stdio"}, approval: "default", want: sdkhost.Options{PermissionPromptStdio: true}},
		{name: "an MCP permission tool is not supported", args: []string{"--permission-prompt-tool", "mcp__x__approve"}, approval: "default"},
		{name: "partial messages and budget", args: []string{"--include-partial-messages", "--max-budget-usd=1.5"}, approval: "default",
			want: sdkhost.Options{IncludePartialMessages: true, MaxBudgetUSD: 1.5}},
		{name: "system prompts", args: []string{"--system-prompt", "Be a pirate.", "--append-system-prompt=Say arr."}, approval: "default",
			want: sdkhost.Options{SystemPrompt: "Be a pirate.", AppendSystemPrompt: "Say arr."}},
		{name: "--agents JSON", args: []string{"--agents", `{"reviewer":{"description":"Reviews","prompt":"You review.","tools":["Read","Grep"],"model":"sonnet"}}`}, approval: "default",
			want: sdkhost.Options{Agents: []catalog.Definition{{Name: "reviewer", Description: "Reviews", Prompt: "You review.", Tools: []string{"read_file", "grep"}, Model: "sonnet", Source: "sdk"}}}},
		{name: "session states from the SDK's environment", env: map[string]string{"CLAUDE_CODE_SDK_READS_SESSION_STATE": "1"}, approval: "default",
			want: sdkhost.Options{SessionStates: true}},
		{name: "--no-session-persistence", args: []string{"--no-session-persistence"}, approval: "default", noHome: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := sdkProcess(t)
			for k, v := range tt.env {
				p.env[k] = v
			}
			got := p.run(t, append(append([]string{}, sdkArgs...), tt.args...)...)
			checkSDKOptions(t, got, tt.approval, tt.want)
			if (tt.want.Tools == nil) != (got.opts.SDK.Tools == nil) {
				t.Errorf("Tools = %#v: nil (all) and empty (none) differ", got.opts.SDK.Tools)
			}
			if (got.opts.Home == "") != tt.noHome {
				t.Errorf("Home = %q", got.opts.Home)
			}
		})
	}
}

// Every flag the Claude Agent SDK passes is accepted in SDK mode, in both spellings, with
// at most one warning line; none makes stoke exit 2.
func TestClaudeFlagsNeverExit2(t *testing.T) {
	t.Parallel()
	for _, cf := range claudeFlags() {
		var spellings [][]string
		switch cf.typ {
		case flagBool:
			spellings = [][]string{{"--" + cf.name}, {"--" + cf.name + "=true"}}
		case flagFloat:
			spellings = [][]string{{"--" + cf.name + "=0.5"}, {"--" + cf.name, "0.5"}}
		default:
			val := "x"
			switch cf.name {
			case "agents":
				val = `{"a":{"description":"d","prompt":"p"}}`
			case "mcp-config", "settings", "managed-settings":
				val = `{"mcpServers":{}}`
			case "json-schema":
				val = `{"type":"object"}` // a value that is not a schema is a usage error
			case "system-prompt-file", "append-system-prompt-file":
				val = "prompt.txt" // written below: a missing file is a usage error
			}
			spellings = [][]string{{"--" + cf.name + "=" + val}, {"--" + cf.name, val}}
		}
		for _, sp := range spellings {
			t.Run(strings.Join(sp, " "), func(t *testing.T) {
				t.Parallel()
				p := sdkProcess(t)
				writeFile(t, filepath.Join(p.cwd, "prompt.txt"), "Be brief.\n")
				got := p.run(t, append(append([]string{}, sdkArgs...), sp...)...)
				if got.code != 0 {
					t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
				}
				warnings := strings.Count(got.stderr, "level=WARN")
				switch {
				case cf.ignored != "" && (warnings != 1 || !strings.Contains(got.stderr, "flag=--"+cf.name)):
					t.Errorf("want one warning naming --%s, stderr:\n%s", cf.name, got.stderr)
				case cf.ignored == "" && warnings > 1:
					t.Errorf("a honoured flag warned more than once:\n%s", got.stderr)
				}
			})
		}
	}
}

func TestUnknownFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		code     int
		stderrIn []string
	}{
		{"SDK mode: unknown flags and their values are skipped with a warning",
			append(append([]string{}, sdkArgs...), "--some-flag", "--other", "v", "--max-turns=3"), 0,
			[]string{"flag=--some-flag", "flag=--other"}},
		{"SDK mode: an unknown flag's value that starts with \"- \" is its value, not a prompt",
			append(append([]string{}, sdkArgs...), "--some-flag", "- a list", "--max-turns=3"), 0,
			[]string{"flag=--some-flag"}},
		{"SDK mode, one-token spellings", []string{"--output-format=stream-json", "--input-format=stream-json", "--future=1", "--max-turns", "3"}, 0,
			[]string{"flag=--future"}},
		{"not SDK mode: an unknown flag is bad usage", []string{"-p", "hi", "--some-flag"}, 2,
			[]string{"unknown flag: --some-flag"}},
		{"stream-json input alone is not SDK mode", []string{"--input-format", "stream-json", "--some-flag"}, 2,
			[]string{"unknown flag"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := sdkProcess(t)
			got := p.run(t, tt.args...)
			if got.code != tt.code {
				t.Fatalf("exit code %d, want %d; stderr %q", got.code, tt.code, got.stderr)
			}
			for _, s := range tt.stderrIn {
				if !strings.Contains(got.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, got.stderr)
				}
			}
			if tt.code == 0 && got.opts.MaxTurns != 3 {
				t.Errorf("max turns = %d: the flags after the unknown ones were not read", got.opts.MaxTurns)
			}
		})
	}
}

func TestClaudeFlagErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"--agents that is not JSON", []string{"--agents", "{nope"}, "invalid --agents"},
		{"an agent without a prompt", []string{"--agents", `{"a":{"description":"d"}}`}, "has no prompt"},
		{"a negative budget", []string{"--max-budget-usd=-1"}, "invalid --max-budget-usd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := sdkProcess(t)
			got := p.run(t, append(append([]string{}, sdkArgs...), tt.args...)...)
			if got.code != 2 || !strings.Contains(got.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", got.code, got.stderr, tt.want)
			}
			requireOneErrorLine(t, got.stderr)
		})
	}
}

func TestSplitRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []string
		want []string
	}{
		{[]string{"Read,Write"}, []string{"Read", "Write"}},
		{[]string{"Read Write", "Edit"}, []string{"Read", "Write", "Edit"}},
		{[]string{"Bash(git commit -m a,b),Read"}, []string{"Bash(git commit -m a,b)", "Read"}},
		{[]string{" , ,"}, nil},
		{nil, nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, splitRules(tt.in)); diff != "" {
			t.Errorf("splitRules(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// docs/claude-code-flags.md has a row for every Claude Code flag stoke declares, and
// every flag its rows name is declared: the table and the code cannot drift apart.
func TestClaudeFlagsDocumented(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "docs", "claude-code-flags.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "## Every flag")
	if !ok {
		t.Fatal(`docs/claude-code-flags.md has no "## Every flag" section`)
	}
	documented := map[string]string{} // flag -> what its row says stoke does
	flagName := regexp.MustCompile("`(--[A-Za-z-]+)`")
	// The paragraph before the table names the flags stoke --help shows.
	intro, _, _ := strings.Cut(table, "\n| flag |")
	inHelp := map[string]bool{}
	for _, m := range flagName.FindAllStringSubmatch(intro, -1) {
		inHelp[m[1]] = true
	}
	for _, cf := range claudeFlags() {
		if inHelp["--"+cf.name] != cf.help {
			t.Errorf("--%s: shown in stoke --help %v, but docs/claude-code-flags.md says %v", cf.name, cf.help, inHelp["--"+cf.name])
		}
	}
	for _, line := range strings.Split(table, "\n") {
		first, rest, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		does, _, _ := strings.Cut(rest, " | ")
		for _, m := range flagName.FindAllStringSubmatch(first, -1) {
			documented[m[1]] = does
		}
	}
	deps, _, _ := newTestProcess(t).deps()
	root := NewRootCmd(deps, nil).Flags()
	for _, cf := range claudeFlags() {
		does, ok := documented["--"+cf.name]
		if !ok {
			t.Errorf("--%s has no row in docs/claude-code-flags.md", cf.name)
			continue
		}
		// The row says what the code does: honoured, a warning, or refused outside SDK mode.
		want := "honoured"
		switch {
		case cf.name == "permission-prompt-tool":
			want = "honoured for `stdio`"
		case cf.instead != "":
			want = "**refused**"
		case cf.ignored != "":
			want = "warning"
		}
		if does != want {
			t.Errorf("docs/claude-code-flags.md says --%s is %q; the code makes it %q", cf.name, does, want)
		}
	}
	for name := range documented {
		if name == "--version" {
			continue // cobra declares it when the command runs
		}
		if root.Lookup(strings.TrimPrefix(name, "--")) == nil {
			t.Errorf("docs/claude-code-flags.md documents %s, which stoke does not declare", name)
		}
	}
}
