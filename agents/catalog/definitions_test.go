package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/tools"
)

func TestParseDefinitionFields(t *testing.T) {
	t.Parallel()
	const src = "/p/.claude/agents/x.md"
	tests := []struct {
		name     string
		file     string
		want     Definition
		warnings []string
	}{
		{
			name: "minimal",
			file: "---\nname: minimal\n---\n\nDo the thing.\n\n",
			want: Definition{Name: "minimal", Prompt: "Do the thing.", Source: src},
		},
		{
			name: "a Claude Code file",
			file: `---
name: code-reviewer
description: Reviews diffs for bugs and style.
tools: Read, Grep, Glob, Bash
model: sonnet
color: red
permissionMode: acceptEdits
---
You are a code reviewer.

Report findings as a list.
`,
			want: Definition{
				Name: "code-reviewer", Description: "Reviews diffs for bugs and style.",
				Prompt: "You are a code reviewer.\n\nReport findings as a list.",
				Tools:  []string{"read_file", "grep", "glob", "shell"}, Model: "sonnet",
				ApprovalMode: "auto-edit", Source: src,
			},
		},
		{
			name: "a Qwen Code file with a tool list",
			file: "---\nname: qwen-helper\ntools:\n  - read_file\n  - grep_search\n  - run_shell_command\n  - Read\n  - web_fetch\n---\nHelp.\n",
			want: Definition{
				Name: "qwen-helper", Prompt: "Help.", Source: src,
				Tools: []string{"read_file", "grep", "shell", "web_fetch"},
			},
			warnings: []string{"tools: stoke has no web_fetch; the agent runs without it"},
		},
		{
			name: "Qwen Code's tools: list_directory is glob, read_many_files is read_file and glob",
			file: "---\nname: q\ntools: [list_directory, read_many_files, replace, search_file_content, write_file, glob, web_fetch, save_memory]\n---\nx\n",
			want: Definition{
				Name: "q", Prompt: "x", Source: src,
				Tools: []string{"glob", "read_file", "edit", "grep", "write_file", "web_fetch", "save_memory"},
			},
			warnings: []string{"tools: stoke has no web_fetch, save_memory; the agent runs without them"},
		},
		{
			name: "Qwen Code's keys: modelConfig, runConfig, approvalMode bubble, ${task_prompt}",
			file: `---
name: qwen-full
description: Does one thing.
modelConfig:
  model: fast
  temp: 0.2
runConfig:
  max_turns: 12
  max_time_minutes: 1.5
approvalMode: bubble
color: auto
---
Work on: ${task_prompt}
Leave ${project_name} and $HOME alone.
`,
			want: Definition{
				Name: "qwen-full", Description: "Does one thing.", Source: src, Model: "fast",
				Prompt:       "Work on: the task given in the first user message\nLeave ${project_name} and $HOME alone.",
				ApprovalMode: "default", MaxTurns: 12, MaxTime: 90 * time.Second,
			},
		},
		{
			name: "Claude Code's keys: maxTurns, dontAsk, memory, skills, background",
			file: "---\nname: c\nmaxTurns: 7\npermissionMode: dontAsk\nmemory: project\nskills: [pdf, xlsx]\nbackground: true\nmodel: opus\n---\nx\n",
			want: Definition{Name: "c", Prompt: "x", Source: src, MaxTurns: 7, ApprovalMode: "default", Model: "opus"},
			warnings: []string{
				"skills: stoke has no skills; pdf, xlsx not loaded",
				"background: ignored; the parent decides whether a task runs in the background (run_in_background)",
			},
		},
		{
			name: "model and modelConfig.model agreeing; maxTurns and runConfig.max_turns agreeing",
			file: "---\nname: a\nmodel: qwen-max\nmodelConfig: {model: qwen-max}\nmaxTurns: 3\nrunConfig: {max_turns: 3}\n---\nx\n",
			want: Definition{Name: "a", Prompt: "x", Source: src, Model: "qwen-max", MaxTurns: 3},
		},
		{
			name:     "rules and MCP tools in an allow-list: MCP kept, a rule is no tool",
			file:     "---\nname: a\ntools: Read, mcp__github__get_issue, Bash(git:*), mcp__slack\n---\nx\n",
			want:     Definition{Name: "a", Prompt: "x", Source: src, Tools: []string{"read_file", "mcp__github__get_issue", "mcp__slack", "Bash(git:*)"}},
			warnings: []string{"tools: stoke has no Bash(git:*); the agent runs without it"},
		},
		{
			name: "a deny-list maps one-to-one names only",
			file: "---\nname: a\ndisallowedTools: [run_shell_command, list_directory, read_many_files, WebFetch]\n---\nx\n",
			want: Definition{Name: "a", Prompt: "x", Source: src, DisallowedTools: []string{"shell", "glob", "read_many_files", "WebFetch"}},
		},
		{
			name: "star is every tool; the deny-list keeps its star",
			file: "---\nname: all\ntools: '*'\ndisallowedTools: Bash, Write, *\n---\nx\n",
			want: Definition{Name: "all", Prompt: "x", Source: src, DisallowedTools: []string{"shell", "write_file", "*"}},
		},
		{
			name: "model inherit is the parent's",
			file: "---\nname: inh\nmodel: inherit\n---\nx\n",
			want: Definition{Name: "inh", Prompt: "x", Source: src},
		},
		{
			name: "approval-mode yolo",
			file: "---\nname: a\napproval-mode: yolo\n---\nx\n",
			want: Definition{Name: "a", Prompt: "x", Source: src, ApprovalMode: "yolo"},
		},
		{
			name: "permissionMode bypassPermissions",
			file: "---\nname: a\npermissionMode: bypassPermissions\n---\nx\n",
			want: Definition{Name: "a", Prompt: "x", Source: src, ApprovalMode: "yolo"},
		},
		{
			name: "permissionMode plan, approval-mode agreeing",
			file: "---\nname: a\npermissionMode: plan\napproval-mode: plan\n---\nx\n",
			want: Definition{Name: "a", Prompt: "x", Source: src, ApprovalMode: "plan"},
		},
		{
			name: "Qwen Code's approvalMode",
			file: "---\nname: a\napprovalMode: auto-edit\npermissionMode: acceptEdits\n---\nx\n",
			want: Definition{Name: "a", Prompt: "x", Source: src, ApprovalMode: "auto-edit"},
		},
		{
			name: "tools: [] is no tools",
			file: "---\nname: a\ntools: []\n---\nx\n",
			want: Definition{Name: "a", Prompt: "x", Source: src, Tools: []string{}},
		},
		{
			name: "an empty tools string is no tools",
			file: "---\nname: a\ntools: \"\"\n---\nx\n",
			want: Definition{Name: "a", Prompt: "x", Source: src, Tools: []string{}},
		},
		{
			name: "tools without a value inherits",
			file: "---\nname: a\ntools:\n---\nx\n",
			want: Definition{Name: "a", Prompt: "x", Source: src},
		},
		{
			name: "permissionMode default",
			file: "---\nname: a\npermissionMode: default\n---\nx\n",
			want: Definition{Name: "a", Prompt: "x", Source: src, ApprovalMode: "default"},
		},
		{
			name: "hooks in both shapes",
			file: `---
name: hooked
hooks:
  SubagentStop:
    - command: ./check.sh
      timeout: 30s
  Stop:
    - matcher: "*"
      hooks:
        - type: command
          command: ./stop.sh
          timeout: 5
---
x
`,
			// Stop in an agent file is the agent's own stop: SubagentStop (as Claude Code
			// converts it), after the file's SubagentStop hooks, without a matcher.
			want: Definition{
				Name: "hooked", Prompt: "x", Source: src, HasHooks: true,
				Hooks: hooks.Config{
					hooks.SubagentStop: {
						{Command: "./check.sh", Timeout: 30 * time.Second},
						{Command: "./stop.sh", Timeout: 5 * time.Second},
					},
				},
			},
		},
		{
			name: "hooks of events stoke does not run are left out with one warning",
			file: `---
name: guarded
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - type: command
          command: ./guard.sh
  subagentstart:
    - command: ./start.sh
  PostToolUse:
    - command: ./after.sh
---
x
`,
			want: Definition{
				Name: "guarded", Prompt: "x", Source: src, HasHooks: true,
				Hooks: hooks.Config{hooks.SubagentStart: {{Command: "./start.sh", Timeout: hooks.DefaultTimeout}}},
			},
			warnings: []string{"hooks: stoke does not run PreToolUse, PostToolUse hooks; they are ignored (it runs SubagentStart, SubagentStop, Stop)"},
		},
		{
			name:     "only hooks stoke does not run: no hooks",
			file:     "---\nname: a\nhooks:\n  PreToolUse:\n    - command: ./guard.sh\n---\nx\n",
			want:     Definition{Name: "a", Prompt: "x", Source: src},
			warnings: []string{"hooks: stoke does not run PreToolUse hooks; they are ignored (it runs SubagentStart, SubagentStop, Stop)"},
		},
		{
			name: "empty hooks are no hooks",
			file: "---\nname: a\nhooks:\n  Stop: []\n---\nx\n",
			want: Definition{Name: "a", Prompt: "x", Source: src},
		},
		{
			name: "worktree isolation",
			file: "---\nname: iso\nisolation: worktree\n---\nx\n",
			want: Definition{Name: "iso", Prompt: "x", Source: src, Isolation: "worktree"},
		},
		{
			name: "byte order mark and CRLF",
			file: "\uFEFF---\r\nname: win\r\ndescription: Made on Windows.\r\n---\r\nLine one.\r\nLine two.\r\n",
			want: Definition{Name: "win", Description: "Made on Windows.", Prompt: "Line one.\nLine two.", Source: src},
		},
		{
			name: "an unquoted colon in a description",
			file: "---\nname: colon\ndescription: Use this agent when: the user asks. Example: review.\ntools: Read\n---\nx\n",
			want: Definition{
				Name: "colon", Description: "Use this agent when: the user asks. Example: review.",
				Tools: []string{"read_file"}, Prompt: "x", Source: src,
			},
		},
		{
			name: "the body may hold --- lines; ... closes front matter",
			file: "---\nname: dots\n...\nIntro.\n---\nMore.\n",
			want: Definition{Name: "dots", Prompt: "Intro.\n---\nMore.", Source: src},
		},
		{
			name: "empty body, plugin-style name",
			file: "---\nname: my-plugin:reviewer_2.0\n---\n",
			want: Definition{Name: "my-plugin:reviewer_2.0", Source: src},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, warnings, err := ParseDefinition(src, []byte(tt.file))
			if err != nil {
				t.Fatalf("ParseDefinition: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseDefinition (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.warnings, warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDefinitionErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file, want string
	}{
		{"no front matter", "# Reviewer\nYou review.\n", "no front matter"},
		{"empty file", "", "no front matter"},
		{"front matter not closed", "---\nname: a\nbody\n", "not closed"},
		{"bad YAML", "---\nname: [unclosed\n---\nx\n", "front matter: yaml:"},
		{"bad YAML that quoting cannot fix", "---\nname: a: b\n  bad: indent\n---\nx\n", "front matter: yaml:"},
		{"front matter is a list", "---\n- name: a\n---\nx\n", "want a YAML map"},
		{"empty front matter", "---\n---\nx\n", "no name"},
		{"missing name", "---\ndescription: nameless\n---\nx\n", "no name"},
		{"name with spaces", "---\nname: code reviewer\n---\nx\n", `name "code reviewer"`},
		{"name with a slash", "---\nname: ../evil\n---\nx\n", `name "../evil"`},
		{"name not a string", "---\nname: {a: 1}\n---\nx\n", "front matter:"},
		{"bad isolation", "---\nname: a\nisolation: container\n---\nx\n", `isolation "container"`},
		{"unknown approval mode", "---\nname: a\napproval-mode: always\n---\nx\n", `approval-mode "always"`},
		{"unsupported permissionMode", "---\nname: a\npermissionMode: ask\n---\nx\n", `permissionMode "ask"`},
		{"approval modes disagree", "---\nname: a\napproval-mode: plan\npermissionMode: bypassPermissions\n---\nx\n", "disagree"},
		{"Qwen's approvalMode disagrees", "---\nname: a\npermissionMode: plan\napprovalMode: yolo\n---\nx\n", "permissionMode and approvalMode disagree"},
		{"hook without command", "---\nname: a\nhooks:\n  Stop:\n    - timeout: 5\n---\nx\n", "no command"},
		{"a hook type stoke cannot run, on an event it runs", "---\nname: a\nhooks:\n  SubagentStop:\n    - hooks: [{type: prompt, prompt: check}]\n---\nx\n", `hook type "prompt" is not supported`},
		{"hooks not a map", "---\nname: a\nhooks: [a]\n---\nx\n", "hooks: want a map"},
		{"model and modelConfig.model disagree", "---\nname: a\nmodel: sonnet\nmodelConfig: {model: qwen-max}\n---\nx\n", "model and modelConfig.model disagree"},
		{"maxTurns and runConfig disagree", "---\nname: a\nmaxTurns: 3\nrunConfig: {max_turns: 4}\n---\nx\n", "disagree (3, 4)"},
		{"maxTurns zero", "---\nname: a\nmaxTurns: 0\n---\nx\n", "maxTurns 0: want 1 or more"},
		{"max_time_minutes negative", "---\nname: a\nrunConfig: {max_time_minutes: -1}\n---\nx\n", "max_time_minutes -1"},
		{"max_turns not a number", "---\nname: a\nrunConfig: {max_turns: many}\n---\nx\n", "front matter:"},
		{"tools as a map", "---\nname: a\ntools: {Read: true}\n---\nx\n", "line 3: want a list of tool names"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d, _, err := ParseDefinition("x.md", []byte(tt.file))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseDefinition = %+v, %v; want an error containing %q", d, err, tt.want)
			}
		})
	}
}

// writeDefFile writes an agent file into dir (created as needed).
func writeDefFile(t *testing.T, dir, file, content string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func defFile(name, prompt string) string {
	return "---\nname: " + name + "\ndescription: " + prompt + "\n---\n" + prompt + "\n"
}

func TestLoadDefinitionsPrecedence(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	home := filepath.Join(root, "home", ".stoke")
	project := filepath.Join(root, "project")
	dirs := map[string]string{
		"user":   filepath.Join(home, "agents"),
		"qwen":   filepath.Join(project, ".qwen", "agents"),
		"claude": filepath.Join(project, ".claude", "agents"),
		"stoke":  filepath.Join(project, ".stoke", "agents"),
	}
	// Each source defines "shared" and its own name; pairs of neighbours overlap too.
	for src, dir := range dirs {
		writeDefFile(t, dir, "shared.md", defFile("shared", "from "+src))
		writeDefFile(t, dir, "own.md", defFile("only-"+src, "from "+src))
	}
	writeDefFile(t, dirs["user"], "gp.md", defFile(GeneralPurpose, "from user"))
	writeDefFile(t, dirs["user"], "uq.md", defFile("user-qwen", "from user"))
	writeDefFile(t, dirs["qwen"], "uq.md", defFile("user-qwen", "from qwen"))
	writeDefFile(t, dirs["qwen"], "qc.md", defFile("qwen-claude", "from qwen"))
	// The file name does not matter; the name field does.
	writeDefFile(t, dirs["claude"], "renamed.md", defFile("qwen-claude", "from claude"))
	writeDefFile(t, dirs["claude"], "cs.md", defFile("claude-stoke", "from claude"))
	writeDefFile(t, dirs["stoke"], "cs.md", defFile("claude-stoke", "from stoke"))

	builtin := BuiltinDefinitions()[0].Prompt
	tests := []struct {
		name string
		opts LoadOptions
		want map[string]string // name -> prompt
	}{
		{
			name: "every source",
			opts: LoadOptions{ProjectDir: project, UserStokeHome: home},
			want: map[string]string{
				GeneralPurpose: "from user", "shared": "from stoke",
				"user-qwen": "from qwen", "qwen-claude": "from claude", "claude-stoke": "from stoke",
				"only-user": "from user", "only-qwen": "from qwen", "only-claude": "from claude", "only-stoke": "from stoke",
			},
		},
		{
			name: "bare skips the project, not the user",
			opts: LoadOptions{ProjectDir: project, UserStokeHome: home, Bare: true},
			want: map[string]string{
				GeneralPurpose: "from user", "shared": "from user", "user-qwen": "from user", "only-user": "from user",
			},
		},
		{
			name: "no user home",
			opts: LoadOptions{ProjectDir: project},
			want: map[string]string{
				GeneralPurpose: builtin, "shared": "from stoke",
				"user-qwen": "from qwen", "qwen-claude": "from claude", "claude-stoke": "from stoke",
				"only-qwen": "from qwen", "only-claude": "from claude", "only-stoke": "from stoke",
			},
		},
		{
			name: "nothing but the built-ins",
			opts: LoadOptions{},
			want: map[string]string{GeneralPurpose: builtin},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, warnings := LoadDefinitions(tt.opts)
			if len(warnings) > 0 {
				t.Errorf("warnings: %q", warnings)
			}
			got := make(map[string]string, len(c))
			for name, d := range c {
				got[name] = d.Prompt
				if d.Name != name {
					t.Errorf("catalog key %q holds definition %q", name, d.Name)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("prompts by name (-want +got):\n%s", diff)
			}
		})
	}

	c, _ := LoadDefinitions(LoadOptions{ProjectDir: project, UserStokeHome: home})
	if got, want := c["qwen-claude"].Source, filepath.Join(dirs["claude"], "renamed.md"); got != want {
		t.Errorf("Source = %q; want %q", got, want)
	}
	if got := c["shared"].SystemPrompt(); got != "from stoke\n\nAgent type: shared." {
		t.Errorf("SystemPrompt = %q", got)
	}
}

func TestLoadDefinitionsWarnings(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	dir := filepath.Join(project, ".stoke", "agents")
	writeDefFile(t, dir, "a-good.md", defFile("good", "fine"))
	writeDefFile(t, dir, "b-dup.md", defFile("good", "second"))
	writeDefFile(t, dir, "c-bad-yaml.md", "---\nname: [oops\n---\nx\n")
	writeDefFile(t, dir, "d-no-front-matter.md", "Just text.\n")
	writeDefFile(t, dir, "e-no-name.md", "---\ndescription: x\n---\nx\n")
	writeDefFile(t, dir, "f-bad-isolation.md", "---\nname: iso\nisolation: vm\n---\nx\n")
	writeDefFile(t, dir, "g-also-good.md", defFile("also-good", "fine too"))
	writeDefFile(t, dir, "i-name-not-a-string.md", "---\nname: {a: 1}\ndescription: [x]\n---\nx\n")
	writeDefFile(t, dir, ".hidden.md", "not front matter")
	writeDefFile(t, dir, "notes.txt", "not an agent")
	if err := os.Mkdir(filepath.Join(dir, "subdir.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "h-dangling.md")); err != nil {
		t.Fatal(err)
	}
	// A malformed user file does not stop the project's files from loading.
	home := filepath.Join(t.TempDir(), ".stoke")
	writeDefFile(t, filepath.Join(home, "agents"), "broken.md", "---\nname: x\n")

	prefixes := []string{
		filepath.Join(home, "agents", "broken.md") + ": front matter is not closed",
		filepath.Join(dir, "b-dup.md") + `: name "good" is already defined by ` + filepath.Join(dir, "a-good.md"),
		filepath.Join(dir, "c-bad-yaml.md") + ": front matter: yaml:",
		filepath.Join(dir, "d-no-front-matter.md") + ": no front matter",
		filepath.Join(dir, "e-no-name.md") + ": front matter has no name",
		filepath.Join(dir, "f-bad-isolation.md") + `: isolation "vm"`,
		filepath.Join(dir, "h-dangling.md") + ": read:",
		filepath.Join(dir, "i-name-not-a-string.md") + ": front matter: yaml: unmarshal errors: line 2:",
	}
	for run := range 2 { // the same files give the same result
		c, warnings := LoadDefinitions(LoadOptions{ProjectDir: project, UserStokeHome: home})
		if len(warnings) != len(prefixes) {
			t.Fatalf("run %d: %d warnings; want %d:\n%s", run, len(warnings), len(prefixes), strings.Join(warnings, "\n"))
		}
		for i, p := range prefixes {
			if !strings.HasPrefix(warnings[i], p) || !strings.HasSuffix(warnings[i], "; skipped") || strings.Contains(warnings[i], "\n") {
				t.Errorf("run %d: warning %d = %q; want one line starting %q", run, i, warnings[i], p)
			}
		}
		if diff := cmp.Diff([]string{"also-good", GeneralPurpose, "good"}, c.Names()); diff != "" {
			t.Errorf("run %d: names (-want +got):\n%s", run, diff)
		}
		if c["good"].Prompt != "fine" {
			t.Errorf("run %d: the first file of a name must win, got prompt %q", run, c["good"].Prompt)
		}
	}
}

func TestLoadDefinitionsReadsADirectoryOnce(t *testing.T) {
	t.Parallel()
	// The project is the home directory, so $STOKE_HOME/agents is also <project>/.stoke/agents.
	home := t.TempDir()
	writeDefFile(t, filepath.Join(home, ".stoke", "agents"), "bad.md", "no front matter")
	writeDefFile(t, filepath.Join(home, ".stoke", "agents"), "ok.md", defFile("ok", "fine"))
	c, warnings := LoadDefinitions(LoadOptions{ProjectDir: home, UserStokeHome: filepath.Join(home, ".stoke")})
	if len(warnings) != 1 {
		t.Errorf("warnings = %q; want one", warnings)
	}
	if _, err := c.Lookup("ok"); err != nil {
		t.Error(err)
	}
}

// The run's approval mode is a ceiling: a definition may lower its mode, never raise it.
func TestDefinitionCapMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		own, ceiling tools.Mode
		want         tools.Mode // the mode the definition keeps
		raised       bool
	}{
		{"", "plan", "", false},
		{"", "yolo", "", false},
		{"plan", "default", "plan", false},
		{"default", "default", "default", false},
		{"default", "", "default", false},
		{"auto-edit", "", "", true},
		{"auto-edit", "default", "", true},
		{"auto-edit", "auto-edit", "auto-edit", false},
		{"auto-edit", "yolo", "auto-edit", false},
		{"yolo", "auto-edit", "", true},
		{"yolo", "plan", "", true},
		{"default", "plan", "", true},
		{"plan", "yolo", "plan", false},
		{"plan", "unknown-ceiling", "plan", false},
		{"default", "unknown-ceiling", "", true},
		{"unknown-own", "yolo", "", true},
	}
	for _, tt := range tests {
		d := Definition{Name: "x", ApprovalMode: tt.own}
		got, raised := d.CapMode(tt.ceiling)
		if got.ApprovalMode != tt.want || raised != tt.raised {
			t.Errorf("own %q, ceiling %q: mode %q, raised %v; want %q, %v", tt.own, tt.ceiling, got.ApprovalMode, raised, tt.want, tt.raised)
		}
		if !got.Resident() {
			t.Errorf("own %q, ceiling %q: not resident", tt.own, tt.ceiling)
		}
		if d.ApprovalMode != tt.own {
			t.Error("CapMode changed its receiver")
		}
	}
}

func TestCatalogLookupDefaultsAndErrors(t *testing.T) {
	t.Parallel()
	c := New(append(BuiltinDefinitions(), Definition{Name: "reviewer", Prompt: "first"}, Definition{Name: "reviewer", Prompt: "second"})...)
	if d, err := c.Lookup(""); err != nil || d.Name != GeneralPurpose {
		t.Errorf("Lookup(\"\") = %q, %v; want %s", d.Name, err, GeneralPurpose)
	}
	if d, _ := c.Lookup("reviewer"); d.Prompt != "second" {
		t.Errorf("a later definition must replace an earlier one; got %q", d.Prompt)
	}
	_, err := c.Lookup("nope")
	if err == nil || !strings.Contains(err.Error(), "available types: general-purpose, reviewer") {
		t.Errorf("Lookup(nope) error = %v", err)
	}
}

// Project agent files are project scope: their hooks run only in a trusted project, a
// file linked from outside the project is not read, and a trusted project's hooks may
// not name a script linked from outside. The user's own directory is not project scope.
func TestLoadDefinitionsProjectScope(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	project := filepath.Join(root, "project")
	home := filepath.Join(root, "home", ".stoke")
	elsewhere := filepath.Join(root, "elsewhere")
	hooked := "---\nname: %s\nhooks:\n  Stop:\n    - command: %s\n---\nx\n"
	dir := filepath.Join(project, ".claude", "agents")
	writeDefFile(t, dir, "hooked.md", strings.Replace(strings.Replace(hooked, "%s", "hooked", 1), "%s", "./scripts/ok.sh", 1))
	writeDefFile(t, dir, "sneaky.md", strings.Replace(strings.Replace(hooked, "%s", "sneaky", 1), "%s", "./scripts/evil.sh", 1))
	writeDefFile(t, filepath.Join(project, "scripts"), "ok.sh", "#!/bin/sh\n")
	writeDefFile(t, elsewhere, "evil.sh", "#!/bin/sh\n")
	writeDefFile(t, elsewhere, "linked.md", defFile("linked", "from elsewhere"))
	writeDefFile(t, filepath.Join(home, "agents"), "mine.md", strings.Replace(strings.Replace(hooked, "%s", "mine", 1), "%s", "./anything.sh", 1))
	for link, target := range map[string]string{
		filepath.Join(project, "scripts", "evil.sh"): filepath.Join(elsewhere, "evil.sh"),
		filepath.Join(dir, "linked.md"):              filepath.Join(elsewhere, "linked.md"),
		filepath.Join(dir, "inside.md"):              "hooked.md",
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	count := func(warnings []string, sub string) int {
		n := 0
		for _, w := range warnings {
			if strings.Contains(w, sub) {
				n++
			}
		}
		return n
	}

	c, warnings := LoadDefinitions(LoadOptions{ProjectDir: project, UserStokeHome: home})
	if _, ok := c["linked"]; ok {
		t.Error("a file linked from outside the project was read")
	}
	if c["hooked"].HasHooks || c["sneaky"].HasHooks || c["hooked"].Hooks != nil {
		t.Errorf("untrusted project hooks kept: %+v", c["hooked"])
	}
	if !c["mine"].HasHooks {
		t.Error("the user's own agent lost its hooks")
	}
	// linked.md: outside; hooked.md, sneaky.md: hooks ignored. inside.md duplicates
	// hooked's name (a warning of its own).
	if count(warnings, "outside the project; skipped") != 1 || count(warnings, "hooks ignored: the project is not trusted") != 2 {
		t.Errorf("warnings = %q", warnings)
	}

	c, warnings = LoadDefinitions(LoadOptions{ProjectDir: project, UserStokeHome: home, TrustProject: true})
	if !c["hooked"].HasHooks || len(c["hooked"].Hooks[hooks.SubagentStop]) != 1 {
		t.Errorf("trusted project hooks dropped: %+v", c["hooked"])
	}
	if c["sneaky"].HasHooks {
		t.Error("a hook naming a script linked from outside was kept")
	}
	if _, ok := c["linked"]; ok {
		t.Error("trust let a file linked from outside the project in")
	}
	if count(warnings, "outside the project") != 2 || count(warnings, "not trusted") != 0 {
		t.Errorf("warnings = %q", warnings)
	}
}

// A project file linked from outside is refused before it is read: nothing of the
// target (a name, a description, a value quoted by a parse error) reaches a warning or
// the inspection (stoke agents check prints both, often into a public CI log).
func TestLinkedProjectFileIsNotRead(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	project := filepath.Join(root, "project")
	elsewhere := filepath.Join(root, "elsewhere")
	dir := filepath.Join(project, ".claude", "agents")
	writeDefFile(t, elsewhere, "bad.md", "---\nname: not a name sk-outside-1\n---\nx\n")
	writeDefFile(t, elsewhere, "mode.md", "---\nname: m\npermissionMode: sk-outside-2\n---\nx\n")
	writeDefFile(t, elsewhere, "good.md", "---\nname: good\ndescription: sk-outside-3\n---\nsk-outside-4\n")
	for _, name := range []string{"bad.md", "mode.md", "good.md"} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(elsewhere, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	in := Inspect(LoadOptions{ProjectDir: project, TrustProject: true})
	var linked int
	for _, f := range in.Found {
		if f.Scope != ScopeProject {
			continue
		}
		linked++
		if !strings.Contains(f.Err, "outside the project") {
			t.Errorf("%s: Err = %q, want a link out of the project", f.Definition.Source, f.Err)
		}
		if d := f.Definition; d.Name != "" || d.Description != "" || d.Prompt != "" {
			t.Errorf("%s: the target was read: %+v", d.Source, d)
		}
	}
	if linked != 3 {
		t.Errorf("%d project files found, want 3", linked)
	}
	if w := strings.Join(in.Warnings, "\n"); strings.Contains(w, "sk-outside") || strings.Count(w, "outside the project") != 3 {
		t.Errorf("warnings = %s", w)
	}
}

// ParseDefinition is parseDefinition's definition and warnings.
func ParseDefinition(source string, data []byte) (Definition, []string, error) {
	p, err := parseDefinition(source, data)
	return p.def, p.warnings, err
}
