package trace

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestConfigFromEnv has a case for each OTEL_* variable stoke reads.
func TestConfigFromEnv(t *testing.T) {
	console := io.Discard
	otlp := func(endpoint string) Exporter { return Exporter{Endpoint: endpoint, Protocol: ProtocolHTTPProtobuf} }
	tests := []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr string // in the error, "" for none
	}{
		{"nothing set", nil, Config{}, ""},
		{"OTEL_EXPORTER_OTLP_ENDPOINT", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"},
			Config{Traces: otlp("http://collector:4318/v1/traces"), Metrics: otlp("http://collector:4318/v1/metrics")}, ""},
		{"OTEL_EXPORTER_OTLP_ENDPOINT with a path", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otlp.example.com/otlp"},
			Config{Traces: otlp("https://otlp.example.com/otlp/v1/traces"), Metrics: otlp("https://otlp.example.com/otlp/v1/metrics")}, ""},
		{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://base:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:4318/custom",
		}, Config{Traces: otlp("http://traces:4318/custom"), Metrics: otlp("http://base:4318/v1/metrics")}, ""},
		{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT alone", map[string]string{"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m:4318/v1/metrics"},
			Config{Metrics: otlp("http://m:4318/v1/metrics")}, ""},
		{"bad endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, Config{},
			`OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318": want an http:// or https:// URL`},
		{"bad traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "localhost:4318/v1/traces"}, Config{},
			`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="localhost:4318/v1/traces": want an http:// or https:// URL`},
		{"OTEL_EXPORTER_OTLP_HEADERS", map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
			"OTEL_EXPORTER_OTLP_HEADERS":  "api-key=secret%20value, x-tenant = a ,bad pair,=empty,bad key=1",
		}, Config{
			Traces:  Exporter{Endpoint: "http://c:4318/v1/traces", Protocol: ProtocolHTTPProtobuf, Headers: map[string]string{"api-key": "secret value", "x-tenant": "a"}},
			Metrics: Exporter{Endpoint: "http://c:4318/v1/metrics", Protocol: ProtocolHTTPProtobuf, Headers: map[string]string{"api-key": "secret value", "x-tenant": "a"}},
		}, ""},
		{"OTEL_EXPORTER_OTLP_TRACES_HEADERS wins", map[string]string{
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces",
			"OTEL_EXPORTER_OTLP_HEADERS":         "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2",
		}, Config{Traces: Exporter{Endpoint: "http://c:4318/v1/traces", Protocol: ProtocolHTTPProtobuf, Headers: map[string]string{"b": "2"}}}, ""},
		{"OTEL_EXPORTER_OTLP_TIMEOUT", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500"},
			Config{Traces: Exporter{Endpoint: "http://c/v1/traces", Protocol: ProtocolHTTPProtobuf, Timeout: 2500 * time.Millisecond}}, ""},
		{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT wins", map[string]string{
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "100",
		}, Config{Traces: Exporter{Endpoint: "http://c/v1/traces", Protocol: ProtocolHTTPProtobuf, Timeout: 100 * time.Millisecond}}, ""},
		{"bad timeout", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, Config{}, "OTEL_EXPORTER_OTLP_TIMEOUT=\"10s\": want a whole number of milliseconds"},
		{"OTEL_EXPORTER_OTLP_PROTOCOL http/json", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"},
			Config{Traces: Exporter{Endpoint: "http://c/v1/traces", Protocol: ProtocolHTTPJSON}}, ""},
		{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL wins", map[string]string{
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
		}, Config{Traces: otlp("http://c/v1/traces")}, ""},
		{"OTEL_EXPORTER_OTLP_COMPRESSION", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"},
			Config{Traces: Exporter{Endpoint: "http://c/v1/traces", Protocol: ProtocolHTTPProtobuf, Compression: CompressionGzip}}, ""},
		{"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION wins", map[string]string{
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/v1/traces", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip", "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "none",
		}, Config{Traces: otlp("http://c/v1/traces")}, ""},
		{"OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE", map[string]string{
			"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://m/v1/metrics", "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "delta",
		}, Config{Metrics: otlp("http://m/v1/metrics"), DeltaMetrics: true}, ""},
		{"grpc is refused", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://localhost:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			Config{}, `OTEL_EXPORTER_OTLP_PROTOCOL="grpc" is not supported: stoke exports OTLP over http/protobuf or http/json`},
		{"OTEL_TRACES_EXPORTER=none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "none"},
			Config{Metrics: otlp("http://c/v1/metrics")}, ""},
		{"OTEL_TRACES_EXPORTER=console", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, Config{Traces: Exporter{Console: console}}, ""},
		{"OTEL_TRACES_EXPORTER=otlp alone uses the default endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"},
			Config{Traces: otlp("http://localhost:4318/v1/traces")}, ""},
		{"OTEL_TRACES_EXPORTER=otlp,console", map[string]string{"OTEL_TRACES_EXPORTER": "otlp, console", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"},
			Config{Traces: Exporter{Endpoint: "http://c/v1/traces", Protocol: ProtocolHTTPProtobuf, Console: console}, Metrics: otlp("http://c/v1/metrics")}, ""},
		{"unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, Config{}, `OTEL_TRACES_EXPORTER="zipkin": want otlp, console or none`},
		{"OTEL_METRICS_EXPORTER=none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_METRICS_EXPORTER": "none"},
			Config{Traces: otlp("http://c/v1/traces")}, ""},
		{"OTEL_METRICS_EXPORTER=console", map[string]string{"OTEL_METRICS_EXPORTER": "console"}, Config{Metrics: Exporter{Console: console}}, ""},
		{"OTEL_SDK_DISABLED", map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_TRACES_EXPORTER": "console"}, Config{}, ""},
		{"OTEL_SDK_DISABLED=false", map[string]string{"OTEL_SDK_DISABLED": "false", "OTEL_TRACES_EXPORTER": "console"}, Config{Traces: Exporter{Console: console}}, ""},
		{"bad OTEL_SDK_DISABLED", map[string]string{"OTEL_SDK_DISABLED": "1"}, Config{}, `OTEL_SDK_DISABLED="1": want true or false`},
		{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"},
			Config{CaptureContent: true}, ""},
		{"bad capture flag", map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "yes"}, Config{}, "want true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := configFromEnv(t, tt.env, console, tt.wantErr)
			if !ok {
				return
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Config{}, "Prices"), cmp.Comparer(func(a, b io.Writer) bool { return a == b })); diff != "" {
				t.Errorf("ConfigFromEnv (-want +got):\n%s", diff)
			}
		})
	}
}

