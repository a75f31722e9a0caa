package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm/openai/openaitest"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/agents/store"
)

// fanOutFile writes the fan-out scenario to dir and returns its path.
func fanOutFile(t testing.TB, dir string, f scripted.FanOut) string {
	t.Helper()
	path := filepath.Join(dir, "fan-out.yaml")
	if err := os.WriteFile(path, f.YAML(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// stokeEnv is the environment of a stoke run: the test's, with coverage counters kept,
// none of the provider or STOKE_ variables, and the given additions.
func stokeEnv(extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "STOKE_") || strings.HasPrefix(kv, "OPENAI_") || strings.HasPrefix(kv, "ANTHROPIC_")
	})
	return append(append(env, "GOCOVERDIR="+h.coverDir), extra...)
}

// events parses stoke's stream-json output.
func events(t testing.TB, out []byte) []gjson.Result {
	t.Helper()
	var evs []gjson.Result
	for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
		if !gjson.ValidBytes(line) {
			t.Fatalf("not a JSON line: %q", line)
		}
		evs = append(evs, gjson.ParseBytes(line))
	}
	return evs
}

// Issue 12: 300 foreground task calls in one reply never hold more connections to the
// provider than --max-foreground (8 by default): the others wait their turn, in order,
// and every one completes.
func TestForegroundFanOutConnections(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, err := scripted.Open(fanOutFile(t, dir, scripted.FanOut{Agents: 300, Spread: 50 * time.Millisecond, Foreground: true}))
	if err != nil {
		t.Fatal(err)
	}
	srv := openaitest.New(m)
	defer srv.Close()
	cmd := exec.Command(filepath.Join(h.binDir, "stoke"+exeSuffix()), "-p", "fan out", "--provider", "openai",
		"--base-url", srv.URL(), "--model", "mock", "--output-format", "stream-json")
	cmd.Dir, cmd.Env = dir, stokeEnv("STOKE_HOME="+filepath.Join(dir, "home"), "OPENAI_API_KEY=sk-test")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	open, active := srv.Connections()
	streams := srv.Streams()
	t.Logf("300 foreground agents: at most %d requests answered at once, %d connections open, %d in use", streams, open, active)
	// Requests are counted until just before their answer's end is written, so no agent can have
	// finished (and freed its place) while its answer still counts: the cap holds exactly.
	if streams > 8 || streams < 2 {
		t.Errorf("%d requests answered at once, want 2..8 (--max-foreground)", streams)
	}
	// Connections lag by one: the server turns a connection idle, and the client returns it
	// to its pool, a moment after the caller has read the end of the answer, so the next
	// agent's request may arrive (on a new connection) before the last one counts as done.
	if active > 9 || open > 9 {
		t.Errorf("%d connections open and %d in use at once, want at most 8 (and one being returned to the pool)", open, active)
	}
	var started []string
	completed := 0
	for _, ev := range events(t, out) {
		switch ev.Get("subtype").String() {
		case "task_started":
			started = append(started, ev.Get("description").String())
		case "task_notification":
			if ev.Get("status").String() == "completed" {
				completed++
			}
		}
	}
	if completed != 300 {
		t.Errorf("%d agents completed, want 300", completed)
	}
	for i, d := range started {
		if d != fmt.Sprintf("job %d", i) {
			t.Fatalf("agent %d to start was %q: the foreground calls did not start in order", i, d)
		}
	}
}

// Issue 12: 100 background launches in one reply, under the default cap of 4, all run to
// completion, start in the order the model wrote them (the tool results tell the queued
// ones their place), and are stored completed.
func TestHundredBackgroundLaunches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scenario := fanOutFile(t, dir, scripted.FanOut{Agents: 100, Spread: 20 * time.Millisecond})
	home := filepath.Join(dir, "home")
	bin := filepath.Join(h.binDir, "stoke"+exeSuffix())
	out, err := runStoke(bin, stokeEnv(), dir, home, "-p", "fan out", "--scenario", scenario, "--output-format", "stream-json")
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	evs := events(t, out)
	var started []string
	completed := 0
	var results []gjson.Result
	for _, ev := range evs {
		switch {
		case ev.Get("subtype").String() == "task_started":
			started = append(started, ev.Get("description").String())
		case ev.Get("subtype").String() == "task_notification" && ev.Get("status").String() == "completed":
			completed++
		case ev.Get("type").String() == "user" && results == nil && ev.Get("message.content.0.type").String() == "tool_result":
			results = ev.Get("message.content").Array()
		}
	}
	if completed != 100 || len(started) != 100 {
		t.Fatalf("%d started, %d completed, want 100", len(started), completed)
	}
	for i, d := range started {
		if d != fmt.Sprintf("job %d", i) {
			t.Fatalf("agent %d to start was %q, want job %d", i, d, i)
		}
	}
	if len(results) != 100 {
		t.Fatalf("%d tool results", len(results))
	}
	queued := 0
	for i, r := range results {
		// The first four start at once; the others wait in line, unless an agent finished
		// during the launches and moved the line on (on a loaded machine some do).
		content := r.Get("content").String()
		running := strings.Contains(content, "running in the background")
		switch {
		case i < 4 && !running:
			t.Fatalf("tool result %d = %q, want it running (a free slot)", i, content)
		case strings.Contains(content, "queued: position "):
			queued++
		case !running:
			t.Fatalf("tool result %d = %q, want running or queued", i, content)
		}
	}
	if queued == 0 {
		t.Fatal("no launch was queued, want the launches past the cap of 4 to wait in line")
	}
	if n, listed := listedWith(t, dir, home, "completed"); n != 100 {
		t.Fatalf("agents list shows %d completed, want 100:\n%s", n, listed)
	}
}

