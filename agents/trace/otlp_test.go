package trace

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/price"
)

// envOf is a LookupEnv over a map.
func envOf(env map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := env[k]; return v, ok }
}

// TestSetupOTLP exports the scenario over OTLP/HTTP in each protocol and decodes what the
// collector received with the official types.
func TestSetupOTLP(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	for _, tc := range protocols {
		t.Run(tc.protocol, func(t *testing.T) {
			col := newCollector(t)
			tr := mustSetup(t, Config{
				Traces: Exporter{
					Endpoint: col.srv.URL + "/custom/v1/traces", Protocol: tc.protocol,
					Headers: map[string]string{"Authorization": "Bearer k", "x-tenant": "a b"},
				},
				ServiceName: "stoke-test", ServiceVersion: "0.9.0", Provider: "openai", ServerURL: "http://127.0.0.1:8080/v1",
			})
			sc := playScenario(tr.Tracer())
			if n := len(col.requests()); n != 0 {
				t.Errorf("%d requests before Shutdown: spans should be batched", n)
			}
			shutdown(t, tr)
			var reqs []*coltracepb.ExportTraceServiceRequest
			for _, r := range col.requests() {
				if r.method != http.MethodPost || r.path != "/custom/v1/traces" || r.header.Get("Content-Type") != tc.contentType {
					t.Errorf("request %s %s (%s), want a %s POST to the endpoint's path", r.method, r.path, r.header.Get("Content-Type"), tc.contentType)
				}
				if r.header.Get("Authorization") != "Bearer k" || r.header.Get("X-Tenant") != "a b" {
					t.Errorf("request headers %v, want Config.Headers", r.header)
				}
				reqs = append(reqs, decodeTraces(t, r.body, tc.contentType))
			}
			if len(reqs) == 0 {
				t.Fatal("Shutdown sent nothing to the collector")
			}
			checkScenario(t, reqs, sc, "stoke-test")
		})
	}
}

// TestEncodingsAgree: the protobuf and JSON encoders say the same of every kind of
// attribute value, status and event, as the official types read them.
func TestEncodingsAgree(t *testing.T) {
	tracer, exp := newRecorder(t)
	ctx, turn := StartTurn(context.Background(), tracer, TurnInfo{SessionID: "s", Agent: "parent", Turn: 1})
	_, failed := StartModelCall(ctx, tracer, chatRequest("gpt-4o"))
	EndModelCall(failed, llm.Event{}, nil, &llm.ProviderError{StatusCode: 529, Message: "overloaded"})
	_, misc := tracer.Start(ctx, "misc", oteltrace.WithAttributes(miscAttrs()...))
	misc.End()
	EndTurn(turn, "completed", false, nil)
	spans := exp.GetSpans().Snapshots()
	fromJSON := decodeTraces(t, mustJSON(t, encodeSpans(spans)), "application/json")
	fromProto := decodeTraces(t, encodeSpansProto(spans), "application/x-protobuf")
	if !protoEqual(fromJSON, fromProto) {
		t.Errorf("the encodings differ:\njson:  %v\nproto: %v", fromJSON, fromProto)
	}
	got := byName(allSpans(fromProto))
	f := got["chat gpt-4o"][0]
	if f.Status.GetCode() != 2 || !strings.Contains(f.Status.GetMessage(), "overloaded") {
		t.Errorf("failed chat status %v", f.Status)
	}
	if len(f.Events) != 1 || f.Events[0].Name != "exception" {
		t.Errorf("failed chat events %v", f.Events)
	}
	if a := kv(f.Attributes); a["error.type"].GetStringValue() != "529" || a["gen_ai.response.finish_reasons"].GetArrayValue().GetValues()[0].GetStringValue() != "error" {
		t.Errorf("failed chat attributes %v", f.Attributes)
	}
	m := kv(got["misc"][0].Attributes)
	if !m["b"].GetBoolValue() || m["f"].GetDoubleValue() != 0.5 || m["s"].GetStringValue() != "quote \" and \x01" ||
		len(m["is"].GetArrayValue().GetValues()) != 2 || m["is"].GetArrayValue().GetValues()[1].GetIntValue() != -2 ||
		m["neg"].GetIntValue() != -7 || m["false"] == nil || m["false"].GetBoolValue() {
		t.Errorf("misc attributes %v", got["misc"][0].Attributes)
	}
}

