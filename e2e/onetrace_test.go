package e2e

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/stoke-cli/stoke/agents/trace/otlptest"
)

// oneTraceScenario: the parent runs a foreground agent (which calls a tool), then
// launches a background agent with a nonce; when its notification comes, the parent
// continues it with send_message and, at the next notification, answers with the nonce
// the agent kept. A resumed run answers "again".
const oneTraceScenario = `name: one-trace
model: scripted-trace
rules:
  - agent: parent
    when: {last_user_contains: "Once again"}
    reply: {text: "again"}
  - agent: parent
    when: {last_user_contains: "<turn>2</turn>"}
    reply:
      text: "The agent remembered the nonce: {{ lastMatch ` + "`<result>(NONCE-[A-Z0-9]+)`" + ` }}"
  - agent: parent
    when: {last_user_contains: "<turn>1</turn>"}
    reply:
      tool_calls:
        - name: send_message
          input:
            task_id: "{{ lastMatch ` + "`<task-id>([^<]+)</task-id>`" + ` }}"
            message: "What was the nonce? Answer with the nonce only."
  - agent: parent
    when: {last_user_matches: "continued on its resident runtime|revived from its transcript"}
    reply: {text: "Asked the agent for the nonce."}
  - agent: parent
    when: {last_user_contains: "running in the background"}
    reply: {text: "Launched the agent."}
  - agent: parent
    when: {step: 2}
    reply:
      tool_calls:
        - name: task
          input:
            description: "Keep a nonce"
            prompt: "Remember this nonce for later: {{ match ` + "`NONCE-[A-Z0-9]+`" + ` }}. Reply 'Stored.'"
            subagent_type: general-purpose
            run_in_background: true
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - name: task
          input:
            description: "Count the files"
            prompt: "Count the files here."
            subagent_type: general-purpose
  - agent: general-purpose
    when: {last_user_contains: "What was the nonce"}
    reply: {text: "{{ match ` + "`NONCE-[A-Z0-9]+`" + ` }}"}
  - agent: general-purpose
    when: {step: 1, last_user_contains: "Count the files"}
    reply:
      tool_calls:
        - {name: glob, input: {pattern: "*"}}
  - agent: general-purpose
    when: {step: 2, history_matches: "Count the files"}
    reply: {text: "Counted."}
  - agent: general-purpose
    when: {step: 1}
    reply: {text: "Stored."}
`

// collector is an OTLP/HTTP receiver that keeps the trace requests it is sent; take
// decodes them with the official proto types.
type collector struct {
	mu     sync.Mutex
	bodies [][2]string // content type, body
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/traces" {
		return // metrics
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodies = append(c.bodies, [2]string{r.Header.Get("Content-Type"), string(body)})
}

// take returns the spans received so far and forgets them.
func (c *collector) take(t *testing.T) []*tracepb.Span {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var spans []*tracepb.Span
	for _, b := range c.bodies {
		spans = append(spans, otlptest.Spans(otlptest.DecodeTraces(t, []byte(b[1]), b[0]))...)
	}
	c.bodies = nil
	return spans
}

