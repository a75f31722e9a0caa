//go:build unix

package store

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// DeadWriter names the recorded writer only once its process is gone: not while it
// lives, not for this process, not when nothing was recorded.
func TestDeadWriter(t *testing.T) {
	t.Parallel()
	live := exec.Command("sleep", "60")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Process.Kill(); _ = live.Wait() })
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pid  int // 0: no lock file
		want int
	}{
		{"no lock file", 0, 0},
		{"this process", os.Getpid(), 0},
		{"a live process", live.Process.Pid, 0},
		{"a process that ended", gone.ProcessState.Pid(), gone.ProcessState.Pid()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(t.TempDir(), "/work/repo", lockID)
			if tc.pid != 0 {
				if err := os.MkdirAll(s.String(), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(s.String(), lockFile), []byte(strconv.Itoa(tc.pid)+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if got := s.DeadWriter(); got != tc.want {
				t.Errorf("DeadWriter() = %d, want %d", got, tc.want)
			}
		})
	}
}
