package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// maxInitAllocs bounds the heap allocations of each of stoke's own packages at
// initialisation. Every stoke start pays for them, whatever the command: a regexp,
// a schema or a table a package needs only for some runs is built on first use
// (sync.OnceValue), not in a package variable. A few allocations (errors.New
// sentinels) are fine.
const maxInitAllocs = 8

// initLine is one line of GODEBUG=inittrace=1:
// "init PKG @T ms, D ms clock, B bytes, N allocs".
var initLine = regexp.MustCompile(`^init (\S+) @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs$`)

// TestInitDoesNoEagerWork runs `stoke version` with the runtime's init trace and checks
// that none of stoke's packages does more than a sentinel's worth of work at start-up.
func TestInitDoesNoEagerWork(t *testing.T) {
	cmd := exec.Command(filepath.Join(h.binDir, "stoke"+exeSuffix()), "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "GOCOVERDIR="+h.coverDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("stoke version: %v\n%s", err, stderr.String())
	}
	seen := 0
	for line := range strings.Lines(stderr.String()) {
		m := initLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || !strings.HasPrefix(m[1], "github.com/stoke-cli/stoke") {
			continue
		}
		seen++
		allocs, _ := strconv.Atoi(m[3])
		if allocs > maxInitAllocs {
			t.Errorf("package %s allocates %d times (%s bytes) at init, want at most %d: build what it needs on first use", m[1], allocs, m[2], maxInitAllocs)
		}
	}
	if seen == 0 {
		t.Fatalf("no init trace of stoke's packages on stderr:\n%s", stderr.String())
	}
}
