package tools_test

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/agents/tools/toolstest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestSpecGolden pins what the model is told about each workspace tool: its name, its
// description and its JSON Schema, as sent (key order kept). Refresh with -update and
// read the diff: a change here is a change of what every model sees.
func TestSpecGolden(t *testing.T) {
	t.Parallel()
	w, err := tools.NewWorkspace(t.TempDir(), tools.ModeDefault)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := w.Tools(nil)
	toolstest.CheckSpecs(t, filepath.Join("testdata", "specs.json"), tools.NewSet(ts...).Specs(), *update)
}
