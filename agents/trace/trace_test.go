package trace

import (
	"bytes"
	"context"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"

	"github.com/stoke-cli/stoke/streamjson/streamjsontest"
)

// shutdown flushes tr the way the CLI does: a context that survives the run's, bounded.
func shutdown(t *testing.T, tr *Tracing) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.Context()), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func TestSetupDisabled(t *testing.T) {
	running := goleak.IgnoreCurrent()
	tr := mustSetup(t, Config{ServiceName: "stoke", ServiceVersion: "1.2.3", Provider: "openai"})
	if tr.Enabled() {
		t.Error("Enabled() = true for a config that exports nothing")
	}
	if _, ok := tr.Tracer().(noop.Tracer); !ok {
		t.Errorf("Tracer() = %T, want noop.Tracer", tr.Tracer())
	}
	simulateTurn(context.Background(), tr.Tracer(), TurnInfo{Agent: "parent", Turn: 1})
	// A disabled Tracing starts no goroutine (goleak retries while the tool goroutines
	// of simulateTurn exit).
	goleak.VerifyNone(t, running)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	var nilTracing *Tracing
	if nilTracing.Enabled() || nilTracing.Shutdown(context.Background()) != nil {
		t.Error("nil *Tracing is not a disabled Tracing")
	}
}

// scenario plays what a run records: the parent's turn launches a subagent with a task
// call (turn 1) and continues it with send_message (turn 2, under the registry's
// context), and makes a model call of its own.
type scenario struct {
	parent, taskCall, sendCall SpanContext
	turn1, turn2               SpanContext
}

func playScenario(tracer Tracer) scenario {
	var sc scenario
	pctx, parent := StartTurn(context.Background(), tracer, TurnInfo{SessionID: "s1", Agent: "parent", Turn: 1})
	taskCtx, taskCall := StartToolCall(pctx, tracer, "task", "call_task")
	sc.turn1 = simulateTurn(taskCtx, tracer, TurnInfo{SessionID: "s1", Agent: "explorer", TaskID: "t_1", SubagentType: "explorer", Turn: 1, Continuation: "fresh"})
	EndToolCall(taskCall, false)
	sendCtx, sendCall := StartToolCall(pctx, tracer, "send_message", "call_send")
	sc.turn2 = simulateTurn(context.Background(), tracer, TurnInfo{
		SessionID: "s1", Agent: "explorer", TaskID: "t_1", SubagentType: "explorer", Turn: 2, Continuation: "resident",
		Caller: SpanContextFrom(sendCtx),
	})
	EndToolCall(sendCall, false)
	EndTurn(parent, "completed", false, nil)
	sc.parent, sc.taskCall, sc.sendCall = parent.SpanContext(), taskCall.SpanContext(), sendCall.SpanContext()
	return sc
}

