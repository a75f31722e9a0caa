package cmd

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/tools"
)

// normalize runs normalizeArgs over args with the real root command, in a process whose
// working directory holds the directories "apps" and "lib".
func normalize(t *testing.T, args ...string) ([]string, error) {
	t.Helper()
	p := newTestProcess(t)
	writeFile(t, filepath.Join(p.cwd, "apps", "x"), "")
	writeFile(t, filepath.Join(p.cwd, "lib", "x"), "")
	deps, _, _ := p.deps()
	return normalizeArgs(NewRootCmd(deps, nil), args, argEnv{isDir: dirIn(deps)})
}

func TestNormalizeArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		// -p/--print is a boolean; a word right after it is the prompt.
		{"-p WORD: the old stoke form", []string{"-p", "fix it"}, []string{"--print", "--prompt=fix it"}},
		{"--print WORD", []string{"--print", "fix it"}, []string{"--print", "--prompt=fix it"}},
		{"-p then a flag: the prompt comes later", []string{"-p", "--output-format", "json", "q"}, []string{"--print", "--output-format=json", "q"}},
		{"-p alone: stdin is the prompt", []string{"-p"}, []string{"--print"}},
		{"-p before --", []string{"-p", "--", "-x"}, []string{"--print", "--", "-x"}},
		{"-p names a subcommand: still the prompt", []string{"-p", "version"}, []string{"--print", "--prompt=version"}},
		{"-p with an empty word", []string{"-p", ""}, []string{"--print", "--prompt="}},
		{"-pTEXT: the old attached form", []string{"-phello"}, []string{"--print", "--prompt=hello"}},
		{"-p=TEXT", []string{"-p=hello"}, []string{"--print", "--prompt=hello"}},
		{"-p=true is the boolean", []string{"-p=true", "q"}, []string{"--print=true", "q"}},
		{"--print=TEXT", []string{"--print=hello"}, []string{"--print", "--prompt=hello"}},
		{"-cp WORD: continue and print", []string{"-cp", "q"}, []string{"--continue", "--print", "--prompt=q"}},
		{"-pc WORD: print, continue, then the argument", []string{"-pc", "q"}, []string{"--print", "--continue", "q"}},
		{"-c -p WORD", []string{"-c", "-p", "q"}, []string{"--continue", "--print", "--prompt=q"}},
		{"--prompt TEXT", []string{"--prompt", "q"}, []string{"--prompt=q"}},
		{"a flag's value is never the prompt", []string{"--append-system-prompt", "-p", "q"}, []string{"--append-system-prompt=-p", "q"}},
		{"-r ID WORD", []string{"-r", "abc123", "Finish this PR"}, []string{"--resume=abc123", "Finish this PR"}},
		{"-mMODEL", []string{"-mgpt-4", "q"}, []string{"--model=gpt-4", "q"}},
		{"-m MODEL", []string{"-m", "gpt-4", "q"}, []string{"--model=gpt-4", "q"}},
		{"--debug=FILTER: stoke has no filter", []string{"--debug=api,hooks", "q"}, []string{"--debug", "q"}},
		{"--debug then a word: the prompt", []string{"--debug", "q"}, []string{"--debug", "q"}},
		// Text that starts with "-" is a prompt, not a flag: no flag's name holds a space.
		{"-p then a Markdown list", []string{"-p", "- list the files\n- then the tests"}, []string{"--print", "--prompt=- list the files\n- then the tests"}},
		{"a diff as the argument", []string{"-p", "--output-format", "json", "--- a/x.go\n+++ b/x.go"}, []string{"--print", "--output-format=json", "--prompt=--- a/x.go\n+++ b/x.go"}},
		{"-- and a comment", []string{"-- why is this slow?"}, []string{"--prompt=-- why is this slow?"}},
		{"a flag's value with spaces is still a flag", []string{"--append-system-prompt=Be terse", "-pfix the bug"}, []string{"--append-system-prompt=Be terse", "--print", "--prompt=fix the bug"}},

		// Variadic flags take more words only when they are values of their kind.
		{"--allowedTools A B, prompt after", []string{"-p", "--allowedTools", "Read", "Bash(git log:*)", "fix the bug"},
			[]string{"--print", "--allowedTools=Read", "--allowedTools=Bash(git log:*)", "fix the bug"}},
		{"--allowedTools comma list, prompt after", []string{"--allowedTools", "Bash,Read,Edit", "Run the tests"},
			[]string{"--allowedTools=Bash,Read,Edit", "Run the tests"}},
		{"space list in one word", []string{"--allowedTools", "Read Edit", "Write(src/**)", "mcp__github__create_issue", "q"},
			[]string{"--allowedTools=Read Edit", "--allowedTools=Write(src/**)", "--allowedTools=mcp__github__create_issue", "q"}},
		{"stoke's own tool names", []string{"--disallowedTools", "shell", "write_file", "q"}, []string{"--disallowedTools=shell", "--disallowedTools=write_file", "q"}},
		{"the first value is always taken", []string{"--allowedTools", "fix the bug"}, []string{"--allowedTools=fix the bug"}},
		{"a one-word prompt that is no tool", []string{"--allowedTools", "Read", "summarize"}, []string{"--allowedTools=Read", "summarize"}},
		{"= form takes one value only", []string{"--allowedTools=Read", "Edit"}, []string{"--allowedTools=Read", "Edit"}},
		{"a flag ends the list", []string{"--disallowed-tools", "Bash", "--model", "m", "q"}, []string{"--disallowed-tools=Bash", "--model=m", "q"}},
		{"-- ends the list", []string{"--allowedTools", "Read", "--", "Edit"}, []string{"--allowedTools=Read", "--", "Edit"}},
		{"--tools list", []string{"--tools", "Bash,Edit,Read", "q"}, []string{"--tools=Bash,Edit,Read", "q"}},
		{"--add-dir takes existing directories", []string{"--add-dir", "apps", "lib", "q"}, []string{"--add-dir=apps", "--add-dir=lib", "q"}},
		{"--mcp-config takes configs", []string{"--mcp-config", "a.json", `{"mcpServers":{}}`, "q"}, []string{"--mcp-config=a.json", `--mcp-config={"mcpServers":{}}`, "q"}},
		{"--betas takes beta names", []string{"--betas", "x-2025-05-14", "context-1m-2025-08-07", "q"}, []string{"--betas=x-2025-05-14", "--betas=context-1m-2025-08-07", "q"}},
		{"an optional value may be the next word", []string{"--worktree", "feature", "q"}, []string{"--worktree=feature", "q"}},
		{"an optional value not given", []string{"-w", "--model", "m"}, []string{"--worktree", "--model=m"}},

		// Left alone.
		{"a subcommand and its flags", []string{"agents", "list", "--session", "s-1", "--json"}, []string{"agents", "list", "--session", "s-1", "--json"}},
		{"root flags before a subcommand", []string{"--debug", "sessions", "list"}, []string{"--debug", "sessions", "list"}},
		{"unknown flags and their values", []string{"--future", "v", "--max-turns", "3"}, []string{"--future", "v", "--max-turns=3"}},
		{"a plain argument", []string{"fix the bug"}, []string{"fix the bug"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := normalize(t, tt.args...)
			if err != nil {
				t.Fatalf("normalizeArgs(%q): %v", tt.args, err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("normalizeArgs(%q) (-want +got):\n%s", tt.args, d)
			}
		})
	}
}

func TestNormalizeArgsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"-r without an id", []string{"-p", "q", "-r"}, "--resume needs a session id"},
		{"-r then a flag", []string{"-r", "-p", "q"}, "--resume needs a session id"},
		{"--resume then a flag", []string{"--resume", "--continue"}, "--resume needs a session id"},
		{"two prompts", []string{"-p", "one", "--prompt", "two"}, "more than one prompt"},
		{"a prompt and a list", []string{"-p", "one", "- two"}, "more than one prompt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := normalize(t, tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("normalizeArgs(%q) = %q, %v; want an error with %q", tt.args, got, err, tt.want)
			}
			if exitCode(err) != 2 {
				t.Errorf("exit code %d, want 2", exitCode(err))
			}
		})
	}
}

func TestIsRuleList(t *testing.T) {
	t.Parallel()
	for word, want := range map[string]bool{
		"Read":                      true,
		"Bash(git diff *)":          true,
		"Bash(git log:*),Read":      true,
		"Read Edit Write":           true,
		"mcp__slack":                true,
		"WebFetch(domain:x.com)":    true,
		"read_file,shell":           true,
		"*":                         true,
		"":                          false,
		"fix the bug":               false,
		"Read the README":           false,
		"Bash(unclosed":             false,
		"summarize":                 false,
		"Explain auth.py to me":     false,
		"Read,summarize everything": false,
	} {
		if got := isRuleList(word); got != want {
			t.Errorf("isRuleList(%q) = %v, want %v", word, got, want)
		}
	}
}

