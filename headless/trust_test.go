package headless

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless/sdkhost"
	"github.com/stoke-cli/stoke/streamjson/streamjsontest"
)

// parentRunsX is a scenario in which the parent runs the subagent "x" in the foreground
// and answers with its result; xRules are the subagent's rules.
func parentRunsX(xRules string) string {
	return `
rules:
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - name: task
          input: {description: try, prompt: "run it", subagent_type: x}
  - agent: parent
    reply: {text: "{{ lastToolResult }}"}
` + xRules
}

// agentShellScenario: x runs one shell command and reports its result.
var agentShellScenario = parentRunsX(`
  - agent: x
    when: {step: 1}
    reply:
      tool_calls:
        - name: shell
          input: {command: "touch pwned"}
  - agent: x
    reply: {text: "shell said: {{ lastToolResult }}"}
`)

func writeAgent(t *testing.T, cwd, rel, content string) {
	t.Helper()
	p := filepath.Join(cwd, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The run's approval mode is a ceiling for every agent, whatever its source: a
// definition may lower its mode, never raise it, and raising is one warning.
func TestAgentModeCeiling(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		runMode  tools.Mode
		file     string // .claude/agents/x.md, or "" for an SDK-defined agent
		sdkJSON  string // --agents, when file is ""
		ran      bool
		warnings int
	}{
		{"claude permissionMode bypassPermissions under plan", "plan",
			"---\nname: x\npermissionMode: bypassPermissions\n---\nx\n", "", false, 1},
		{"stoke approval-mode yolo under default", "default",
			"---\nname: x\napproval-mode: yolo\n---\nx\n", "", false, 1},
		{"qwen approvalMode yolo under auto-edit", "auto-edit",
			"---\nname: x\napprovalMode: yolo\n---\nx\n", "", false, 1},
		{"SDK agent bypassPermissions under plan", "plan",
			"", `{"x": {"description": "d", "prompt": "p", "permissionMode": "bypassPermissions"}}`, false, 1},
		{"SDK agent with an unknown mode", "yolo",
			"", `{"x": {"description": "d", "prompt": "p", "permissionMode": "auto"}}`, true, 1},
		{"lowering to plan under yolo", "yolo",
			"---\nname: x\npermissionMode: plan\n---\nx\n", "", false, 0},
		{"inheriting yolo", "yolo", "---\nname: x\n---\nx\n", "", true, 0},
		{"yolo under yolo", "yolo", "---\nname: x\npermissionMode: bypassPermissions\n---\nx\n", "", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			var logs streamjsontest.SyncBuffer
			o := opts(t, model(t, agentShellScenario), &out)
			o.ApprovalMode = tt.runMode
			o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			if tt.file != "" {
				writeAgent(t, o.CWD, ".claude/agents/x.md", tt.file)
			} else {
				defs, err := sdkhost.ParseAgentsJSON(tt.sdkJSON)
				if err != nil {
					t.Fatal(err)
				}
				o.SDK.Agents = defs
			}
			if err := Run(t.Context(), o); err != nil {
				t.Fatalf("Run: %v\n%s", err, out.String())
			}
			_, err := os.Stat(filepath.Join(o.CWD, "pwned"))
			if ran := err == nil; ran != tt.ran {
				t.Errorf("shell ran = %v, want %v\n%s", ran, tt.ran, out.String())
			}
			if n := strings.Count(logs.String(), "agent approval mode ignored"); n != tt.warnings {
				t.Errorf("%d warnings, want %d:\n%s", n, tt.warnings, logs.String())
			}
		})
	}
}

// tools: [] gives an agent no tools at all; an absent tools list inherits every one.
func TestAgentEmptyToolList(t *testing.T) {
	t.Parallel()
	scenario := parentRunsX(`
  - agent: x
    when: {tools_include: shell}
    reply: {text: "x has a shell"}
  - agent: x
    when: {tools_include: read_file}
    reply: {text: "x reads"}
  - agent: x
    reply: {text: "x has no tools"}
`)
	for _, tt := range []struct{ tools, want string }{
		{"tools: []\n", "x has no tools"},
		{"tools: \"\"\n", "x has no tools"},
		{"", "x has a shell"},
		{"tools: Read\n", "x reads"},
	} {
		var out bytes.Buffer
		o := opts(t, model(t, scenario), &out)
		writeAgent(t, o.CWD, ".stoke/agents/x.md", "---\nname: x\n"+tt.tools+"---\nx\n")
		if err := Run(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), tt.want) {
			t.Errorf("%q: want %q in\n%s", tt.tools, tt.want, out.String())
		}
	}
}

// An agent's disallowedTools are permission rules: Bash(rm:*) refuses a compound
// command that removes a file, in yolo too, while the agent keeps its shell.
func TestAgentDisallowedRule(t *testing.T) {
	t.Parallel()
	scenario := parentRunsX(`
  - agent: x
    when: {step: 1}
    reply:
      tool_calls:
        - name: shell
          input: {command: "echo a; rm victim"}
        - name: shell
          input: {command: "touch kept"}
  - agent: x
    reply: {text: "done"}
`)
	var out bytes.Buffer
	o := opts(t, model(t, scenario), &out)
	o.ApprovalMode = "yolo"
	writeAgent(t, o.CWD, ".stoke/agents/x.md", "---\nname: x\ndisallowedTools: Bash(rm:*)\n---\nx\n")
	writeAgent(t, o.CWD, "victim", "v")
	if err := Run(t.Context(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(o.CWD, "victim")); err != nil {
		t.Errorf("victim removed: %v\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(o.CWD, "kept")); err != nil {
		t.Errorf("the agent lost its shell: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "matches the deny rule Bash(rm:*)") {
		t.Errorf("no refusal naming the rule:\n%s", out.String())
	}
}
