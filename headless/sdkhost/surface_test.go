package sdkhost

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// The SDK surface: each dialect's tool names everywhere a tool is named, stoke's words
// moved where the SDKs' types name other values, and the events handed in left alone.
func TestSurface(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dialect  string
		tools    []string
		progress string
		denial   string
	}{
		{DialectClaude, []string{"task", "Read", "Write", "Edit", "Glob", "Grep", "Bash", "mcp__calc__add"}, "Bash", "Write"},
		{DialectQwen, []string{"task", "read_file", "write_file", "edit", "glob", "grep_search", "run_shell_command", "mcp__calc__add"}, "run_shell_command", "write_file"},
	}
	for _, tt := range tests {
		t.Run(tt.dialect, func(t *testing.T) {
			t.Parallel()
			h := New(context.Background(), Config{Options: Options{Dialect: tt.dialect}, Mode: tools.ModeAutoEdit, Version: "1.2.3"})
			defer h.Close()

			init := streamjson.NewInit()
			init.Tools = []string{"task", "read_file", "write_file", "edit", "glob", "grep", "shell", "mcp__calc__add"}
			got := h.Surface(init).(*streamjson.Init)
			want := append([]string{}, tt.tools...)
			want[0] = map[string]string{DialectClaude: "Task", DialectQwen: "task"}[tt.dialect]
			if diff := cmp.Diff(want, got.Tools); diff != "" {
				t.Errorf("init tools (-want +got):\n%s", diff)
			}
			if init.Tools[1] != "read_file" {
				t.Errorf("the event handed in was changed: %v", init.Tools)
			}
			if tt.dialect == DialectQwen && (got.QwenPermissionMode != "auto-edit" || got.QwenCodeVersion != "1.2.3") {
				t.Errorf("Qwen Code's init keys = %q, %q", got.QwenPermissionMode, got.QwenCodeVersion)
			}

			a := streamjson.NewAssistant("m1", "model", []llm.Block{llm.TextBlock("x"),
				{Type: llm.BlockToolUse, ID: "c1", Name: "shell", Input: json.RawMessage(`{"command":"ls"}`)}}, llm.StopToolUse, llm.Usage{})
			if got := h.Surface(a).(*streamjson.Assistant).Message.Content[1].Name; got != tt.progress {
				t.Errorf("tool_use name = %q, want %q", got, tt.progress)
			}
			if a.Message.Content[1].Name != "shell" {
				t.Errorf("the assistant event handed in was changed")
			}

			p := streamjson.NewTaskProgress()
			p.LastToolName = "shell"
			if got := h.Surface(p).(*streamjson.TaskProgress).LastToolName; got != tt.progress {
				t.Errorf("last_tool_name = %q", got)
			}

			r := streamjson.NewResult(streamjson.ResultSuccess)
			r.PermissionDenials = []streamjson.PermissionDenial{{ToolName: "write_file", ToolUseID: "c1", ToolInput: json.RawMessage(`{}`)}}
			if got := h.Surface(r).(*streamjson.Result).PermissionDenials[0].ToolName; got != tt.denial {
				t.Errorf("denial tool_name = %q, want %q", got, tt.denial)
			}
			if r.PermissionDenials[0].ToolName != "write_file" {
				t.Errorf("the result handed in was changed")
			}

			n := streamjson.NewTaskNotification()
			n.Status, n.Reason = streamjson.StatusStopped, "cancelled"
			gotN := h.Surface(n).(*streamjson.TaskNotification)
			if gotN.Reason != "" || gotN.StokeReason != "cancelled" || n.Reason != "cancelled" {
				t.Errorf("notification reason %q, stoke_reason %q", gotN.Reason, gotN.StokeReason)
			}
		})
	}
}

func TestQwenRules(t *testing.T) {
	t.Parallel()
	got := QwenRules([]string{"run_shell_command(rm *)", "write_file", "grep_search", "Bash(git status)", "mcp__calc__add", "list_directory"})
	want := []string{"shell(rm *)", "write_file", "grep", "shell(git status)", "mcp__calc__add", "glob"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("QwenRules (-want +got):\n%s", diff)
	}
}
