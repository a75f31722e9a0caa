package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stoke-cli/stoke/agents/secrets"
)

func TestProtected(t *testing.T) {
	t.Parallel()
	for rel, want := range map[string]bool{
		".stoke/settings.yaml": true, ".claude/agents/x.md": true, ".qwen/settings.json": true,
		".git/hooks/pre-commit": true, ".git": true, ".mcp.json": true, "sub/.git/config": true,
		".STOKE/settings.yaml": true, "sub/.Claude/x": true, "a/.mcp.json": true,
		"stoke/settings.yaml": false, ".gitignore": false, ".github/workflows/ci.yml": false,
		"docs/.stoke.md": false, "mcp.json": false, ".": false,
	} {
		if _, got := Protected(rel); got != want {
			t.Errorf("Protected(%q) = %v, want %v", rel, got, want)
		}
	}
}

// Below yolo, write_file and edit refuse stoke's, Claude Code's, Qwen Code's and git's
// configuration under every spelling; yolo writes it.
func TestProtectedPaths(t *testing.T) {
	t.Parallel()
	files := map[string]string{".stoke/settings.yaml": "model: m\n", ".git/config": "[core]\n", "ok.txt": "a\n"}
	writes := []struct {
		tool string
		args obj
	}{
		{NameWriteFile, obj{"file_path": ".stoke/settings.yaml", "content": "approval-mode: yolo\n"}},
		{NameWriteFile, obj{"file_path": "./x/../.stoke/settings.yaml", "content": "approval-mode: yolo\n"}},
		{NameWriteFile, obj{"file_path": ".stoke/agents/evil.md", "content": "---\nname: evil\n---\n"}},
		{NameWriteFile, obj{"file_path": ".claude/settings.json", "content": "{}"}},
		{NameWriteFile, obj{"file_path": ".qwen/settings.json", "content": "{}"}},
		{NameWriteFile, obj{"file_path": ".mcp.json", "content": "{}"}},
		{NameWriteFile, obj{"file_path": ".git/hooks/post-checkout", "content": "#!/bin/sh\ntouch pwned\n"}},
		{NameWriteFile, obj{"file_path": "link/settings.yaml", "content": "approval-mode: yolo\n"}},
		{NameEdit, obj{"file_path": ".stoke/settings.yaml", "old_string": "model: m", "new_string": "approval-mode: yolo"}},
		{NameEdit, obj{"file_path": ".git/config", "old_string": "[core]", "new_string": "[core]\nhooksPath = x"}},
	}
	for _, mode := range []Mode{ModeDefault, ModeAutoEdit, ModeYolo} {
		for _, wr := range writes {
			t.Run(string(mode)+"/"+wr.tool+"/"+wr.args["file_path"].(string), func(t *testing.T) {
				t.Parallel()
				var denials []Denial
				var mu sync.Mutex
				approve := ApproverFunc(func(context.Context, Call, Kind) (bool, json.RawMessage, string) { return true, nil, "" })
				w := newWorkspace(t, mode, files, WithApprover(approve), WithDenialHook(func(d Denial) {
					mu.Lock()
					denials = append(denials, d)
					mu.Unlock()
				}))
				if err := os.Symlink(".stoke", filepath.Join(w.Root(), "link")); err != nil {
					t.Fatal(err)
				}
				res := call(t, w, wr.tool, wr.args)
				if mode == ModeYolo {
					if res.IsError {
						t.Fatalf("yolo refused: %s", res.Content)
					}
					return
				}
				if !res.IsError || !strings.Contains(res.Content, "below --approval-mode yolo") {
					t.Fatalf("not refused as protected: %+v", res)
				}
				if got := readBack(t, w, ".stoke/settings.yaml"); got != "model: m\n" {
					t.Errorf(".stoke/settings.yaml changed: %q", got)
				}
				if got := readBack(t, w, ".git/config"); got != "[core]\n" {
					t.Errorf(".git/config changed: %q", got)
				}
				for _, p := range []string{".stoke/agents/evil.md", ".claude/settings.json", ".qwen/settings.json", ".mcp.json", ".git/hooks/post-checkout"} {
					if fileExists(w, p) {
						t.Errorf("%s was written", p)
					}
				}
				if len(denials) != 1 {
					t.Errorf("%d denials recorded, want 1", len(denials))
				}
			})
		}
	}
	// Other files are written as before.
	w := newWorkspace(t, ModeAutoEdit, files)
	if res := call(t, w, NameWriteFile, obj{"file_path": "ok.txt", "content": "b\n"}); res.IsError {
		t.Fatal(res.Content)
	}
}

