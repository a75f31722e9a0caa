// Package toolstest helps the tests of tools: a golden file of tool specs, as the model
// is told about them.
package toolstest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

// CheckSpecs compares specs — name, description, JSON Schema as sent, key order kept —
// with the golden file at path, and fails t on a difference; with update it rewrites the
// file instead (go test -update), for the diff to be read.
func CheckSpecs(t testing.TB, path string, specs []llm.ToolSpec, update bool) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(specs); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	if update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("tool specs differ from %s (go test -update rewrites it; review the diff):\n%s", path, got)
	}
}
