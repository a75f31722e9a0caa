//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stoke-cli/stoke/agents/store"
)

// SIGTERM while a resume loads a long session ends the run at once with exit 143, one
// line on stderr and nothing on stdout: the load honours the signal, so no run starts
// (no system/init line) on a history it was told to abandon. The signal is sent as soon
// as stoke opens the transcript (inotify tells), so it lands during the load.
func TestSIGTERMDuringLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := filepath.Join(t.TempDir(), "home") // STOKE_HOME lies outside the working directory, as stoke requires
	scenario := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scenario, []byte("rules:\n  - agent: parent\n    reply: {text: \"hi\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(h.binDir, "stoke"+exeSuffix())
	env := slices.Clip(append(os.Environ(), "GOCOVERDIR="+h.coverDir))
	const sid = "6e9c4b7a-5d3f-4e21-9a8b-7c6d5e4f3a81"
	if out, err := runStoke(bin, env, dir, home, "-p", "hello", "--scenario", scenario, "--session-id", sid); err != nil {
		t.Fatalf("first run: %v\n%s", err, out)
	}
	transcript := store.New(home, dir, sid).ParentTranscript()
	growTranscript(t, transcript, 100<<20)

	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, transcript, unix.IN_OPEN); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", "again", "--scenario", scenario, "--resume", sid, "--output-format", "stream-json")
	cmd.Dir, cmd.Env = dir, append(env, "STOKE_HOME="+home)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, unix.SizeofInotifyEvent+unix.PathMax+1)
	if _, err := unix.Read(fd, buf); err != nil { // blocks until the transcript is opened
		t.Fatal(err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 143 {
		t.Fatalf("SIGTERM during the load: %v, want exit 143\nstderr: %s", err, stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("the run started after the signal: stdout holds %q", firstLine(stdout.String()))
	}
	if got := strings.TrimSpace(stderr.String()); strings.Count(got, "\n") != 0 || !strings.Contains(got, "interrupted by terminated") {
		t.Errorf("stderr = %q, want one line saying the run was interrupted", got)
	}
}

// growTranscript appends chat messages to the transcript at path until it holds about
// size bytes.
func growTranscript(t *testing.T, path string, size int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	text := strings.Repeat("a long history ", 700)
	var n int64
	for i := 0; n < size; i++ {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		k, _ := fmt.Fprintf(w, `{"type":"message","ts":"2026-12-01T00:00:00Z","turn":1,"message":{"role":%q,"content":[{"type":"text","text":%q}]}}`+"\n", role, text)
		n += int64(k)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
