package trace

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/goleak"
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
	tr := mustSetup(t, Config{ServiceName: "stoke", ServiceVersion: "1.2.3"})
	if tr.Enabled() {
		t.Error("Enabled() = true for an empty config")
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

// fileSpan is the part of a stdouttrace JSON line the tests read.
type fileSpan struct {
	Name        string
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	Attributes  []struct {
		Key   string
		Value struct {
			Type  string
			Value any
		}
	}
	Links []struct {
		SpanContext struct{ TraceID, SpanID string }
	}
	Resource []struct {
		Key   string
		Value struct{ Value any }
	}
}

func (s fileSpan) attr(key string) any {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.Value
		}
	}
	return nil
}

func (s fileSpan) resource(key string) any {
	for _, a := range s.Resource {
		if a.Key == key {
			return a.Value.Value
		}
	}
	return nil
}

func readSpans(t *testing.T, path string) []fileSpan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []fileSpan
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var s fileSpan
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("line %d is not one JSON span: %v\n%s", len(out)+1, err, sc.Bytes())
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestSetupFile(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte("stale content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := mustSetup(t, Config{File: path, ServiceName: "stoke-test", ServiceVersion: "0.9.0"})
	if !tr.Enabled() {
		t.Fatal("Enabled() = false with a file")
	}
	tracer := tr.Tracer()
	turn1 := simulateTurn(context.Background(), tracer, TurnInfo{SessionID: "s1", Agent: "explorer", TaskID: "t_1", Turn: 1, Continuation: "fresh"})
	turn2 := simulateTurn(context.Background(), tracer, TurnInfo{SessionID: "s1", Agent: "explorer", TaskID: "t_1", Turn: 2, Continuation: "resident", Caller: turn1})
	shutdown(t, tr)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}

	spans := readSpans(t, path)
	if len(spans) != 10 {
		t.Fatalf("file holds %d spans, want 10 (2 × turn, 2 model calls, 2 tools)", len(spans))
	}
	turns := map[string]fileSpan{}
	for _, s := range spans {
		if s.Name == "invoke_agent explorer" {
			turns[s.SpanContext.TraceID] = s
		}
		if got := s.resource("service.name"); got != "stoke-test" {
			t.Errorf("%s: service.name %v", s.Name, got)
		}
		if got := s.resource("service.version"); got != "0.9.0" {
			t.Errorf("%s: service.version %v", s.Name, got)
		}
	}
	if len(turns) != 2 {
		t.Fatalf("got turn spans in %d traces, want 2", len(turns))
	}
	t2, ok := turns[turn2.TraceID().String()]
	if !ok {
		t.Fatal("turn 2's trace not in the file")
	}
	if got := t2.attr(string(AttrContinuation)); got != "resident" {
		t.Errorf("turn 2 continuation %v", got)
	}
	if got := t2.attr(string(AttrTurn)); got != float64(2) {
		t.Errorf("turn 2 stoke.turn %v", got)
	}
	if len(t2.Links) != 1 || t2.Links[0].SpanContext.SpanID != turn1.SpanID().String() {
		t.Errorf("turn 2 links %+v, want turn 1's span %s", t2.Links, turn1.SpanID())
	}

	// Spans after Shutdown are dropped, and the closed file is not written.
	_, late := StartTurn(context.Background(), tracer, TurnInfo{Agent: "parent", Turn: 9})
	EndTurn(late, "completed", nil)
	if n := len(readSpans(t, path)); n != 10 {
		t.Errorf("after Shutdown the file holds %d spans, want 10", n)
	}
}

func TestSetupErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		cfg  Config
	}{
		{"file in a missing directory", Config{File: filepath.Join(dir, "missing", "trace.jsonl")}},
		{"endpoint without a scheme", Config{OTLPEndpoint: "localhost:4318"}},
		{"endpoint with another scheme", Config{OTLPEndpoint: "grpc://localhost:4317"}},
		{"bad endpoint with a good file", Config{OTLPEndpoint: "://nope", File: filepath.Join(dir, "ok.jsonl")}},
		{"header name with a space", Config{OTLPEndpoint: "http://localhost:4318/v1/traces", Headers: map[string]string{"bad key": "1"}}},
		{"header value with a line break", Config{OTLPEndpoint: "http://localhost:4318/v1/traces", Headers: map[string]string{"k": "a\r\nb"}}},
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

func TestEndpointFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"none", nil, ""},
		{"base", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, "http://collector:4318/v1/traces"},
		{"base with slash", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector:4318/"}, "https://collector:4318/v1/traces"},
		{"base with path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otlp.example.com/otlp"}, "https://otlp.example.com/otlp/v1/traces"},
		{"traces as is", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/custom"}, "http://collector:4318/custom"},
		{"traces wins", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://base:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:4318/v1/traces",
		}, "http://traces:4318/v1/traces"},
		{"blank traces falls back", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://base:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "  ",
		}, "http://base:4318/v1/traces"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			if got := EndpointFromEnv(lookup); got != tt.want {
				t.Errorf("EndpointFromEnv = %q, want %q", got, tt.want)
			}
		})
	}
}
