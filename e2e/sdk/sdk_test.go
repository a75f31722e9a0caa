// Package sdk runs the Claude Agent SDK suite: node test files (test/*.test.mjs) that drive
// a freshly built stoke with the official @anthropic-ai/claude-agent-sdk's query(), through
// pathToClaudeCodeExecutable. The SDK is installed from the npm registry into
// node_modules here, pinned by package-lock.json:
//
//	make sdk-test                         install (npm ci, once per lock change) and run the suite
//	go test ./e2e/sdk -run TestSDK/nonce  one file, once installed
//
// Without node or the installed SDK the test is skipped, saying how to install it; make
// test installs it first, so the suite always runs there.
package sdk

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

// stokeBin is the binary TestMain built; read-only afterwards.
var stokeBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "stoke-sdk-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdk:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	stokeBin = filepath.Join(dir, "stoke")
	// make sdk-test builds the binary before go test starts and names it in SDK_STOKE_BINARY.
	if err := testbin.Stoke("SDK_STOKE_BINARY", stokeBin, testbin.Kind{Race: raceEnabled}); err != nil {
		fmt.Fprintln(os.Stderr, "sdk:", err)
		return 1
	}
	return m.Run()
}

// TestSDK runs each node test file as a subtest, in parallel; each file's tests run one
// after the other.
func TestSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the Claude Agent SDK suite needs node 20 or later")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "@anthropic-ai", "claude-agent-sdk", "package.json")); err != nil {
		t.Skip("the Claude Agent SDK is not installed here: run `make sdk-test` (npm ci in e2e/sdk)")
	}
	scenarios, err := filepath.Abs(filepath.Join("..", "..", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("test", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in test/: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".test.mjs")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", file)
			cmd.Env = append(os.Environ(), "STOKE_BIN="+stokeBin, "STOKE_SCENARIOS="+scenarios, "NO_COLOR=1")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				t.Errorf("node --test %s: %v\n%s", file, err, out.String())
				return
			}
			t.Logf("node --test %s\n%s", file, out.String())
		})
	}
}
