package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWithoutOutsideScripts(t *testing.T) {
	t.Parallel()
	project, elsewhere := t.TempDir(), t.TempDir()
	for _, f := range []string{filepath.Join(project, "scripts", "ok.sh"), filepath.Join(elsewhere, "evil.sh")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"scripts/evil.sh": filepath.Join(elsewhere, "evil.sh"),
		"scripts/in.sh":   "ok.sh",
		"outdir":          elsewhere,
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(project, name)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := Config{
		SubagentStop: {
			{Command: "./scripts/ok.sh"},
			{Command: "./scripts/evil.sh"},
			{Command: "bash scripts/evil.sh --flag"},
			{Command: "scripts/in.sh"},
			{Command: `"$CLAUDE_PROJECT_DIR"/scripts/evil.sh`},
			{Command: "outdir/evil.sh"},
			{Command: "/usr/bin/true"},
			{Command: "echo done > scripts/log"},
			{Command: "./missing.sh"},
		},
		Stop: {{Command: "./scripts/evil.sh"}},
	}
	got, warnings := WithoutOutsideScripts(cfg, project)
	var kept []string
	for _, h := range got[SubagentStop] {
		kept = append(kept, h.Command)
	}
	want := []string{"./scripts/ok.sh", "scripts/in.sh", "/usr/bin/true", "echo done > scripts/log", "./missing.sh"}
	if strings.Join(kept, "|") != strings.Join(want, "|") {
		t.Errorf("kept %q\nwant %q", kept, want)
	}
	if len(got[Stop]) != 0 {
		t.Errorf("Stop kept %v", got[Stop])
	}
	if len(warnings) != 5 {
		t.Fatalf("%d warnings, want 5: %q", len(warnings), warnings)
	}
	if !strings.Contains(warnings[0], "outside the project") || !strings.Contains(warnings[0], "evil.sh") {
		t.Errorf("warning = %q", warnings[0])
	}
}
