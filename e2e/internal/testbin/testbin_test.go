package testbin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A prebuilt binary is used only when it is stoke: this test's own binary is refused,
// by name of the variable, before anything is linked.
func TestStokeRefusesAnotherProgram(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	t.Setenv("TESTBIN_STOKE", self)
	out := filepath.Join(t.TempDir(), "stoke")
	err = Stoke("TESTBIN_STOKE", out, Kind{})
	if err == nil || !strings.Contains(err.Error(), "TESTBIN_STOKE=") || !strings.Contains(err.Error(), "not a stoke binary") {
		t.Fatalf("Stoke = %v, want an error naming TESTBIN_STOKE and saying it is not stoke", err)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s was placed although the binary was refused", out)
	}
}
