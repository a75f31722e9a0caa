// Package sdk runs the SDK suite: node test files (test/*.test.mjs) that drive a freshly
// built stoke through two SDKs nobody here wrote, the official
// @anthropic-ai/claude-agent-sdk (query() with pathToClaudeCodeExecutable) and Qwen Code's
// @qwen-code/sdk (query() with pathToQwenExecutable), then check every message they
// yielded against the SDKs' TypeScript declarations with the pinned typescript compiler.
// The packages are installed from the npm registry into node_modules here, pinned by
// package-lock.json:
//
//	make sdk-test                               install (npm ci, once per lock change) and run the suite
//	go test ./e2e/sdk -run TestSDK/files/nonce  one file, once installed
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
	"sync/atomic"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm/anthropic/anthropictest"
	"github.com/stoke-cli/stoke/agents/llm/openai/openaitest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/e2e/internal/testbin"
)

// stokeBin is the binary TestMain built; the mock model endpoints TestMain serves (an
// OpenAI-compatible one, ending in /v1, and an Anthropic one), backed by the scripted
// model of scenarios/sdk-media.yaml. Read-only afterwards.
var (
	stokeBin                string
	openaiURL, anthropicURL string
)

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
	s, err := scripted.Load(filepath.Join("..", "..", "scenarios", "sdk-media.yaml"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdk:", err)
		return 1
	}
	oa := openaitest.New(scripted.New(s))
	defer oa.Close()
	an := anthropictest.New(scripted.New(s))
	defer an.Close()
	openaiURL, anthropicURL = oa.URL(), an.URL()
	return m.Run()
}

// TestSDK runs each node test file as a subtest of files, in parallel (each file's tests
// run one after the other), then typecheck: every message the SDKs yielded in those
// files, checked against the SDKs' own TypeScript declarations (typecheck.mjs).
func TestSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the SDK suite needs node 20 or later")
	}
	for _, pkg := range []string{"@anthropic-ai/claude-agent-sdk", "@qwen-code/sdk", "typescript"} {
		if _, err := os.Stat(filepath.Join("node_modules", pkg, "package.json")); err != nil {
			t.Skipf("%s is not installed here: run `make sdk-test` (npm ci in e2e/sdk)", pkg)
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
	corpus := t.TempDir()
	env := append(os.Environ(), "STOKE_BIN="+stokeBin, "STOKE_SCENARIOS="+scenarios, "STOKE_SDK_CORPUS="+corpus, "NO_COLOR=1",
		"STOKE_MOCK_OPENAI_URL="+openaiURL, "STOKE_MOCK_ANTHROPIC_URL="+anthropicURL)
	var ran atomic.Int32
	t.Run("files", func(t *testing.T) {
		for _, file := range files {
			name := strings.TrimSuffix(filepath.Base(file), ".test.mjs")
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ran.Add(1)
				runNode(t, node, env, "--test", "--test-reporter=spec", "--test-timeout=60000", file)
			})
		}
	})
	t.Run("typecheck", func(t *testing.T) {
		if int(ran.Load()) < len(files) {
			t.Skip("the corpus check needs every test file to have run (no -run filter on TestSDK/files)")
		}
		runNode(t, node, env, "typecheck.mjs", corpus)
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
