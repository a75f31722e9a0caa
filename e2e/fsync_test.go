package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOneTurnSyncsOnceBeforeResult runs a one-turn session under strace and checks what
// it syncs: the parent's transcript (its messages and its turn record) and the new
// session directory, both before the result line is written, and nothing else —
// session.json is not synced (it is rebuilt from the transcript, docs/load.md).
func TestOneTurnSyncsOnceBeforeResult(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("strace is not installed")
	}
	log := filepath.Join(t.TempDir(), "strace.log")
	cmd := exec.Command(strace, "-f", "-qq", "-e", "trace=fsync,fdatasync,write", "-e", "signal=none", "-s", "32", "-o", log,
		filepath.Join(h.binDir, "stoke"+exeSuffix()), "-p", "hi there", "--scenario", filepath.Join(h.scenarios, "hello.yaml"), "--output-format", "stream-json")
	cmd.Env = stokeEnv("STOKE_HOME=" + t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here: %v\n%s", err, out)
	}
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	syncs, before := 0, -1
	for line := range strings.Lines(string(data)) {
		switch {
		case strings.Contains(line, "fsync(") || strings.Contains(line, "fdatasync("):
			syncs++
		case strings.Contains(line, `write(1, "{\"type\":\"result\"`):
			before = syncs
		}
	}
	if before < 0 {
		t.Fatalf("no result line in the trace:\n%s", data)
	}
	if syncs != 2 || before != 2 {
		t.Fatalf("%d fsyncs, %d of them before the result line; want 2, both before it:\n%s", syncs, before, data)
	}
}
