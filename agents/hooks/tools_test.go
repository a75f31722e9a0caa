package hooks

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
)

// The PreToolUse hooks' answers, as Claude Code defines them.
func TestPreToolUseOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		hooks []string
		want  Outcome
	}{
		{"exit 2 denies with stderr", []string{`echo "no rm here" >&2; exit 2`},
			Outcome{Block: true, Reason: "no rm here", Decision: DecisionDeny}},
		{"permissionDecision deny", []string{`echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"not today"}}'`},
			Outcome{Block: true, Reason: "not today", Decision: DecisionDeny}},
		{"allow", []string{`echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`}, Outcome{Decision: DecisionAllow}},
		{"the older approve", []string{`echo '{"decision":"approve"}'`}, Outcome{Decision: DecisionAllow}},
		{"ask beats allow", []string{`echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`, `echo '{"hookSpecificOutput":{"permissionDecision":"ask"}}'`},
			Outcome{Decision: DecisionAsk}},
		{"deny beats ask", []string{`echo '{"hookSpecificOutput":{"permissionDecision":"ask"}}'`, `exit 2`},
			Outcome{Block: true, Reason: `blocked by hook "exit 2" (exit code 2, no reason on stderr)`, Decision: DecisionDeny}},
		{"updatedInput", []string{`echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls"}}}'`},
			Outcome{Decision: DecisionAllow, UpdatedInput: json.RawMessage(`{"command":"ls"}`)}},
		{"continue false stops", []string{`echo '{"continue":false,"stopReason":"enough"}'`},
			Outcome{Block: true, Reason: "enough", Decision: DecisionDeny}},
		{"plain stdout decides nothing", []string{`echo hello`}, Outcome{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var hs []Hook
			for _, c := range tt.hooks {
				hs = append(hs, hook(c))
			}
			out, err := (&Runner{Dir: t.TempDir()}).Run(t.Context(), PreToolUse, hs, Input{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, out); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

// Plain stdout is context for UserPromptSubmit and SessionStart only.
func TestPlainStdoutIsContext(t *testing.T) {
	t.Parallel()
	for ev, want := range map[Event]string{UserPromptSubmit: "the branch is main", SessionStart: "the branch is main", Stop: "", PostToolUse: ""} {
		out, err := (&Runner{Dir: t.TempDir()}).Run(t.Context(), ev, []Hook{hook(`echo "the branch is main"`)}, Input{})
		if err != nil || out.AdditionalContext != want {
			t.Errorf("%s: context %q, %v; want %q", ev, out.AdditionalContext, err, want)
		}
	}
}

func TestToolEventInput(t *testing.T) {
	t.Parallel()
	in := Input{Event: PostToolUse, SessionID: "s", CWD: "/w", TaskID: "a1", SubagentType: "reviewer", PermissionMode: "default",
		ToolName: "Bash", StokeToolName: "shell", ToolInput: json.RawMessage(`{"command":"ls"}`), ToolUseID: "call_1", ToolResponse: "x.go", ToolError: false}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"hook_event_name": "PostToolUse", "session_id": "s", "cwd": "/w", "task_id": "a1", "subagent_type": "reviewer",
		"turn": 0.0, "continuation": "", "permission_mode": "default", "agent_id": "a1", "agent_type": "reviewer",
		"tool_name": "Bash", "stoke_tool_name": "shell", "tool_input": map[string]any{"command": "ls"}, "tool_use_id": "call_1",
		"tool_response": "x.go", "tool_error": false,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PostToolUse input (-want +got):\n%s", diff)
	}
	for ev, key := range map[Event]string{UserPromptSubmit: "prompt", SessionStart: "source", SessionEnd: "reason"} {
		data, _ := json.Marshal(Input{Event: ev, Prompt: "p", Source: "startup", Reason: "other"})
		if !strings.Contains(string(data), `"`+key+`":`) {
			t.Errorf("%s input %s lacks %s", ev, data, key)
		}
	}
}

// The hooks around a tool set's calls: a guard that blocks rm (exit 2), a hook that
// rewrites the input, an allow that runs what the approval mode would refuse, context
// after the call; matchers on Claude Code's names and stoke's, whole-name regular
// expressions.
func TestToolHooksWrap(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws, err := tools.NewWorkspace(dir, tools.ModeYolo)
	if err != nil {
		t.Fatal(err)
	}
	readOnly, err := tools.NewWorkspace(dir, tools.ModePlan)
	if err != nil {
		t.Fatal(err)
	}
	deflt, err := tools.NewWorkspace(dir, tools.ModeDefault)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		PreToolUse: {
			{Command: `grep -q '"command":"rm ' && { echo "rm is not allowed here" >&2; exit 2; }; exit 0`, Matcher: "Bash", Timeout: DefaultTimeout},
			{Command: `grep -q 'rewrite-me' && echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"echo rewritten"}}}'; exit 0`, Matcher: "shell", Timeout: DefaultTimeout},
			{Command: `echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`, Matcher: "Write|Edit", Timeout: DefaultTimeout},
			{Command: `in=$(cat); printf '%s' "$in" > "pre-$(printf '%s' "$in" | jq -r .tool_use_id).json"`, Timeout: DefaultTimeout},
		},
		PostToolUse: {
			{Command: `echo '{"hookSpecificOutput":{"additionalContext":"checked by the linter"}}'`, Matcher: "write_file", Timeout: DefaultTimeout},
		},
	}
	h := ToolHooks{Config: cfg, Runner: &Runner{Dir: dir}, Input: Input{SessionID: "s", CWD: dir, SubagentType: "reviewer"}}
	run := func(w *tools.Workspace, ctx context.Context, call tools.Call) tools.Result {
		ts, _ := w.Tools(nil)
		return h.Wrap(tools.NewSet(ts...)).Run(ctx, call)
	}
	ctx := llm.WithTaskID(t.Context(), "a0123456789abcdef")

	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := run(ws, ctx, tools.Call{ID: "c1", Name: tools.NameShell, Input: json.RawMessage(`{"command":"rm keep.txt"}`)})
	if !res.IsError || !strings.Contains(res.Content, "rm is not allowed here") {
		t.Errorf("rm = %+v; want it blocked with the hook's reason", res)
	}
	if _, err := os.Stat(filepath.Join(dir, "keep.txt")); err != nil {
		t.Errorf("keep.txt is gone: %v", err)
	}
	res = run(ws, ctx, tools.Call{ID: "c2", Name: tools.NameShell, Input: json.RawMessage(`{"command":"echo rewrite-me"}`)})
	if res.IsError || !strings.Contains(res.Content, "rewritten") {
		t.Errorf("rewritten call = %+v; want the hook's input run", res)
	}
	// write_file under the default mode is refused, unless a hook allows it; plan mode
	// stays read-only.
	res = run(deflt, ctx, tools.Call{ID: "c3", Name: tools.NameWriteFile, Input: json.RawMessage(`{"file_path":"new.txt","content":"x"}`)})
	if res.IsError || !strings.Contains(res.Content, "<hook-context>checked by the linter</hook-context>") {
		t.Errorf("allowed write = %+v; want it run, with the PostToolUse context", res)
	}
	res = run(readOnly, ctx, tools.Call{ID: "c4", Name: tools.NameWriteFile, Input: json.RawMessage(`{"file_path":"plan.txt","content":"x"}`)})
	if !res.IsError || !strings.Contains(res.Content, "plan mode") {
		t.Errorf("write in plan mode = %+v; want it refused despite the hook", res)
	}
	data, err := os.ReadFile(filepath.Join(dir, "pre-c2.json"))
	if err != nil {
		t.Fatal(err)
	}
	var in map[string]any
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatal(err)
	}
	if in["tool_name"] != "Bash" || in["stoke_tool_name"] != "shell" || in["agent_id"] != "a0123456789abcdef" || in["agent_type"] != "reviewer" {
		t.Errorf("PreToolUse input = %v", in)
	}
	if !h.Wrap(tools.NewSet(tools.Func{ToolSpec: llm.ToolSpec{Name: "r", Parameters: json.RawMessage(`{"type":"object"}`)}, Parallel: true})).ReadOnly("r") {
		t.Error("a wrapped read-only tool is not read-only")
	}
	if plain := tools.NewSet(); (ToolHooks{Runner: &Runner{}}).Wrap(plain) != plain {
		t.Error("no tool hooks: the set should come back as it is")
	}
}

// A PreToolUse "ask" leaves the call to the approval mode (refused under default, run
// under yolo), where "allow" runs it; a PostToolUse block reaches the model with the
// call's own result.
func TestToolHooksAskAndPostBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := Config{
		PreToolUse:  {{Command: `in=$(cat); case "$in" in *ask-me*) echo '{"hookSpecificOutput":{"permissionDecision":"ask"}}';; *allow-me*) echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}';; esac`, Matcher: "Write", Timeout: DefaultTimeout}},
		PostToolUse: {{Command: `echo '{"decision":"block","reason":"the tests fail now"}'`, Matcher: "Write", Timeout: DefaultTimeout}},
	}
	h := ToolHooks{Config: cfg, Runner: &Runner{Dir: dir}, Input: Input{SessionID: "s", CWD: dir}}
	for _, tc := range []struct {
		mode        tools.Mode
		content     string
		wantRefused bool
	}{
		{tools.ModeDefault, "ask-me", true},
		{tools.ModeYolo, "ask-me", false},
		{tools.ModeDefault, "allow-me", false},
	} {
		ws, err := tools.NewWorkspace(dir, tc.mode)
		if err != nil {
			t.Fatal(err)
		}
		ts, _ := ws.Tools(nil)
		file := string(tc.mode) + "-" + tc.content + ".txt"
		res := h.Wrap(tools.NewSet(ts...)).Run(t.Context(), tools.Call{ID: "c", Name: tools.NameWriteFile,
			Input: json.RawMessage(`{"file_path":"` + file + `","content":"` + tc.content + `"}`)})
		_, statErr := os.Stat(filepath.Join(dir, file))
		if refused := statErr != nil; refused != tc.wantRefused || res.IsError != tc.wantRefused {
			t.Errorf("%s, %s: result %+v, file written %v; want refused %v", tc.mode, tc.content, res, statErr == nil, tc.wantRefused)
		}
		if !strings.Contains(res.Content, "<hook-feedback>A PostToolUse hook says: the tests fail now</hook-feedback>") {
			t.Errorf("%s, %s: result %q lacks the PostToolUse block's reason", tc.mode, tc.content, res.Content)
		}
	}
}
