package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
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

// TestSandboxHelperStartsEarly starts stoke as the sandbox's helper (without the
// descriptors stoke gives it, so that it only says it is not to be started by hand) and
// checks that it ran before the heavy packages were initialised: a sandboxed command
// pays for a few of stoke's package initialisations, not for the provider SDKs'.
func TestSandboxHelperStartsEarly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sandbox's helper is Linux's")
	}
	cmd := exec.Command(filepath.Join(h.binDir, "stoke"+exeSuffix()), "__stoke-sandbox-helper-v1")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1", "GOCOVERDIR="+h.coverDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "started by stoke itself") {
		t.Fatalf("helper by hand: %v, want exit 2 and the refusal\n%s", err, stderr.String())
	}
	inits := 0
	for line := range strings.Lines(stderr.String()) {
		m := initLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		inits++
		switch m[1] { // (small packages of these modules, which need none of this, may come first)
		case "github.com/openai/openai-go/v3", "github.com/anthropics/anthropic-sdk-go/v2",
			"github.com/modelcontextprotocol/go-sdk/mcp", "go.opentelemetry.io/otel/sdk/trace", "net/http":
			t.Errorf("%s was initialised before the helper ran", m[1])
		}
	}
	if inits == 0 {
		t.Fatalf("no init trace on stderr:\n%s", stderr.String())
	}
}
