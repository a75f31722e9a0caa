// Package acp runs the ACP suite: node test files (test/*.test.mjs) that drive a freshly
// built `stoke --acp` through the official Agent Client Protocol TypeScript client
// (@agentclientprotocol/sdk) on the scripted model, and check every message stoke sends
// against the ACP JSON schema that package ships (with ajv). The packages are installed
// from the npm registry into node_modules here, pinned by package-lock.json:
//
//	make acp-test                               install (npm ci, once per lock change) and run the suite
//	go test ./e2e/acp -run TestACP/files/nonce  one file, once installed
//
// Without node or the installed packages the test is skipped, saying how to install them;
// make test installs them first, so the suite always runs there.
package acp

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/e2e/internal/testbin"
)

// stokeBin is the binary TestMain built (or make did: ACP_STOKE_BINARY). Read-only
// afterwards.
var stokeBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "stoke-acp-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "acp:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	stokeBin = filepath.Join(dir, "stoke")
	if err := testbin.Stoke("ACP_STOKE_BINARY", stokeBin, testbin.Kind{Race: raceEnabled}); err != nil {
		fmt.Fprintln(os.Stderr, "acp:", err)
		return 1
	}
	return m.Run()
}

// TestACP runs each node test file as a subtest of files, in parallel (each file's tests
// run one after the other).
func TestACP(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the ACP suite needs node 20 or later")
	}
	for _, pkg := range []string{"@agentclientprotocol/sdk", "ajv"} {
		if _, err := os.Stat(filepath.Join("node_modules", pkg, "package.json")); err != nil {
			t.Skipf("%s is not installed here: run `make acp-test` (npm ci in e2e/acp)", pkg)
		}
	}
	scenarios, err := filepath.Abs(filepath.Join("..", "..", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("test", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in test/: %v", err)
	}
	env := append(os.Environ(), "STOKE_BIN="+stokeBin, "STOKE_SCENARIOS="+scenarios, "NO_COLOR=1")
	t.Run("files", func(t *testing.T) {
		for _, file := range files {
			name := strings.TrimSuffix(filepath.Base(file), ".test.mjs")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runNode(t, node, env, "--test", "--test-reporter=spec", "--test-timeout=120000", file)
			})
		}
	})
}

// runNode runs node with args and fails t with its output when it fails.
func runNode(t *testing.T, node string, env []string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Env = env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("node %s: %v\n%s", strings.Join(args, " "), err, out.String())
		return
	}
	t.Logf("node %s\n%s", strings.Join(args, " "), out.String())
}