// TestRunIsOneTrace: a run with a foreground agent, a background agent continued once
// and the parent's notification turns exports one trace (OTLP/HTTP, decoded with the
// official types): TRACEPARENT's, whose span is the parent of the run's root; every other
// span's parent is in it. The foreground turn hangs under its task call; the background
// agent's turns under the run's root, linked to the task and send_message calls that
// asked for them. A resumed run is a trace of its own whose root links to this one's.
func TestRunIsOneTrace(t *testing.T) {
	t.Parallel()
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	dir, home := t.TempDir(), t.TempDir() // STOKE_HOME outside the working directory, as stoke requires
	scenario := filepath.Join(dir, "one-trace.yaml")
	if err := os.WriteFile(scenario, []byte(oneTraceScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	const pipelineTrace, pipelineSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	run := func(env []string, args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(h.binDir, "stoke"+exeSuffix()), append(args, "--scenario", scenario, "--output-format", "json")...)
		cmd.Dir = dir
		cmd.Env = append(hostEnvWithout("OTEL_", "STOKE_", "OPENAI_", "ANTHROPIC_", "TRACEPARENT", "TRACESTATE"),
			append(env, "GOCOVERDIR="+h.coverDir, "HOME="+filepath.Join(dir, "home"), "STOKE_HOME="+filepath.Join(home, "stoke-home"),
				"OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("stoke %v: %v\nstdout: %s\nstderr: %s", args, err, stdout.String(), stderr.String())
		}
		var res struct {
			Result    string
			SessionID string `json:"session_id"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
			t.Fatalf("stdout %q: %v", stdout.String(), err)
		}
		if stderr.Len() > 0 {
			t.Errorf("stderr: %s", stderr.String())
		}
		return res.Result + "\n" + res.SessionID
	}

	out := run([]string{"TRACEPARENT=00-" + pipelineTrace + "-" + pipelineSpan + "-01"}, "-p", "Keep NONCE-7F3A9 safe with a background agent.")
	result, sessionID, _ := strings.Cut(out, "\n")
	if !strings.Contains(result, "NONCE-7F3A9") {
		t.Fatalf("result %q: the run did not go as scripted", result)
	}
	spans := col.take(t)
	root := checkOneTrace(t, spans, pipelineTrace, pipelineSpan)

	byID := spansByID(spans)
	parentName := func(s *tracepb.Span) string {
		if p := byID[hex.EncodeToString(s.ParentSpanId)]; p != nil {
			return p.Name
		}
		return ""
	}
	var parentTurns, fgTurns, bgTurns int
	for _, s := range spans {
		attrs := otlptest.Attrs(s.Attributes)
		switch {
		case s.Name == "invoke_agent parent":
			parentTurns++
			if parentName(s) != "stoke.run" || len(s.Links) != 0 {
				t.Errorf("a parent turn under %q, links %d: want the run's root, none", parentName(s), len(s.Links))
			}
		case s.Name == "invoke_agent general-purpose" && attrs["stoke.turn"].GetIntValue() == 1 && parentName(s) == "execute_tool task":
			fgTurns++
			if len(s.Links) != 0 {
				t.Errorf("the foreground turn has %d links, want none (its task call is its parent)", len(s.Links))
			}
		case s.Name == "invoke_agent general-purpose":
			bgTurns++
			if parentName(s) != "stoke.run" || len(s.Links) != 1 {
				t.Errorf("background turn %d under %q with %d links: want the run's root, one link", attrs["stoke.turn"].GetIntValue(), parentName(s), len(s.Links))
				continue
			}
			want := map[int64]string{1: "execute_tool task", 2: "execute_tool send_message"}[attrs["stoke.turn"].GetIntValue()]
			if linked := byID[hex.EncodeToString(s.Links[0].SpanId)]; linked == nil || linked.Name != want {
				t.Errorf("background turn %d links to %v, want its %s call", attrs["stoke.turn"].GetIntValue(), linked, want)
			}
		}
	}
	// The prompt's turn, and one for each of the background agent's two notifications.
	if parentTurns != 3 || fgTurns != 1 || bgTurns != 2 {
		t.Errorf("%d parent turns, %d foreground turns, %d background turns; want 3, 1, 2", parentTurns, fgTurns, bgTurns)
	}

	if out := run(nil, "-p", "Once again.", "--resume", sessionID); !strings.HasPrefix(out, "again\n") {
		t.Fatalf("the resumed run answered %q", out)
	}
	resumed := col.take(t)
	var newRoot *tracepb.Span
	for _, s := range resumed {
		if s.Name == "stoke.run" {
			newRoot = s
		}
	}
	if newRoot == nil {
		t.Fatal("the resumed run exported no root")
	}
	checkOneTrace(t, resumed, hex.EncodeToString(newRoot.TraceId), "")
	if len(newRoot.Links) != 1 || !bytes.Equal(newRoot.Links[0].TraceId, root.TraceId) || !bytes.Equal(newRoot.Links[0].SpanId, root.SpanId) {
		t.Errorf("the resumed run's root links to %v, want the first run's root %x", newRoot.Links, root.SpanId)
	}
	if !otlptest.Attrs(newRoot.Attributes)["stoke.resumed"].GetBoolValue() {
		t.Error("the resumed run's root does not say stoke.resumed")
	}
}

// checkOneTrace checks that spans are one trace, traceID, with one root (stoke.run) whose
// parent is parentSpan (none when empty) and every other span's parent among them; it
// returns the root.
func checkOneTrace(t *testing.T, spans []*tracepb.Span, traceID, parentSpan string) *tracepb.Span {
	t.Helper()
	if len(spans) == 0 {
		t.Fatal("no spans exported")
	}
	byID := spansByID(spans)
	var root *tracepb.Span
	ids := map[string]int{}
	for _, s := range spans {
		ids[hex.EncodeToString(s.TraceId)]++
		parent := hex.EncodeToString(s.ParentSpanId)
		if s.Name == "stoke.run" {
			if root != nil {
				t.Error("two run roots")
			}
			root = s
			if parent != parentSpan {
				t.Errorf("the run's root has parent %q, want %q", parent, parentSpan)
			}
			continue
		}
		if byID[parent] == nil {
			t.Errorf("span %q: its parent %q is not in the trace", s.Name, parent)
		}
	}
	if len(ids) != 1 || ids[traceID] != len(spans) {
		t.Errorf("trace ids %v, want only %s", ids, traceID)
	}
	if root == nil {
		t.Fatal("no stoke.run root")
	}
	return root
}

func spansByID(spans []*tracepb.Span) map[string]*tracepb.Span {
	m := make(map[string]*tracepb.Span, len(spans))
	for _, s := range spans {
		m[hex.EncodeToString(s.SpanId)] = s
	}
	return m
}