// checkScenario checks decoded requests against the scenario: ids, parent links, links
// to callers, the GenAI attributes and the resource's service.name.
func checkScenario(t *testing.T, reqs []*coltracepb.ExportTraceServiceRequest, sc scenario, service string) {
	t.Helper()
	var spans []*tracepb.Span
	for _, req := range reqs {
		for _, rs := range req.ResourceSpans {
			if got := kv(rs.Resource.Attributes)["service.name"].GetStringValue(); got != service {
				t.Errorf("resource service.name = %q, want %q", got, service)
			}
			for _, ss := range rs.ScopeSpans {
				if ss.Scope.Name != ScopeName {
					t.Errorf("scope %q", ss.Scope.Name)
				}
				spans = append(spans, ss.Spans...)
			}
		}
	}
	if len(spans) != 3+2*5 {
		t.Fatalf("got %d spans, want 13 (parent turn, task, send_message, 2 × (turn, 2 chats, 2 tools))", len(spans))
	}
	id := func(b []byte) string { return hex.EncodeToString(b) }
	byID := map[string]*tracepb.Span{}
	for _, s := range spans {
		if len(s.TraceId) != 16 || len(s.SpanId) != 8 || s.EndTimeUnixNano < s.StartTimeUnixNano || s.StartTimeUnixNano == 0 {
			t.Errorf("%s: trace id %x, span id %x, times %d..%d", s.Name, s.TraceId, s.SpanId, s.StartTimeUnixNano, s.EndTimeUnixNano)
		}
		byID[id(s.SpanId)] = s
	}
	for _, tc := range []struct {
		name   string
		turn   SpanContext
		caller SpanContext
		n      int64
	}{{"turn 1", sc.turn1, sc.taskCall, 1}, {"turn 2", sc.turn2, sc.sendCall, 2}} {
		root := byID[tc.turn.SpanID().String()]
		if root == nil {
			t.Fatalf("%s: span not exported", tc.name)
		}
		if id(root.TraceId) != tc.turn.TraceID().String() || len(root.ParentSpanId) != 0 {
			t.Errorf("%s: trace %x parent %x, want its own trace as a root", tc.name, root.TraceId, root.ParentSpanId)
		}
		if len(root.Links) != 1 || id(root.Links[0].SpanId) != tc.caller.SpanID().String() || id(root.Links[0].TraceId) != tc.caller.TraceID().String() {
			t.Errorf("%s: links %v, want the caller %s", tc.name, root.Links, tc.caller.SpanID())
		}
		a := kv(root.Attributes)
		for k, want := range map[string]string{
			"gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": "openai", "gen_ai.agent.name": "explorer",
			"gen_ai.agent.id": "t_1", "gen_ai.conversation.id": "s1",
		} {
			if got := a[k].GetStringValue(); got != want {
				t.Errorf("%s: %s = %q, want %q", tc.name, k, got, want)
			}
		}
		if got := a["stoke.turn"].GetIntValue(); got != tc.n {
			t.Errorf("%s: stoke.turn = %d", tc.name, got)
		}
		var finishes []string
		children := 0
		for _, s := range spans {
			if id(s.TraceId) != tc.turn.TraceID().String() || s == root {
				continue
			}
			children++
			if id(s.ParentSpanId) != tc.turn.SpanID().String() {
				t.Errorf("%s: %s has parent %x, want the turn", tc.name, s.Name, s.ParentSpanId)
			}
			if s.Name != "chat gpt-4o-mini" {
				continue
			}
			if s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
				t.Errorf("chat kind %v", s.Kind)
			}
			a := kv(s.Attributes)
			for k, want := range map[string]string{
				"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini",
				"gen_ai.response.model": "gpt-4o-mini-2024-07-18", "gen_ai.response.id": "msg_1",
				"gen_ai.conversation.id": "s1", "server.address": "127.0.0.1",
			} {
				if got := a[k].GetStringValue(); got != want {
					t.Errorf("chat: %s = %q, want %q", k, got, want)
				}
			}
			if got := a["server.port"].GetIntValue(); got != 8080 {
				t.Errorf("chat: server.port = %d", got)
			}
			if a["gen_ai.usage.input_tokens"].GetIntValue() == 0 {
				t.Error("chat: no gen_ai.usage.input_tokens")
			}
			if _, ok := a["gen_ai.input.messages"]; ok {
				t.Error("chat: content recorded without opting in")
			}
			for _, v := range a["gen_ai.response.finish_reasons"].GetArrayValue().GetValues() {
				finishes = append(finishes, v.GetStringValue())
			}
		}
		if children != 4 {
			t.Errorf("%s: %d children, want 4", tc.name, children)
		}
		if strings.Join(finishes, ",") != "tool_call,stop" {
			t.Errorf("%s: finish reasons %v, want the conventions' tool_call then stop", tc.name, finishes)
		}
	}
	parent := byID[sc.parent.SpanID().String()]
	if parent == nil || kv(parent.Attributes)["gen_ai.agent.id"].GetStringValue() != "s1" {
		t.Errorf("parent turn %v, want gen_ai.agent.id = the session", parent)
	}
	for _, call := range []SpanContext{sc.taskCall, sc.sendCall} {
		if s := byID[call.SpanID().String()]; s == nil || id(s.ParentSpanId) != sc.parent.SpanID().String() {
			t.Errorf("tool call %s is not a child of the parent turn", call.SpanID())
		}
	}
}

