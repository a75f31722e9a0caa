//go:build unix

package cmd

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A settings file that is a FIFO is refused with a usage error, never read (the read
// would wait for a writer for good).
func TestReadSettingsRefusesAFIFO(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "settings.yaml")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := readSettings(path, settings())
	var u *usageError
	if !errors.As(err, &u) || !strings.Contains(err.Error(), "it is not a regular file") {
		t.Errorf("readSettings(FIFO) = %v", err)
	}
}
