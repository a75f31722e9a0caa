package fsx

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"testing"
)

// entries returns the names in dir, sorted.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// An Output appears at its path, with its mode, only when committed; until then, and
// after Abort, the directory holds nothing of it (on Linux not even a temporary name).
func TestOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "out.tar.gz")
	o, err := CreateOutput(path, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Write([]byte("whole")); err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" {
		if got := entries(t, dir); len(got) != 0 {
			t.Errorf("before Commit the directory holds %v", got)
		}
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(path); err != nil || string(data) != "whole" {
		t.Errorf("committed file = %q, %v", data, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, %v", fi.Mode(), err)
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"out.tar.gz"}) {
		t.Errorf("after Commit the directory holds %v", got)
	}
	o, err = CreateOutput(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = o.Write([]byte("partial"))
	o.Abort()
	if data, _ := os.ReadFile(path); string(data) != "whole" {
		t.Errorf("an aborted output replaced the file: %q", data)
	}
	if got := entries(t, dir); !slices.Equal(got, []string{"out.tar.gz"}) {
		t.Errorf("after Abort the directory holds %v", got)
	}
}

// The next output to a path removes the temporary files of outputs to it whose process
// is gone, and keeps those of a process that runs, and other files.
func TestOutputRemovesStaleTemporaries(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no way to tell a dead process here")
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skipf("cannot start a process: %v", err)
	}
	dead := strconv.Itoa(cmd.Process.Pid) // reaped: no process has it now
	dir := t.TempDir()
	path := filepath.Join(dir, "s.tar.gz")
	for _, name := range []string{
		".s.tar.gz.tmp-" + dead + "-0a1b2c",   // a killed export: removed
		".s.tar.gz.tmp-1-0a1b2c",              // pid 1 runs: kept
		".s.tar.gz.tmp-notapid",               // not ours: kept
		".other.tar.gz.tmp-" + dead + "-0a1b", // another path's: kept
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	o, err := CreateOutput(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	want := []string{".other.tar.gz.tmp-" + dead + "-0a1b", ".s.tar.gz.tmp-1-0a1b2c", ".s.tar.gz.tmp-notapid", "s.tar.gz"}
	if got := entries(t, dir); !slices.Equal(got, want) {
		t.Errorf("directory = %v, want %v", got, want)
	}
}