// An approver that rewrites the input cannot smuggle a protected path past the check;
// an approver in yolo (an SDK host's bypassPermissions) writes it.
func TestProtectedUpdatedInput(t *testing.T) {
	t.Parallel()
	rewrite := ApproverFunc(func(context.Context, Call, Kind) (bool, json.RawMessage, string) {
		return true, json.RawMessage(`{"file_path":".stoke/settings.yaml","content":"approval-mode: yolo\n"}`), ""
	})
	w := newWorkspace(t, ModeDefault, nil, WithApprover(rewrite))
	res := call(t, w, NameWriteFile, obj{"file_path": "ok.txt", "content": "x"})
	if !res.IsError || fileExists(w, ".stoke/settings.yaml") {
		t.Fatalf("rewritten input wrote protected configuration: %+v", res)
	}
	w = newWorkspace(t, ModeDefault, nil, WithApprover(yoloApprover{}))
	if res := call(t, w, NameWriteFile, obj{"file_path": ".stoke/settings.yaml", "content": "x"}); res.IsError {
		t.Fatalf("an approver in yolo was refused: %s", res.Content)
	}
}

type yoloApprover struct{}

func (yoloApprover) Approve(context.Context, Call, Kind) (bool, json.RawMessage, string) {
	return true, nil, ""
}
func (yoloApprover) Mode() Mode { return ModeYolo }

type denyAll string

func (d denyAll) Deny(c Call) (string, bool) {
	return string(d), c.Name == NameReadFile || c.Name == NameShell
}

// Deny rules refuse a call in every mode, reads included, before anything runs.
func TestDenier(t *testing.T) {
	t.Parallel()
	var denials []Denial
	var mu sync.Mutex
	w := newWorkspace(t, ModeYolo, map[string]string{"a.txt": "secret\n"}, WithDenier(denyAll("no reading today")),
		WithDenialHook(func(d Denial) { mu.Lock(); denials = append(denials, d); mu.Unlock() }))
	res := call(t, w, NameReadFile, obj{"file_path": "a.txt"})
	if !res.IsError || strings.Contains(res.Content, "secret") || !strings.Contains(res.Content, "no reading today") {
		t.Fatalf("read_file = %+v", res)
	}
	if res := call(t, w, NameShell, obj{"command": "touch pwned"}); !res.IsError || fileExists(w, "pwned") {
		t.Fatalf("shell = %+v", res)
	}
	if res := call(t, w, NameGlob, obj{"pattern": "*.txt"}); res.IsError {
		t.Fatalf("glob refused: %s", res.Content)
	}
	if len(denials) != 2 {
		t.Errorf("%d denials, want 2", len(denials))
	}
}

// The shell runs without the provider keys and the env-deny variables, and every tool
// result has the run's key redacted.
func TestSecrets(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", key)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-other-key-value")
	t.Setenv("STOKE_API_KEY", "sk-stoke-other-value")
	t.Setenv("MY_TOKEN", "tok-secret-value")
	t.Setenv("HARMLESS", "visible")
	policy := secrets.New(secrets.Config{Deny: []string{"*_TOKEN"}, Values: []string{key}})
	w := newWorkspace(t, ModeYolo, map[string]string{"leak.txt": "the key is " + key + "\n"}, WithSecrets(policy))

	res := call(t, w, NameShell, obj{"command": "env"})
	if res.IsError || !strings.Contains(res.Content, "HARMLESS=visible") {
		t.Fatalf("env = %+v", res)
	}
	for _, v := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "STOKE_API_KEY", "MY_TOKEN", key, "tok-secret-value"} {
		if strings.Contains(res.Content, v) {
			t.Errorf("shell environment shows %s:\n%s", v, res.Content)
		}
	}
	// The second line: a value that reaches a result anyway is redacted.
	res = call(t, w, NameShell, obj{"command": "echo " + key})
	if strings.Contains(res.Content, key) || !strings.Contains(res.Content, secrets.Redacted) {
		t.Errorf("shell result not redacted: %q", res.Content)
	}
	for _, r := range []Result{
		call(t, w, NameReadFile, obj{"file_path": "leak.txt"}),
		call(t, w, NameGrep, obj{"pattern": "key"}),
	} {
		if strings.Contains(r.Content, key) || !strings.Contains(r.Content, secrets.Redacted) {
			t.Errorf("result not redacted: %q", r.Content)
		}
	}
	// Without a policy the provider keys are still kept out of the shell.
	w = newWorkspace(t, ModeYolo, nil)
	if res := call(t, w, NameShell, obj{"command": "env"}); strings.Contains(res.Content, key) || !strings.Contains(res.Content, "MY_TOKEN") {
		t.Errorf("default environment: %q", res.Content)
	}
}
