//go:build linux

package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/stoke-cli/stoke/agents/store"
)

// A `sessions export` killed with SIGKILL while it writes leaves no partial archive
// (the archive is written unnamed and linked in at the end), and the next export to the
// same file removes what an export killed on a system without unnamed files left
// (.NAME.tmp-PID-RANDOM, its process gone): afterwards the directory holds the archive
// and nothing else.
func TestKilledExportLeavesNoDebris(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := filepath.Join(t.TempDir(), "home") // STOKE_HOME lies outside the working directory, as stoke requires
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scenario, []byte("rules:\n  - agent: parent\n    reply: {text: \"hi\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(h.binDir, "stoke"+exeSuffix())
	env := slices.Clip(append(os.Environ(), "GOCOVERDIR="+h.coverDir))
	const sid = "7e9c4b7a-5d3f-4e21-9a8b-7c6d5e4f3a91"
	if b, err := runStoke(bin, env, dir, home, "-p", "hello", "--scenario", scenario, "--session-id", sid); err != nil {
		t.Fatalf("run: %v\n%s", err, b)
	}
	transcript := store.New(home, dir, sid).ParentTranscript()
	growTranscript(t, transcript, 64<<20) // an export that takes a while
	archive := filepath.Join(out, "s.tar.gz")

	// Killed while it reads the transcript into the archive.
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, transcript, unix.IN_ACCESS); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "sessions", "export", sid, "-o", archive)
	cmd.Dir, cmd.Env = dir, append(env, "STOKE_HOME="+home)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, unix.SizeofInotifyEvent+unix.PathMax+1)
	if _, err := unix.Read(fd, buf); err != nil { // blocks until the export reads the transcript
		t.Fatal(err)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	var exit *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &exit) {
		t.Fatalf("the export was not killed: %v", err)
	}
	if got := entries(t, out); len(got) != 0 {
		t.Errorf("a killed export left %v", got)
	}

	// What an export killed elsewhere leaves: a temporary file of a process that is gone.
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(out, ".s.tar.gz.tmp-"+strconv.Itoa(gone.Process.Pid)+"-5eed")
	if err := os.WriteFile(stale, []byte("a partial archive"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := runStoke(bin, env, dir, home, "sessions", "export", sid, "-o", archive); err != nil {
		t.Fatalf("export: %v\n%s", err, b)
	}
	if got := entries(t, out); !slices.Equal(got, []string{"s.tar.gz"}) {
		t.Errorf("after the next export the directory holds %v, want the archive alone", got)
	}
}

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