func TestOTLPExportErrors(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		reply    string
		protobuf bool // answer as protobuf
		want     string
		requests int
	}{
		{"ok", nil, "{}", false, "", 1},
		{"ok with an empty answer", nil, "", false, "", 1},
		{"ok with a protobuf answer", nil, "", true, "", 1},
		{"server error", []int{500}, `{"code":13,"message":"disk full"}`, false, "500 Internal Server Error from http://", 1},
		{"server error in protobuf", []int{400}, string(protoStatus("bad spans")), true, "bad spans", 1},
		{"bad request", []int{400}, "not json at all", false, "not json at all", 1},
		{"retried", []int{503, 429, 502}, "{}", false, "", 4},
		{"retries give up", []int{503, 503, 503, 503, 503, 503}, "", false, "503 Service Unavailable", otlpMaxAttempts},
		{"partial success", nil, `{"partialSuccess":{"rejectedSpans":"2","errorMessage":"too old"}}`, false, "rejected 2 spans: too old", 1},
		{"partial success in protobuf", nil, string(protoPartial(2, "too old")), true, "rejected 2 spans: too old", 1},
		{"partial success, none rejected", nil, `{"partialSuccess":{}}`, false, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			col := newCollector(t, tt.statuses...)
			col.reply = tt.reply
			if tt.protobuf {
				col.replyCT = "application/x-protobuf"
			}
			exp, reported := newTestExporter(t, col.srv.URL+"/v1/traces")
			if err := exp.ExportSpans(context.Background(), testSpans(3)); err != nil {
				t.Errorf("ExportSpans returned %v: failures are reported, not returned", err)
			}
			err := reported()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("export: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("export = %v, want an error with %q", err, tt.want)
			}
			if n := len(col.requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
		})
	}
}

