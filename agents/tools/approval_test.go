package tools

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

// approvalCalls are valid calls of every tool, and what proves that one ran.
var approvalCalls = []struct {
	tool string
	args obj
	ran  func(t *testing.T, w *Workspace, res Result) bool
}{
	{NameReadFile, obj{"file_path": "f.txt"}, func(_ *testing.T, _ *Workspace, res Result) bool {
		return res.Content == "     1\thello"
	}},
	{NameWriteFile, obj{"file_path": "new.txt", "content": "n"}, func(_ *testing.T, w *Workspace, _ Result) bool {
		return fileExists(w, "new.txt")
	}},
	{NameEdit, obj{"file_path": "f.txt", "old_string": "hello", "new_string": "bye"}, func(t *testing.T, w *Workspace, _ Result) bool {
		return readBack(t, w, "f.txt") == "bye\n"
	}},
	{NameGlob, obj{"pattern": "*.txt"}, func(_ *testing.T, _ *Workspace, res Result) bool { return res.Content == "f.txt" }},
	{NameGrep, obj{"pattern": "hel+o"}, func(_ *testing.T, _ *Workspace, res Result) bool { return res.Content == "f.txt:1:hello" }},
	{NameShell, obj{"command": "echo ran > ran.txt"}, func(_ *testing.T, w *Workspace, _ Result) bool { return fileExists(w, "ran.txt") }},
}

func fileExists(w *Workspace, p string) bool {
	_, err := os.Lstat(filepath.Join(w.Root(), filepath.FromSlash(p)))
	return err == nil
}

// TestApprovalModes runs every tool under every mode: allowed calls run, refused ones
// do nothing and say which flag would allow them.
func TestApprovalModes(t *testing.T) {
	t.Parallel()
	refusedBy := map[Mode]map[string]string{ // mode → tool → the refusal's telling words
		ModePlan:     {NameWriteFile: "plan mode", NameEdit: "plan mode", NameShell: "plan mode"},
		ModeDefault:  {NameWriteFile: "--approval-mode auto-edit", NameEdit: "--approval-mode auto-edit", NameShell: "--approval-mode yolo"},
		ModeAutoEdit: {NameShell: "--approval-mode yolo"},
		ModeYolo:     {},
	}
	for _, mode := range Modes() {
		for _, c := range approvalCalls {
			t.Run(string(mode)+"/"+c.tool, func(t *testing.T) {
				t.Parallel()
				var denials []Denial
				var mu sync.Mutex
				w := newWorkspace(t, mode, map[string]string{"f.txt": "hello\n"}, WithDenialHook(func(d Denial) {
					mu.Lock()
					defer mu.Unlock()
					denials = append(denials, d)
				}))
				ts, _ := w.Tools(nil)
				if len(ts) != 6 {
					t.Fatalf("%s offers %d tools, want all 6", mode, len(ts))
				}
				res := call(t, w, c.tool, c.args)
				words, refused := refusedBy[mode][c.tool]
				if refused {
					if !res.IsError || !strings.Contains(res.Content, words) || strings.Contains(res.Content, "\n") {
						t.Errorf("result %+v, want a one-line refusal naming %q", res, words)
					}
					if c.ran(t, w, res) {
						t.Error("the refused call ran")
					}
					if len(denials) != 1 || denials[0].Call.Name != c.tool || denials[0].Call.ID != "toolu_1" || denials[0].Reason != res.Content {
						t.Errorf("denials = %+v", denials)
					}
					return
				}
				if res.IsError || !c.ran(t, w, res) {
					t.Errorf("result %+v, want the call to run", res)
				}
				if len(denials) != 0 {
					t.Errorf("denials = %+v", denials)
				}
			})
		}
	}
}