// Claude Code's headless idioms reach headless.Options as they mean.
func TestClaudeIdiomOptions(t *testing.T) {
	t.Parallel()
	type want struct {
		prompt   string
		resume   string
		cont     bool
		approval tools.Mode
		allowed  []string
		denied   []string
		system   string
		appended string
		maxTurns int
	}
	tests := []struct {
		name  string
		args  []string
		stdin string // piped when not empty
		want  want
	}{
		{name: `claude -p "q"`, args: []string{"-p", "q"}, want: want{prompt: "q"}},
		{name: `claude --print "q"`, args: []string{"--print", "q"}, want: want{prompt: "q"}},
		{name: `claude "q" (no -p)`, args: []string{"q"}, want: want{prompt: "q"}},
		{name: `echo q | claude -p`, args: []string{"-p"}, stdin: "q\n", want: want{prompt: "q"}},
		{name: `cat file | claude -p "explain"`, args: []string{"-p", "explain"}, stdin: "line 1\nline 2\n", want: want{prompt: "explain\nline 1\nline 2"}},
		{name: `claude -p --output-format json "q"`, args: []string{"-p", "--output-format", "json", "q"}, want: want{prompt: "q"}},
		{name: `claude -p --max-turns 3 "q"`, args: []string{"-p", "--max-turns", "3", "q"}, want: want{prompt: "q", maxTurns: 3}},
		{name: `claude -c -p "q"`, args: []string{"-c", "-p", "q"}, want: want{prompt: "q", cont: true}},
		{name: `claude -p "q" --continue`, args: []string{"-p", "q", "--continue"}, want: want{prompt: "q", cont: true}},
		{name: `claude -r ID "q"`, args: []string{"-r", "abc123", "q"}, want: want{prompt: "q", resume: "abc123"}},
		{name: `claude -p "q" --resume ID`, args: []string{"-p", "q", "--resume", "abc123"}, want: want{prompt: "q", resume: "abc123"}},
		{name: `--allowedTools "A" "B" before the prompt`, args: []string{"-p", "--allowedTools", "Bash(git log:*)", "Read", "q"},
			want: want{prompt: "q", allowed: []string{"Bash(git log:*)", "Read"}}},
		{name: `--allowedTools "A,B" after the prompt`, args: []string{"-p", "q", "--allowedTools", "Bash,Read,Edit"},
			want: want{prompt: "q", allowed: []string{"Bash", "Read", "Edit"}}},
		{name: `--disallowedTools "A" "B"`, args: []string{"--disallowedTools", "Bash(rm:*)", "WebFetch", "-p", "q"},
			want: want{prompt: "q", denied: []string{"Bash(rm:*)", "WebFetch"}}},
		{name: `--permission-mode acceptEdits`, args: []string{"-p", "q", "--permission-mode", "acceptEdits"}, want: want{prompt: "q", approval: "auto-edit"}},
		{name: `--permission-mode manual`, args: []string{"-p", "q", "--permission-mode", "manual"}, want: want{prompt: "q"}},
		{name: `gh pr diff | claude -p --append-system-prompt "..." --output-format json`,
			args: []string{"-p", "--append-system-prompt", "You are a security engineer.", "--output-format", "json"}, stdin: "diff --git a b\n",
			want: want{prompt: "diff --git a b", appended: "You are a security engineer."}},
		{name: `--system-prompt-file and --append-system-prompt-file`,
			args: []string{"-p", "q", "--system-prompt-file", "sys.txt", "--append-system-prompt", "Be brief.", "--append-system-prompt-file", "rules.txt"},
			want: want{prompt: "q", system: "You review code.", appended: "Be brief.\n\nCite file paths."}},
		{name: `--bare -p "q" --allowedTools "Read"`, args: []string{"--bare", "-p", "q", "--allowedTools", "Read"}, want: want{prompt: "q", allowed: []string{"Read"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			p.env["OPENAI_API_KEY"] = "sk-test"
			writeFile(t, filepath.Join(p.cwd, "sys.txt"), "You review code.\n")
			writeFile(t, filepath.Join(p.cwd, "rules.txt"), "Cite file paths.\n")
			if tt.stdin != "" {
				p.tty, p.stdin = false, tt.stdin
			}
			got := p.run(t, tt.args...)
			if got.code != 0 || got.opts == nil {
				t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
			}
			o := got.opts
			approval := tt.want.approval
			if approval == "" {
				approval = "default"
			}
			gotW := want{prompt: o.Prompt, resume: o.Resume, cont: o.Continue, approval: o.ApprovalMode, allowed: o.SDK.AllowedTools,
				denied: o.SDK.DisallowedTools, system: o.SDK.SystemPrompt, appended: o.SDK.AppendSystemPrompt, maxTurns: o.MaxTurns}
			wantW := tt.want
			wantW.approval = approval
			if wantW.maxTurns == 0 {
				wantW.maxTurns = agents.DefaultMaxTurns
			}
			if d := cmp.Diff(wantW, gotW, cmp.AllowUnexported(want{})); d != "" {
				t.Errorf("options (-want +got):\n%s", d)
			}
			if got.stderr != "" {
				t.Errorf("stderr = %q, want nothing", got.stderr)
			}
		})
	}
}

// Outside SDK mode, an idiom stoke cannot honour is refused with one line that names the
// flag and says what to do instead; a harmless one runs with one warning.
func TestClaudeFlagsRefusedOutsideSDKMode(t *testing.T) {
	t.Parallel()
	for _, cf := range claudeFlags() {
		if cf.ignored == "" {
			continue
		}
		t.Run(cf.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			p.env["OPENAI_API_KEY"] = "sk-test"
			arg := "--" + cf.name
			if cf.typ != flagBool && cf.typ != flagOptional {
				arg += "=x"
			}
			got := p.run(t, "-p", "q", arg)
			if cf.instead == "" {
				if got.code != 0 || strings.Count(got.stderr, "level=WARN") != 1 || !strings.Contains(got.stderr, "flag="+arg[:len("--"+cf.name)]) {
					t.Errorf("exit %d, stderr %q; want 0 and one warning naming --%s", got.code, got.stderr, cf.name)
				}
				return
			}
			if got.code != 2 || got.opts != nil {
				t.Fatalf("exit %d (ran: %v), stderr %q; want 2, not run", got.code, got.opts != nil, got.stderr)
			}
			requireOneErrorLine(t, got.stderr)
			for _, s := range []string{"--" + cf.name + " is not supported", cf.instead} {
				if !strings.Contains(got.stderr, s) {
					t.Errorf("stderr %q lacks %q", got.stderr, s)
				}
			}
		})
	}
}

func TestPromptArgumentErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{`-p "q" extra`, []string{"-p", "q", "extra"}, `unexpected argument "extra": the prompt is already given`},
		{`--prompt q extra`, []string{"--prompt", "q", "extra"}, `unexpected argument "extra"`},
		{`two words unquoted`, []string{"fix", "it"}, `unexpected argument "it" after the prompt "fix"`},
		{`a near miss of a command`, []string{"sesions"}, `did you mean "sessions"? (to send it as the prompt: stoke -p sesions)`},
		{`a prompt with stream-json input`, []string{"-p", "q", "--input-format", "stream-json"}, "cannot be used with --input-format stream-json"},
		{`--permission-mode auto`, []string{"-p", "q", "--permission-mode", "auto"}, `invalid --permission-mode "auto"`},
		{`--system-prompt with its file form`, []string{"-p", "q", "--system-prompt", "a", "--system-prompt-file", "f"}, "cannot be used together"},
		{`a missing --append-system-prompt-file`, []string{"-p", "q", "--append-system-prompt-file", "nope.txt"}, "--append-system-prompt-file nope.txt: no such file"},
		{`-p, no prompt anywhere`, []string{"-p"}, "no prompt: pass the prompt as an argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			p.env["OPENAI_API_KEY"] = "sk-test"
			got := p.run(t, tt.args...)
			if got.code != 2 || got.opts != nil {
				t.Fatalf("exit %d (ran: %v), stderr %q; want 2", got.code, got.opts != nil, got.stderr)
			}
			requireOneErrorLine(t, got.stderr)
			if !strings.Contains(got.stderr, tt.want) {
				t.Errorf("stderr %q lacks %q", got.stderr, tt.want)
			}
		})
	}
}