// listedWith runs `stoke agents list --json` (more args after) in dir and counts the
// agents it lists with status.
func listedWith(t *testing.T, dir, home, status string, args ...string) (int, []byte) {
	t.Helper()
	list := exec.Command(filepath.Join(h.binDir, "stoke"+exeSuffix()), append([]string{"agents", "list", "--json"}, args...)...)
	list.Dir, list.Env = dir, stokeEnv("STOKE_HOME="+home)
	listed, err := list.Output()
	if err != nil {
		t.Fatalf("agents list: %v", err)
	}
	return strings.Count(string(listed), `"status": "`+status+`"`), listed
}

// Issues 12 and 23: queued agents are on disk as queued (stoke agents list); after a
// kill, a resume brings the never-started ones back paused and continuable, their
// instructions kept: nothing the launches promised is dropped.
func TestQueuedAgentsKilledAndResumed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scenario := fanOutFile(t, dir, scripted.FanOut{Agents: 6, Spread: time.Minute})
	home := filepath.Join(dir, "home")
	bin := filepath.Join(h.binDir, "stoke"+exeSuffix())
	const sid = "4d6f7265-0000-4000-8000-000000000012"
	cmd := exec.Command(bin, "-p", "fan out", "--scenario", scenario, "--output-format", "stream-json", "--max-background", "1", "--session-id", sid)
	cmd.Dir, cmd.Env = dir, stokeEnv("STOKE_HOME="+home)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// The parent's tool results (the launches) come once every sidecar is written.
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() && !strings.Contains(sc.Text(), "queued: position 5 in the queue") {
	}
	if n, listed := listedWith(t, dir, home, "queued", "--session", sid); n != 5 {
		t.Fatalf("agents list shows %d queued, want 5:\n%s", n, listed)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	resume := filepath.Join(dir, "resume.yaml")
	if err := os.WriteFile(resume, []byte("rules:\n  - agent: parent\n    when: {last_user_contains: \"what is there\"}\n    reply:\n      tool_calls: [{name: list_agents, input: {}}]\n  - agent: parent\n    reply: {text: \"{{ lastToolResult }}\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runStoke(bin, stokeEnv(), dir, home, "-p", "what is there?", "--scenario", resume, "--resume", sid, "--output-format", "json")
	if err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	agentsJSON := gjson.Get(gjson.ParseBytes(out).Get("result").String(), "agents")
	if n := len(agentsJSON.Array()); n != 6 {
		t.Fatalf("resumed %d agents, want 6: %s", n, out)
	}
	for _, a := range agentsJSON.Array() {
		if a.Get("status").String() != "paused" || !a.Get("continuable").Bool() || a.Get("blocked_reason").String() != "" {
			t.Fatalf("resumed agent %s, want paused and continuable", a.Raw)
		}
	}
	if _, listed := listedWith(t, dir, home, "paused", "--session", sid); strings.Count(string(listed), `"not_started": true`) != 5 {
		t.Fatalf("agents list shows %d never started, want 5:\n%s", strings.Count(string(listed), `"not_started": true`), listed)
	}
}

// Issue 11 item 6 and issue 12 (the small version of BenchmarkFanOut): 200 background
// agents running at once in a process limited to 128 open files all complete, every
// sidecar says so, no write is lost to EMFILE, and the parent reads the 200 notifications
// in a handful of turns.
func TestFanOutUnderFileLimit(t *testing.T) {
	t.Parallel()
	const n = 200
	dir := t.TempDir()
	scenario := fanOutFile(t, dir, scripted.FanOut{Agents: n, Spread: time.Second})
	const sid = "4d6f7265-0000-4000-8000-000000000200"
	cmd := exec.Command("sh", "-c", `ulimit -n 128 && exec "$@"`, "sh", filepath.Join(h.binDir, "stoke"+exeSuffix()),
		"-p", "fan out", "--scenario", scenario, "--output-format", "stream-json", "--max-background", fmt.Sprint(n), "--session-id", sid)
	cmd.Dir, cmd.Env = dir, stokeEnv("STOKE_HOME="+filepath.Join(dir, "home"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
	completed, parentTurns := 0, 0
	for _, ev := range events(t, out) {
		switch {
		case ev.Get("subtype").String() == "task_notification" && ev.Get("status").String() == "completed":
			completed++
		case ev.Get("type").String() == "assistant" && ev.Get("parent_tool_use_id").Type == gjson.Null:
			parentTurns++
		}
	}
	if completed != n {
		t.Fatalf("%d of %d agents completed", completed, n)
	}
	if parentTurns > 10 {
		t.Errorf("the parent took %d model calls, want at most 10", parentTurns)
	}
	sidecars, warnings := agents.ReadSidecars(store.New(filepath.Join(dir, "home"), dir, sid))
	if len(warnings) != 0 || len(sidecars) != n {
		t.Fatalf("%d sidecars, warnings %v", len(sidecars), warnings)
	}
	for _, s := range sidecars {
		if s.Status != "completed" {
			t.Fatalf("the sidecar of %s says %s", s.TaskID, s.Status)
		}
	}
}
