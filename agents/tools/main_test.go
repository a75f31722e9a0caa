package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for leaked goroutines. (Re-executed as the sandbox's helper by the
// sandboxed shell tool, the test binary runs the helper from package sandbox's init.)
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newWorkspace returns a workspace over a fresh directory holding files (slash path →
// content; a path ending in / is an empty directory).
func newWorkspace(t testing.TB, mode Mode, files map[string]string, opts ...Option) *Workspace {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, files)
	w, err := NewWorkspace(dir, mode, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if p[len(p)-1] == '/' {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// call runs one tool call through a Set of all the workspace's tools, as the agent loop does.
func call(t testing.TB, w *Workspace, name string, args any) Result {
	t.Helper()
	ts, _ := w.Tools(nil)
	in, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return NewSet(ts...).Run(t.Context(), Call{ID: "toolu_1", Name: name, Input: in})
}

// obj is a shorthand for tool arguments.
type obj = map[string]any

func readBack(t testing.TB, w *Workspace, p string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.Root(), filepath.FromSlash(p)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
