package agents

import (
	"context"
	"flag"
	"path/filepath"
	"testing"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/agents/tools/toolstest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestTaskToolSpecGolden pins what the parent model is told about the task tools — name,
// description, JSON Schema as sent — with background agents on and off. Refresh with
// -update and read the diff.
func TestTaskToolSpecGolden(t *testing.T) {
	t.Parallel()
	for _, bg := range []struct {
		name string
		on   bool
	}{{"background", true}, {"foreground-only", false}} {
		t.Run(bg.name, func(t *testing.T) {
			t.Parallel()
			reg := NewRegistry(context.Background(), RegistryConfig{
				SessionID: "golden", BackgroundAgents: bg.on,
				Catalog: catalog.New(append(catalog.BuiltinDefinitions(), catalog.Definition{Name: "reviewer", Prompt: "Review."})...),
			})
			t.Cleanup(reg.Shutdown)
			path := filepath.Join("testdata", "tasktools-"+bg.name+".json")
			toolstest.CheckSpecs(t, path, tools.NewSet(TaskTools(reg)...).Specs(), *update)
		})
	}
}
