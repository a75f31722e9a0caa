package hooks

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// quick bounds how long a hook that is killed may take to be reported; the hooks in
// these tests would otherwise run for 30s.
const quick = 10 * time.Second

func TestRunTimeoutKillsProcessGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := &Runner{Dir: dir}
	slow := Hook{Command: `echo $$ > shell.pid; sleep 30 & echo $! > child.pid; wait`, Timeout: 300 * time.Millisecond}
	start := time.Now()
	out, err := r.Run(t.Context(), SubagentStop, []Hook{slow, hook(`exit 0`)}, Input{})
	if err != nil {
		t.Fatal(err)
	}
	if elapsed := time.Since(start); elapsed > quick {
		t.Errorf("Run took %s; a timed-out hook must be killed at once", elapsed)
	}
	if out.Block || len(out.Failures) != 1 || !strings.Contains(out.Failures[0], "timed out after 300ms and was killed") {
		t.Errorf("Outcome = %+v; want one timeout failure", out)
	}
	for _, f := range []string{"shell.pid", "child.pid"} {
		assertDead(t, filepath.Join(dir, f))
	}
}

func TestRunContextCancel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "started")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Cancel once the hook has started (it opens the fifo for writing).
	opened := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo)
		if err == nil {
			_, err = bufio.NewReader(f).ReadString('\n')
			f.Close()
		}
		cancel()
		opened <- err
	}()
	r := &Runner{Dir: dir}
	// Both hooks run at once: each records its child's pid in its own file, written whole
	// (rename) so that a hook killed half-way leaves no empty file behind.
	slow := hook(`sleep 30 & echo $! > child.$$.tmp && mv child.$$.tmp child.$$.pid; echo up > started; wait`)
	start := time.Now()
	_, err := r.Run(ctx, SubagentStop, []Hook{slow, slow}, Input{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run error = %v; want context.Canceled", err)
	}
	if elapsed := time.Since(start); elapsed > quick {
		t.Errorf("Run took %s after cancel", elapsed)
	}
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	pids, _ := filepath.Glob(filepath.Join(dir, "child.*.pid"))
	if len(pids) == 0 {
		t.Fatal("no hook recorded its child's pid")
	}
	for _, p := range pids {
		assertDead(t, p)
	}

	// A context that has already ended runs nothing.
	_, err = r.Run(ctx, Stop, []Hook{hook(`touch ran`)}, Input{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run on a cancelled context: error = %v; want context.Canceled", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
		t.Error("a hook ran on a cancelled context")
	}
}

// assertDead fails unless the process whose id is in pidFile exits within quick. A
// killed process is not gone at once: SIGKILL is delivered asynchronously, so this
// waits for the exit on a pidfd (readable once the process has exited; a zombie
// waiting for its new parent counts as exited).
func assertDead(t *testing.T, pidFile string) {
	t.Helper()
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the hook did not record a pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	switch {
	case errors.Is(err, unix.ESRCH):
		return // gone and reaped
	case errors.Is(err, unix.ENOSYS):
		t.Skipf("no pidfd on this system: cannot check that process %d exited", pid)
	case err != nil:
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, int(quick/time.Millisecond))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("poll pidfd of %d: %v", pid, err)
		}
		if n == 0 {
			t.Errorf("process %d (%s) still runs %s after the hook was killed", pid, pidFile, quick)
		}
		return
	}
}
