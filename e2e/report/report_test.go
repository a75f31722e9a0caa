// Package report opens stoke's reports in a real browser (issue 29): the built stoke runs
// three sessions — the nonce demo, 200 background agents, and one whose every text tries
// to run in a page — and writes their reports; node's test runner (test/*.test.mjs) then
// opens each HTML report in Debian's chromium through playwright-core, offline, and
// renders each Markdown report's gantt with Mermaid, both installed from the npm registry
// into node_modules here at the versions package-lock.json pins:
//
//	make report-deps                   npm ci here (once per lock change); make test-deps installs chromium
//	go test ./e2e/report               once installed
//
// Screenshots are kept as test artifacts (go test -artifacts; make test keeps them under
// bin/test/artifacts). Without node, the packages or chromium the test is skipped, saying
// how to install them; make test installs them first.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/e2e/internal/testbin"
)

// stokeBin is the binary TestMain placed; read-only afterwards.
var stokeBin string

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "stoke-report-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	stokeBin = filepath.Join(dir, "stoke")
	// make test builds the e2e binary before go test starts (E2E_STOKE_BINARY).
	if err := testbin.Stoke("E2E_STOKE_BINARY", stokeBin, testbin.Kind{Race: raceEnabled, Cover: true}); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		return 1
	}
	return m.Run()
}

// browserCase is one report the browser opens, with what it must find there
// (report.test.mjs reads it).
type browserCase struct {
	Name          string         `json:"name"`
	HTML          string         `json:"html"`
	Markdown      string         `json:"markdown,omitempty"`
	Agents        int            `json:"agents"`
	ParentTurns   int            `json:"parentTurns"`
	Continuations map[string]int `json:"continuations"`
	Notifications int            `json:"notifications"`
	FirstTool     string         `json:"firstTool"`
	XSS           []string       `json:"xss,omitempty"`
}

// chromium finds the browser: STOKE_CHROMIUM, or Debian's.
func chromium() string {
	if p := os.Getenv("STOKE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func TestBrowser(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the browser test needs node 20 or later")
	}
	for _, pkg := range []string{"playwright-core", "mermaid"} {
		if _, err := os.Stat(filepath.Join("node_modules", pkg, "package.json")); err != nil {
			t.Skipf("%s is not installed here: run `make report-deps` (npm ci in e2e/report)", pkg)
		}
	}
	browser := chromium()
	if browser == "" {
		t.Skip("chromium is not installed: `make test-deps` installs Debian's chromium when run as root")
	}
	work := t.TempDir()
	home := filepath.Join(work, "home")
	nonce := fmt.Sprintf("NONCE-%X", time.Now().UnixNano()&0xffffff)
	scenarios, err := filepath.Abs(filepath.Join("..", "..", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	xss, err := filepath.Abs(filepath.Join("testdata", "xss.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fanDir := filepath.Join(work, "fan-scenario")
	if err := os.MkdirAll(fanDir, 0o755); err != nil {
		t.Fatal(err)
	}
	fan := filepath.Join(fanDir, "fan-out.yaml")
	if err := os.WriteFile(fan, scripted.FanOut{Agents: 200, Spread: 200 * time.Millisecond}.YAML(), 0o600); err != nil {
		t.Fatal(err)
	}

	cases := []browserCase{
		session(t, work, home, "nonce", []string{"-p", "Keep " + nonce + " safe with a background agent", "--scenario", filepath.Join(scenarios, "nonce-memory.yaml")},
			browserCase{Agents: 1, Continuations: map[string]int{"fresh": 1, "resident": 1}, Notifications: 2, FirstTool: "task"}),
		session(t, work, home, "fanout", []string{"-p", "fan out", "--scenario", fan, "--max-background", "200"},
			browserCase{Agents: 200, Continuations: map[string]int{"fresh": 200}, Notifications: 200, FirstTool: "task"}),
		session(t, work, home, "xss", []string{"-p", `Go </script><script>window.pwned=8</script>`, "--scenario", xss},
			browserCase{Agents: 1, Continuations: map[string]int{"fresh": 1}, Notifications: 1, FirstTool: "task",
				XSS: []string{`Go </script><script>window.pwned=8</script>`, `"><img src=x onerror="window.pwned=2"> probe`,
					`</textarea></pre></details><script>window.pwned=6</script><img src=x onerror="window.pwned=7">`}}),
	}
	for _, c := range cases {
		st, err := os.Stat(c.HTML)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: the HTML report is %d bytes", c.Name, st.Size())
	}
	spec := filepath.Join(work, "cases.json")
	data, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, data, 0o600); err != nil {
		t.Fatal(err)
	}
	artifacts := t.ArtifactDir()
	cmd := exec.CommandContext(t.Context(), node, "--test", "--test-reporter=spec", "--test-timeout=120000", "test/")
	cmd.Env = append(os.Environ(), "STOKE_REPORT_CASES="+spec, "STOKE_CHROMIUM="+browser, "STOKE_REPORT_ARTIFACTS="+artifacts, "NO_COLOR=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("node --test test/\n%s", out.String())
	if err != nil {
		t.Fatalf("the browser test failed: %v", err)
	}
	shots, _ := filepath.Glob(filepath.Join(artifacts, "*.png"))
	if len(shots) == 0 {
		t.Fatal("no screenshot was kept")
	}
	t.Logf("screenshots: %s", strings.Join(shots, " "))
}

// session runs stoke with args in a directory of its own under work (a session of its
// own there), with --report and then stoke sessions report --format markdown and json,
// and returns c completed with the reports' paths and the parent turns the JSON counts.
func session(t *testing.T, work, home, name string, args []string, c browserCase) browserCase {
	t.Helper()
	dir := filepath.Join(work, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	c.Name, c.HTML, c.Markdown = name, filepath.Join(dir, "report.html"), filepath.Join(dir, "report.md")
	stoke(t, dir, home, append(args, "--report", c.HTML)...)
	stoke(t, dir, home, "sessions", "report", "--format", "markdown", "-o", c.Markdown)
	var model struct {
		Lanes []struct {
			Kind  string `json:"kind"`
			Turns []struct {
				Continuation string `json:"continuation"`
			} `json:"turns"`
		} `json:"lanes"`
		Agents []json.RawMessage `json:"agents"`
	}
	if err := json.Unmarshal(stoke(t, dir, home, "sessions", "report", "--format", "json", "-o", "-"), &model); err != nil {
		t.Fatal(err)
	}
	if len(model.Agents) != c.Agents || len(model.Lanes) != c.Agents+1 || model.Lanes[0].Kind != "parent" {
		t.Fatalf("%s: the report has %d agents and %d lanes, want %d and %d", name, len(model.Agents), len(model.Lanes), c.Agents, c.Agents+1)
	}
	c.ParentTurns = len(model.Lanes[0].Turns)
	kinds := map[string]int{}
	for _, l := range model.Lanes[1:] {
		for _, turn := range l.Turns {
			kinds[turn.Continuation]++
		}
	}
	for kind, n := range c.Continuations {
		if kinds[kind] != n {
			t.Fatalf("%s: %d %s turns in the report, want %d (%v)", name, kinds[kind], kind, n, kinds)
		}
	}
	return c
}

// stoke runs the binary in dir and returns its stdout; it fails t on an error or on
// anything on stderr.
func stoke(t *testing.T, dir, home string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), stokeBin, args...)
	cmd.Dir = dir
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "STOKE_") || strings.HasPrefix(kv, "OPENAI_") || strings.HasPrefix(kv, "ANTHROPIC_")
	}), "STOKE_HOME="+home, "GOCOVERDIR="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("stoke %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}
