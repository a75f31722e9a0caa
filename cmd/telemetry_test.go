package cmd

import (
	"bytes"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/stoke-cli/stoke/agents/trace/otlptest"
	"github.com/stoke-cli/stoke/headless"
)

// TestTelemetryOfARun runs the nonce scenario for real (scripted model, background agent
// continued with send_message) with --trace-file and an OTLP/HTTP collector, and decodes
// both with the official OTLP types: the same spans, one trace for the run under its
// stoke.run root, every turn under it and every other span under its turn, each subagent
// (background) turn linked to the parent's tool call that asked for it, the GenAI
// attributes, and the resource's service.name.
func TestTelemetryOfARun(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies [][]byte
	)
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/v1/traces" && r.Header.Get("Content-Type") == "application/x-protobuf" {
			mu.Lock()
			bodies = append(bodies, body)
			mu.Unlock()
		}
	}))
	defer col.Close()
	scenario, err := filepath.Abs("../scenarios/nonce-memory.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := newTestProcess(t)
	p.env["STOKE_HOME"] = filepath.Join(p.userHome, "stoke-home")
	p.env["OTEL_EXPORTER_OTLP_ENDPOINT"] = col.URL
	p.env["OTEL_METRICS_EXPORTER"] = "none"
	traceFile := filepath.Join(t.TempDir(), "trace.jsonl")
	deps, out, errOut := p.deps()
	code := execute(t.Context(), deps, headless.Run, []string{"-p", "Keep NONCE-7F3A9 safe with a background agent, then ask it for the nonce.",
		"--scenario", scenario, "--trace-file", traceFile, "--output-format", "json"})
	if code != 0 || !strings.Contains(out.String(), "NONCE-7F3A9") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	var fromFile []*tracepb.Span
	for _, req := range otlptest.ReadTraceFile(t, traceFile) {
		fromFile = append(fromFile, runSpans(t, req)...)
	}
	var fromOTLP []*tracepb.Span
	mu.Lock()
	for _, b := range bodies {
		fromOTLP = append(fromOTLP, runSpans(t, otlptest.DecodeTraces(t, b, otlptest.Protobuf))...)
	}
	mu.Unlock()
	if len(fromFile) == 0 || len(fromFile) != len(fromOTLP) {
		t.Fatalf("%d spans in the file, %d at the collector", len(fromFile), len(fromOTLP))
	}
	for _, s := range fromOTLP {
		s.Attributes = nil // compare ids and names; attributes are checked below
	}
	fileIDs, otlpIDs := spanKeys(fromFile), spanKeys(fromOTLP)
	if fileIDs != otlpIDs {
		t.Errorf("the file and the collector hold different spans:\n%s\n%s", fileIDs, otlpIDs)
	}
	checkRunSpans(t, fromFile)
}

// runSpans checks the resource and returns the spans.
func runSpans(t *testing.T, req *coltracepb.ExportTraceServiceRequest) []*tracepb.Span {
	t.Helper()
	for _, rs := range req.ResourceSpans {
		if got := attrMap(rs.Resource.Attributes)["service.name"].GetStringValue(); got != "stoke" {
			t.Errorf("service.name = %q", got)
		}
	}
	return otlptest.Spans(req)
}

func spanKeys(spans []*tracepb.Span) string {
	var keys []string
	for _, s := range spans {
		keys = append(keys, hex.EncodeToString(s.TraceId)+"/"+hex.EncodeToString(s.SpanId)+"/"+hex.EncodeToString(s.ParentSpanId)+" "+s.Name)
	}
	slices.Sort(keys)
	return strings.Join(keys, "\n")
}

func checkRunSpans(t *testing.T, spans []*tracepb.Span) {
	t.Helper()
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		if len(s.TraceId) != 16 || len(s.SpanId) != 8 {
			t.Fatalf("%s: ids %x/%x", s.Name, s.TraceId, s.SpanId)
		}
		byID[string(s.SpanId)] = s
	}
	var subTurns []*tracepb.Span
	chats, roots := 0, 0
	for _, s := range spans {
		a := attrMap(s.Attributes)
		if !bytes.Equal(s.TraceId, spans[0].TraceId) {
			t.Errorf("%s: trace %x, want the run's one trace %x", s.Name, s.TraceId, spans[0].TraceId)
		}
		if len(s.ParentSpanId) == 0 {
			roots++
			if s.Name != "stoke.run" {
				t.Errorf("%s: a root that is not the run's", s.Name)
			}
			continue
		}
		parent := byID[string(s.ParentSpanId)]
		if parent == nil {
			t.Errorf("%s: parent %x is not in the trace", s.Name, s.ParentSpanId)
			continue
		}
		// A turn hangs under the run's root (a background turn, the parent's) or its task
		// call (a foreground one); model and tool calls under their turn.
		if op := a["gen_ai.operation.name"].GetStringValue(); op == "invoke_agent" {
			if parent.Name != "stoke.run" && parent.Name != "execute_tool task" {
				t.Errorf("%s: under %s, want the run's root or a task call", s.Name, parent.Name)
			}
		} else if attrMap(parent.Attributes)["gen_ai.operation.name"].GetStringValue() != "invoke_agent" {
			t.Errorf("%s: under %s, want a turn", s.Name, parent.Name)
		}
		switch a["gen_ai.operation.name"].GetStringValue() {
		case "invoke_agent":
			for _, k := range []string{"gen_ai.provider.name", "gen_ai.agent.id", "gen_ai.agent.name", "gen_ai.conversation.id"} {
				if a[k].GetStringValue() == "" {
					t.Errorf("%s: no %s", s.Name, k)
				}
			}
			if a["stoke.task_id"].GetStringValue() != "" {
				subTurns = append(subTurns, s)
			}
		case "chat":
			chats++
			for k, want := range map[string]string{"gen_ai.provider.name": "stoke.scripted", "gen_ai.request.model": "scripted-nonce", "gen_ai.conversation.id": fixedSessionID} {
				if got := a[k].GetStringValue(); got != want {
					t.Errorf("%s: %s = %q, want %q", s.Name, k, got, want)
				}
			}
			if a["gen_ai.response.model"].GetStringValue() == "" || len(a["gen_ai.response.finish_reasons"].GetArrayValue().GetValues()) != 1 {
				t.Errorf("%s: response attributes %v", s.Name, s.Attributes)
			}
			switch r := a["gen_ai.response.finish_reasons"].GetArrayValue().GetValues()[0].GetStringValue(); r {
			case "stop", "tool_call":
			default:
				t.Errorf("%s: finish reason %q, want the conventions' words", s.Name, r)
			}
		}
	}
	if chats == 0 {
		t.Error("no chat spans")
	}
	if len(subTurns) != 2 {
		t.Fatalf("%d subagent turns, want 2 (launch and send_message)", len(subTurns))
	}
	for _, turn := range subTurns {
		if len(turn.Links) != 1 {
			t.Errorf("%s: links %v, want one, to the call that asked for it", turn.Name, turn.Links)
			continue
		}
		caller := byID[string(turn.Links[len(turn.Links)-1].SpanId)]
		if caller == nil || !strings.HasPrefix(caller.Name, "execute_tool ") {
			t.Errorf("%s: linked to %v, want the parent's task or send_message call", turn.Name, caller)
		}
	}
	if roots != 1 {
		t.Errorf("%d roots, want the run's one", roots)
	}
}

var attrMap = otlptest.Attrs