// TestTraceFileOTLP: --trace-file holds one ExportTraceServiceRequest per line, in the
// OTLP JSON encoding the official types decode.
func TestTraceFileOTLP(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte("stale content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := mustSetup(t, Config{File: path, ServiceName: "stoke-test", ServiceVersion: "0.9.0", Provider: "openai", ServerURL: "http://127.0.0.1:8080/v1"})
	if !tr.Enabled() {
		t.Fatal("Enabled() = false with a file")
	}
	sc := playScenario(tr.Tracer())
	shutdown(t, tr)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
	reqs := readTraceFile(t, path)
	if len(reqs) == 0 {
		t.Fatal("the trace file is empty")
	}
	checkScenario(t, reqs, sc, "stoke-test")

	// Spans after Shutdown are dropped, and the closed file is not written.
	_, late := StartTurn(context.Background(), tr.Tracer(), TurnInfo{Agent: "parent", Turn: 9})
	EndTurn(late, "completed", false, nil)
	if n := len(readTraceFile(t, path)); n != len(reqs) {
		t.Errorf("after Shutdown the file holds %d lines, want %d", n, len(reqs))
	}
}

func TestSetupErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"file in a missing directory", Config{File: filepath.Join(dir, "missing", "trace.jsonl")}},
		{"endpoint without a scheme", Config{Traces: Exporter{Endpoint: "localhost:4318"}}},
		{"endpoint with another scheme", Config{Traces: Exporter{Endpoint: "grpc://localhost:4317"}}},
		{"bad metrics endpoint", Config{Metrics: Exporter{Endpoint: "://nope"}, File: filepath.Join(dir, "ok.jsonl")}},
		{"header name with a space", Config{Traces: Exporter{Endpoint: "http://localhost:4318/v1/traces", Headers: map[string]string{"bad key": "1"}}}},
		{"header value with a line break", Config{Traces: Exporter{Endpoint: "http://localhost:4318/v1/traces", Headers: map[string]string{"k": "a\r\nb"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			running := goleak.IgnoreCurrent()
			tr, err := Setup(context.Background(), tt.cfg)
			if err == nil {
				shutdown(t, tr)
				t.Fatal("Setup succeeded")
			}
			if tr != nil {
				t.Errorf("Setup returned a Tracing with error %v", err)
			}
			goleak.VerifyNone(t, running)
		})
	}
}

// TestConsoleExporter: OTEL_TRACES_EXPORTER=console writes OTLP JSON lines to the
// console writer (stderr in the CLI).
func TestConsoleExporter(t *testing.T) {
	var console streamjsontest.SyncBuffer
	cfg, err := ConfigFromEnv(envOf(map[string]string{"OTEL_TRACES_EXPORTER": "console"}), &console)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Provider, cfg.ServerURL = "openai", "http://127.0.0.1:8080/v1"
	cfg.ServiceName = "stoke-console"
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	tr := mustSetup(t, cfg)
	sc := playScenario(tr.Tracer())
	shutdown(t, tr)
	var reqs []*coltracepb.ExportTraceServiceRequest
	for line := range bytes.Lines([]byte(console.String())) {
		reqs = append(reqs, decodeTraces(t, bytes.TrimSpace(line), "application/json"))
	}
	checkScenario(t, reqs, sc, "stoke-console")
}

// logLines returns a logger writing to a buffer, and the buffer's lines.
func logLines() (*slog.Logger, func() []string) {
	var buf streamjsontest.SyncBuffer
	return slog.New(slog.NewTextHandler(&buf, nil)), func() []string {
		return strings.Split(strings.TrimSpace(buf.String()), "\n")
	}
}
