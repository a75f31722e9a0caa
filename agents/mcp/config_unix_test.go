//go:build unix

package mcp

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A .mcp.json or --mcp-config file that is a FIFO is never read (the read would wait for
// a writer for good): the project's is skipped with a warning, a flag's is an error.
func TestLoadRefusesAFIFO(t *testing.T) {
	t.Parallel()
	project := t.TempDir()
	fifo := filepath.Join(project, ProjectFile)
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	_, warnings, err := Load(LoadInput{ProjectDir: project, Trusted: true, LookupEnv: func(string) (string, bool) { return "", false }})
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], "is not a regular file") {
		t.Errorf("Load with a FIFO .mcp.json: %v, %q", err, warnings)
	}
	if _, _, err := Load(LoadInput{Configs: []string{fifo}}); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Errorf("--mcp-config FIFO: %v", err)
	}
}