// configFromEnv runs ConfigFromEnv on env. With wantErr, it fails t unless the error
// holds wantErr, and returns false; without, it fails t on any error.
func configFromEnv(t *testing.T, env map[string]string, console io.Writer, wantErr string) (Config, bool) {
	t.Helper()
	cfg, err := ConfigFromEnv(envOf(env), console)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("ConfigFromEnv error = %v, want %q", err, wantErr)
		}
		return Config{}, false
	}
	if err != nil {
		t.Fatalf("ConfigFromEnv: %v", err)
	}
	return cfg, true
}

// TestTimeoutBoundsExport: OTEL_EXPORTER_OTLP_TIMEOUT reaches the exporter and bounds an
// export to a collector that never answers.
func TestTimeoutBoundsExport(t *testing.T) {
	cfg, err := ConfigFromEnv(envOf(map[string]string{
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://" + hungServer(t) + "/v1/traces", "OTEL_EXPORTER_OTLP_TIMEOUT": "150",
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	exp, reported := newTestExporter(t, cfg.Traces.Endpoint)
	exp.client.timeout = cfg.Traces.Timeout
	start := time.Now()
	_ = exp.ExportSpans(t.Context(), testSpans(1))
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("export took %v with a 150 ms timeout", d)
	}
	if err := reported(); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("reported %v, want the deadline", err)
	}
}

// TestResourceFromEnv: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the
// resource, as in every OpenTelemetry SDK.
func TestResourceFromEnv(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "ci-agent")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=ci,service.namespace=build")
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	tr := mustSetup(t, Config{File: path, ServiceName: "stoke", ServiceVersion: "1.0.0"})
	_, span := StartTurn(t.Context(), tr.Tracer(), TurnInfo{Agent: "parent", Turn: 1})
	EndTurn(span, "completed", false, nil)
	shutdown(t, tr)
	reqs := readTraceFile(t, path)
	if len(reqs) != 1 {
		t.Fatalf("%d lines", len(reqs))
	}
	a := kv(reqs[0].ResourceSpans[0].Resource.Attributes)
	for k, want := range map[string]string{
		"service.name": "ci-agent", "service.version": "1.0.0", "deployment.environment.name": "ci", "service.namespace": "build",
	} {
		if got := a[k].GetStringValue(); got != want {
			t.Errorf("resource %s = %q, want %q", k, got, want)
		}
	}
}
