package tools

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestSpecGolden pins what the model is told about each workspace tool: its name, its
// description and its JSON Schema, as sent (key order kept). Refresh with -update and
// read the diff: a change here is a change of what every model sees.
func TestSpecGolden(t *testing.T) {
	t.Parallel()
	w := newWorkspace(t, ModeDefault, nil)
	ts, _ := w.Tools(nil)
	checkSpecs(t, filepath.Join("testdata", "specs.json"), NewSet(ts...).Specs())
}

// checkSpecs compares specs with the golden file at path (or rewrites it with -update).
func checkSpecs(t *testing.T, path string, specs []llm.ToolSpec) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ") // keeps the schemas' key order
	if err := enc.Encode(specs); err != nil {
		t.Fatal(err)
	}
	got := buf.Bytes()
	if *update {
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