// TestUnreachableCollector: with the collector down (a closed port) or hung (it accepts
// and never answers), the end of a run gives up within FlushTimeout and says so in one
// warning line, though the export timeout is 30 s.
func TestUnreachableCollector(t *testing.T) {
	if FlushTimeout > time.Second {
		t.Fatalf("FlushTimeout = %v: export may add more than 1 s to a run", FlushTimeout)
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	hung := hungServer(t)
	for name, endpoint := range map[string]string{"closed": closed.URL, "hung": "http://" + hung} {
		t.Run(name, func(t *testing.T) {
			logger, lines := logLines()
			tr := mustSetup(t, Config{
				Traces:  Exporter{Endpoint: endpoint + "/v1/traces", Timeout: 30 * time.Second},
				Metrics: Exporter{Endpoint: endpoint + "/v1/metrics", Timeout: 30 * time.Second},
				Logger:  logger, Provider: "openai",
			})
			playScenario(tr.Tracer())
			start := time.Now()
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			// A generous bound, for a loaded machine; the timeout asked for is 30 s.
			if d := time.Since(start); d > FlushTimeout+4*time.Second {
				t.Errorf("Shutdown took %v with the collector %s", d, name)
			}
			got := lines()
			if len(got) != 1 || !strings.Contains(got[0], "level=WARN") || !strings.Contains(got[0], "telemetry not exported") {
				t.Errorf("log %q, want one warning line", got)
			}
		})
	}
}

// hungServer accepts connections and never answers; it returns its address.
func hungServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// TestMetrics: the chat spans become gen_ai.client.token.usage,
// gen_ai.client.operation.duration and stoke.client.cost, sent once at Shutdown.
func TestMetrics(t *testing.T) {
	for _, tc := range protocols {
		t.Run(tc.protocol, func(t *testing.T) {
			col := newCollector(t)
			tr := mustSetup(t, Config{
				Metrics:  Exporter{Endpoint: col.srv.URL + "/v1/metrics", Protocol: tc.protocol},
				Provider: "openai", ServerURL: "https://api.openai.com/v1", Prices: price.Default(),
			})
			playScenario(tr.Tracer()) // 4 chats: 2 × (100+50 in, 20 out; 10 in, 5 out) on gpt-4o-mini
			shutdown(t, tr)
			reqs := col.requests()
			if len(reqs) != 1 || reqs[0].path != "/v1/metrics" || reqs[0].header.Get("Content-Type") != tc.contentType {
				t.Fatalf("requests %d, want one %s export to /v1/metrics", len(reqs), tc.contentType)
			}
			req := decodeMetrics(t, reqs[0].body, tc.contentType)
			metrics := map[string]*metricspb.Metric{}
			for _, rm := range req.ResourceMetrics {
				if kv(rm.Resource.Attributes)["service.name"].GetStringValue() == "" {
					t.Error("no service.name on the metrics resource")
				}
				for _, sm := range rm.ScopeMetrics {
					for _, m := range sm.Metrics {
						metrics[m.Name] = m
					}
				}
			}
			dur := metrics[MetricOperationDuration].GetHistogram()
			if dur == nil || len(dur.DataPoints) != 1 || dur.DataPoints[0].Count != 4 || metrics[MetricOperationDuration].Unit != "s" {
				t.Fatalf("duration %v, want one series of 4 calls", metrics[MetricOperationDuration])
			}
			if dur.AggregationTemporality != metricspb.AggregationTemporality_AGGREGATION_TEMPORALITY_CUMULATIVE {
				t.Errorf("temporality %v", dur.AggregationTemporality)
			}
			a := kv(dur.DataPoints[0].Attributes)
			if a["gen_ai.provider.name"].GetStringValue() != "openai" || a["gen_ai.request.model"].GetStringValue() != "gpt-4o-mini" ||
				a["server.address"].GetStringValue() != "api.openai.com" || a["server.port"].GetIntValue() != 443 {
				t.Errorf("duration attributes %v", dur.DataPoints[0].Attributes)
			}
			tokens := metrics[MetricTokenUsage].GetHistogram()
			if tokens == nil || len(tokens.DataPoints) != 2 {
				t.Fatalf("token usage %v, want input and output series", metrics[MetricTokenUsage])
			}
			sums := map[string]float64{}
			for _, dp := range tokens.DataPoints {
				var n uint64
				for _, c := range dp.BucketCounts {
					n += c
				}
				if n != dp.Count || len(dp.BucketCounts) != len(dp.ExplicitBounds)+1 {
					t.Errorf("buckets %v over bounds %v, count %d", dp.BucketCounts, dp.ExplicitBounds, dp.Count)
				}
				sums[kv(dp.Attributes)["gen_ai.token.type"].GetStringValue()] = dp.GetSum()
			}
			if sums["input"] != 2*(150+10) || sums["output"] != 2*(20+5) {
				t.Errorf("token sums %v, want input 320, output 50", sums)
			}
			cost := metrics[MetricCost].GetSum()
			p, _ := price.Default().Lookup("gpt-4o-mini")
			want := 2 * (p.Cost(llm.Usage{InputTokens: 100, CacheReadInputTokens: 50, OutputTokens: 20}) + p.Cost(llm.Usage{InputTokens: 10, OutputTokens: 5}))
			if cost == nil || !cost.IsMonotonic || len(cost.DataPoints) != 1 || !near(cost.DataPoints[0].GetAsDouble(), want) {
				t.Errorf("cost %v, want %g", metrics[MetricCost], want)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }

// TestCaptureContent: prompts and completions are on the chat spans only when asked.
func TestCaptureContent(t *testing.T) {
	for _, capture := range []bool{false, true} {
		t.Run(strconv.FormatBool(capture), func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
			defer tp.Shutdown(context.Background())
			tracer := &stokeTracer{Tracer: tp.Tracer("t"), endpoint: newModelEndpoint(Config{Provider: "anthropic", CaptureContent: capture})}
			req := &llm.Request{Model: "claude-sonnet-4", System: "be brief", Messages: []llm.Message{
				llm.UserText("read go.mod"),
				{Role: llm.RoleAssistant, Content: []llm.Block{{Type: llm.BlockToolUse, ID: "c1", Name: "read_file", Input: []byte(`{"file_path":"go.mod"}`)}}},
				{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockToolResult, ToolUseID: "c1", Content: "module x"}}},
			}}
			_, span := StartModelCall(context.Background(), tracer, req)
			EndModelCall(span, llm.Event{StopReason: llm.StopEndTurn}, []llm.Block{llm.TextBlock("it is module x")}, nil)
			a := attrs(exp.GetSpans()[0].Attributes)
			in, out, sys := a[AttrInputMessages].AsString(), a[AttrOutputMessages].AsString(), a[AttrSystemInstructions].AsString()
			if !capture {
				if in != "" || out != "" || sys != "" {
					t.Errorf("content recorded without opting in: %q %q %q", in, out, sys)
				}
				return
			}
			wantIn := `[{"role":"user","parts":[{"type":"text","content":"read go.mod"}]},` +
				`{"role":"assistant","parts":[{"type":"tool_call","id":"c1","name":"read_file","arguments":{"file_path":"go.mod"}}]},` +
				`{"role":"tool","parts":[{"type":"tool_call_response","id":"c1","result":"module x"}]}]`
			if in != wantIn {
				t.Errorf("input messages\n got %s\nwant %s", in, wantIn)
			}
			if want := `[{"role":"assistant","parts":[{"type":"text","content":"it is module x"}],"finish_reason":"stop"}]`; out != want {
				t.Errorf("output messages %s, want %s", out, want)
			}
			if want := `[{"type":"text","content":"be brief"}]`; sys != want {
				t.Errorf("system instructions %s, want %s", sys, want)
			}
		})
	}
}

// testSpans returns n ended spans to export.
func testSpans(n int) []sdktrace.ReadOnlySpan {
	stubs := make(tracetest.SpanStubs, n)
	for i := range stubs {
		stubs[i] = tracetest.SpanStub{
			Name:      "span " + strconv.Itoa(i),
			StartTime: time.Unix(1, 0),
			EndTime:   time.Unix(2, 0),
			SpanContext: oteltrace.NewSpanContext(oteltrace.SpanContextConfig{
				TraceID: oteltrace.TraceID{1}, SpanID: oteltrace.SpanID{byte(i + 1)}, TraceFlags: oteltrace.FlagsSampled,
			}),
		}
	}
	return stubs.Snapshots()
}

// newTestExporter returns an exporter to url with short delays, shut down at cleanup, and
// a function returning the last failure it reported.
func newTestExporter(t *testing.T, url string) (*otlpExporter, func() error) {
	t.Helper()
	var (
		mu   sync.Mutex
		last error
	)
	client := newOTLPClient(Exporter{Endpoint: url, Protocol: ProtocolHTTPJSON}, nil)
	client.backoff = time.Millisecond
	exp := newOTLPExporter(client, func(err error) {
		mu.Lock()
		defer mu.Unlock()
		last = err
	})
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return exp, func() error {
		mu.Lock()
		defer mu.Unlock()
		return last
	}
}