func TestApprover(t *testing.T) {
	t.Parallel()
	type asked struct {
		call Call
		kind Kind
	}
	tests := []struct {
		name      string
		mode      Mode
		tool      string
		args      obj
		allow     bool
		updated   string
		reason    string
		wantAsked bool
		wantRan   string // the file the call creates when it runs
		wantText  string
	}{
		{"default asks for edits; allowed", ModeDefault, NameWriteFile, obj{"file_path": "a.txt", "content": "a"}, true, "", "", true, "a.txt", "created a.txt"},
		{"default asks for shell; refused with the reason", ModeDefault, NameShell, obj{"command": "touch s.txt"}, false, "", "not on a Friday", true, "", "shell was not approved: not on a Friday"},
		{"refused without a reason", ModeAutoEdit, NameShell, obj{"command": "touch s.txt"}, false, "", "", true, "", "shell was not approved"},
		{"updated input replaces the call's", ModeAutoEdit, NameShell, obj{"command": "touch bad.txt"}, true, `{"command":"touch good.txt"}`, "", true, "good.txt", "[exit code 0]"},
		{"updated input is checked again", ModeDefault, NameWriteFile, obj{"file_path": "a.txt", "content": "a"}, true, `{"file_path":""}`, "", true, "", "file_path is required"},
		{"allowed kinds never ask", ModeAutoEdit, NameEdit, obj{"file_path": "f.txt", "old_string": "x", "new_string": "y"}, false, "", "", false, "", "replaced 1 occurrence"},
		{"plan never asks", ModePlan, NameWriteFile, obj{"file_path": "a.txt", "content": "a"}, true, "", "", false, "", "plan mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []asked
			w := newWorkspace(t, tt.mode, map[string]string{"f.txt": "x"}, WithApprover(ApproverFunc(
				func(ctx context.Context, c Call, k Kind) (bool, json.RawMessage, string) {
					got = append(got, asked{c, k})
					var upd json.RawMessage
					if tt.updated != "" {
						upd = json.RawMessage(tt.updated)
					}
					return tt.allow, upd, tt.reason
				})))
			res := call(t, w, tt.tool, tt.args)
			if (len(got) == 1) != tt.wantAsked || len(got) > 1 {
				t.Fatalf("asked %d times, want asked=%v", len(got), tt.wantAsked)
			}
			if tt.wantAsked {
				wantKind := KindEdit
				if tt.tool == NameShell {
					wantKind = KindExec
				}
				if got[0].kind != wantKind || got[0].call.Name != tt.tool || got[0].call.ID != "toolu_1" {
					t.Errorf("asked %+v", got[0])
				}
			}
			if !strings.Contains(res.Content, tt.wantText) {
				t.Errorf("result %+v, want it to contain %q", res, tt.wantText)
			}
			for _, f := range []string{"a.txt", "s.txt", "bad.txt", "good.txt"} {
				if fileExists(w, f) != (f == tt.wantRan) {
					t.Errorf("%s exists: %v", f, fileExists(w, f))
				}
			}
		})
	}
}

// An approver that is still deciding when the call is cancelled refuses.
func TestApproverCancelled(t *testing.T) {
	t.Parallel()
	w := newWorkspace(t, ModeDefault, nil, WithApprover(ApproverFunc(
		func(ctx context.Context, _ Call, _ Kind) (bool, json.RawMessage, string) {
			<-ctx.Done()
			return true, nil, ""
		})))
	ts, _ := w.Tools([]string{"Write"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := NewSet(ts...).Run(ctx, Call{Name: NameWriteFile, Input: json.RawMessage(`{"file_path":"a.txt","content":"a"}`)})
	if !res.IsError || fileExists(w, "a.txt") {
		t.Errorf("result %+v; a.txt exists: %v", res, fileExists(w, "a.txt"))
	}
}

func TestWithMode(t *testing.T) {
	t.Parallel()
	w := newWorkspace(t, ModeDefault, nil)
	y, err := w.WithMode(ModeYolo)
	if err != nil || y.Mode() != ModeYolo || w.Mode() != ModeDefault || y.Root() != w.Root() || y.edits != w.edits {
		t.Errorf("WithMode = %+v, %v", y, err)
	}
	if _, err := w.WithMode("root"); !errors.Is(err, ErrUnknownMode) {
		t.Errorf("WithMode(root) = %v", err)
	}
}

// Workspace.Gate puts a tool from elsewhere (an MCP server's) under the workspace's
// approval as a command: only yolo runs it by itself; default asks the Approver.
func TestGate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mode     Mode
		approver bool
		wantRun  bool
		wantText string
	}{
		{ModePlan, true, false, "not allowed in plan mode"},
		{ModeDefault, false, false, "Rerun with --approval-mode yolo to allow calls of mcp__srv__do"},
		{ModeAutoEdit, false, false, "needs approval"},
		{ModeYolo, false, true, "done"},
		{ModeDefault, true, true, "done"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			var denials []Denial
			var mu sync.Mutex
			opts := []Option{WithDenialHook(func(d Denial) { mu.Lock(); denials = append(denials, d); mu.Unlock() })}
			if tc.approver {
				opts = append(opts, WithApprover(ApproverFunc(func(_ context.Context, c Call, k Kind) (bool, json.RawMessage, string) {
					return k == KindExec && c.Name == "mcp__srv__do", nil, ""
				})))
			}
			w := newWorkspace(t, tc.mode, nil, opts...)
			ran := false
			tool := Func{ToolSpec: llm.ToolSpec{Name: "mcp__srv__do", Parameters: json.RawMessage(`{"type":"object"}`)}, Fn: func(context.Context, Call) Result { ran = true; return Result{Content: "done"} }}
			res := NewSet(w.Gate(tool, KindExec)).Run(t.Context(), Call{ID: "c1", Name: "mcp__srv__do", Input: []byte(`{}`)})
			if ran != tc.wantRun || !strings.Contains(res.Content, tc.wantText) || res.IsError == tc.wantRun {
				t.Errorf("ran=%v result=%+v, want ran=%v and %q", ran, res, tc.wantRun, tc.wantText)
			}
			if (len(denials) == 1) == tc.wantRun {
				t.Errorf("denials = %+v", denials)
			}
		})
	}
}
