package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stoke-cli/stoke/agents/tools"
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
				Catalog: NewCatalog(append(BuiltinDefinitions(), Definition{Name: "reviewer", Prompt: "Review."})...),
			})
			t.Cleanup(reg.Shutdown)
			specs := tools.NewSet(TaskTools(reg)...).Specs()
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ") // keeps the schemas' key order
			if err := enc.Encode(specs); err != nil {
				t.Fatal(err)
			}
			got := buf.Bytes()
			path := filepath.Join("testdata", "tasktools-"+bg.name+".json")
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
				t.Errorf("task tool specs differ from %s (go test -update rewrites it; review the diff):\n%s", path, got)
			}
		})
	}
}
