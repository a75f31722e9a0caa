package trace

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/stoke-cli/stoke/agents/llm"
)

// otlpCollector is an httptest OTLP/HTTP receiver that records the requests it gets and
// answers with the statuses it is given (200 once they run out).
type otlpCollector struct {
	srv *httptest.Server

	mu       sync.Mutex
	reqs     []otlpRequest
	statuses []int
	reply    string
}

type otlpRequest struct {
	method, path string
	header       http.Header
	body         []byte
}

func newCollector(t *testing.T, statuses ...int) *otlpCollector {
	t.Helper()
	c := &otlpCollector{statuses: statuses}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, otlpRequest{r.Method, r.URL.Path, r.Header.Clone(), body})
		status := http.StatusOK
		if len(c.statuses) > 0 {
			status, c.statuses = c.statuses[0], c.statuses[1:]
		}
		reply := c.reply
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, reply)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *otlpCollector) requests() []otlpRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]otlpRequest(nil), c.reqs...)
}

// spans returns every span the collector received, each with its resource and scope.
func (c *otlpCollector) spans(t *testing.T) []gjson.Result {
	t.Helper()
	var out []gjson.Result
	for _, r := range c.requests() {
		if !gjson.ValidBytes(r.body) {
			t.Fatalf("request body is not JSON: %s", r.body)
		}
		for _, rs := range gjson.GetBytes(r.body, "resourceSpans").Array() {
			for _, ss := range rs.Get("scopeSpans").Array() {
				out = append(out, ss.Get("spans").Array()...)
			}
		}
	}
	return out
}

// attr returns a span attribute's value object ({"stringValue": ...}, ...).
func attr(span gjson.Result, key string) gjson.Result {
	return span.Get(`attributes.#(key==` + strconv.Quote(key) + `).value`)
}

func TestSetupOTLP(t *testing.T) {
	t.Setenv("OTEL_SERVICE_NAME", "")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	col := newCollector(t)
	tr := mustSetup(t, Config{
		OTLPEndpoint: col.srv.URL + "/custom/v1/traces", ServiceName: "stoke-test", ServiceVersion: "0.9.0",
		Headers: map[string]string{"Authorization": "Bearer k", "x-tenant": "a b"},
	})
	tracer := tr.Tracer()
	pctx, parent := StartTurn(context.Background(), tracer, TurnInfo{SessionID: "s1", Agent: "parent", Turn: 1})
	sendCtx, sendCall := StartToolCall(pctx, tracer, "send_message", "call_send")
	turn := simulateTurn(context.Background(), tracer, TurnInfo{
		SessionID: "s1", Agent: "explorer", TaskID: "t_1", SubagentType: "explorer", Turn: 2, Continuation: "resident",
		Caller: SpanContextFrom(sendCtx),
	})
	EndToolCall(sendCall, true)
	_, failed := StartModelCall(pctx, tracer, "gpt-4o")
	EndModelCall(failed, llm.Usage{}, "", &llm.ProviderError{StatusCode: 529, Message: "overloaded"})
	_, misc := tracer.Start(pctx, "misc", oteltrace.WithAttributes(
		attribute.Bool("b", true), attribute.Float64("f", 0.5), attribute.Float64("nan", math.NaN()),
		attribute.Int64Slice("is", []int64{1, -2}), attribute.String("s", "quote \" and \x01")))
	misc.End()
	EndTurn(parent, "completed", nil)
	if n := len(col.requests()); n != 0 {
		t.Errorf("%d requests before Shutdown: spans should be batched", n)
	}
	shutdown(t, tr)

	reqs := col.requests()
	if len(reqs) == 0 {
		t.Fatal("Shutdown sent nothing to the collector")
	}
	for _, r := range reqs {
		if r.method != http.MethodPost || r.path != "/custom/v1/traces" || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("request %s %s (%s), want a JSON POST to the endpoint's path", r.method, r.path, r.header.Get("Content-Type"))
		}
		if r.header.Get("Authorization") != "Bearer k" || r.header.Get("X-Tenant") != "a b" {
			t.Errorf("request headers %v, want Config.Headers", r.header)
		}
		rs := gjson.GetBytes(r.body, "resourceSpans.0")
		if got := rs.Get(`resource.attributes.#(key=="service.name").value.stringValue`).String(); got != "stoke-test" {
			t.Errorf("service.name %q", got)
		}
		if got := rs.Get(`resource.attributes.#(key=="service.version").value.stringValue`).String(); got != "0.9.0" {
			t.Errorf("service.version %q", got)
		}
		if got := rs.Get("scopeSpans.0.scope"); got.Get("name").String() != ScopeName || got.Get("version").String() != "0.9.0" {
			t.Errorf("scope %s", got.Raw)
		}
	}

	spans := col.spans(t)
	byName := map[string][]gjson.Result{}
	for _, s := range spans {
		byName[s.Get("name").String()] = append(byName[s.Get("name").String()], s)
	}
	if len(spans) != 1+1+5+1+1 {
		t.Fatalf("got %d spans, want 9 (parent turn, send_message, explorer turn with 4 children, failed chat, misc)", len(spans))
	}
	hex := func(s string, n int) bool {
		_, err := strconv.ParseUint(s[:min(len(s), 16)], 16, 64)
		return len(s) == n && err == nil && s == strings.ToLower(s)
	}
	for _, s := range spans {
		if !hex(s.Get("traceId").String(), 32) || !hex(s.Get("spanId").String(), 16) {
			t.Errorf("%s: ids %s / %s, want lower-case hex", s.Get("name"), s.Get("traceId"), s.Get("spanId"))
		}
		start, end := s.Get("startTimeUnixNano"), s.Get("endTimeUnixNano")
		if start.Type != gjson.String || end.Type != gjson.String || start.Uint() == 0 || end.Uint() < start.Uint() {
			t.Errorf("%s: times %s..%s, want decimal strings in order", s.Get("name"), start.Raw, end.Raw)
		}
	}

	// The explorer turn: a root span linked to the send_message call, with its children.
	turnSpan := byName["invoke_agent explorer"]
	if len(turnSpan) != 1 {
		t.Fatalf("%d explorer turn spans", len(turnSpan))
	}
	ts := turnSpan[0]
	if ts.Get("traceId").String() != turn.TraceID().String() || ts.Get("spanId").String() != turn.SpanID().String() {
		t.Errorf("turn ids %s/%s, want %s/%s", ts.Get("traceId"), ts.Get("spanId"), turn.TraceID(), turn.SpanID())
	}
	if ts.Get("parentSpanId").Exists() {
		t.Errorf("turn span has parent %s, want a root", ts.Get("parentSpanId"))
	}
	if links := ts.Get("links").Array(); len(links) != 1 ||
		links[0].Get("traceId").String() != sendCall.SpanContext().TraceID().String() ||
		links[0].Get("spanId").String() != sendCall.SpanContext().SpanID().String() {
		t.Errorf("turn links %s, want the send_message call %s", ts.Get("links").Raw, sendCall.SpanContext().SpanID())
	}
	if v := attr(ts, string(AttrTurn)); v.Get("intValue").Type != gjson.String || v.Get("intValue").String() != "2" {
		t.Errorf("stoke.turn = %s, want {\"intValue\":\"2\"}", v.Raw)
	}
	if v := attr(ts, string(AttrContinuation)).Get("stringValue").String(); v != "resident" {
		t.Errorf("stoke.continuation = %q", v)
	}
	if ts.Get("kind").Int() != 1 {
		t.Errorf("turn kind %s, want 1 (internal)", ts.Get("kind"))
	}
	children := 0
	for _, s := range spans {
		if s.Get("traceId").String() == turn.TraceID().String() && s.Get("spanId").String() != turn.SpanID().String() {
			children++
			if s.Get("parentSpanId").String() != turn.SpanID().String() {
				t.Errorf("%s: parent %s, want the turn %s", s.Get("name"), s.Get("parentSpanId"), turn.SpanID())
			}
		}
	}
	if children != 4 {
		t.Errorf("the turn's trace holds %d children, want 4", children)
	}

	chat := byName["chat gpt-4o-mini"][0]
	if chat.Get("kind").Int() != 3 {
		t.Errorf("chat kind %s, want 3 (client)", chat.Get("kind"))
	}
	if v := attr(chat, string(AttrFinishReasons)).Get("arrayValue.values.0.stringValue"); v.String() == "" {
		t.Errorf("finish reasons %s, want an array of strings", attr(chat, string(AttrFinishReasons)).Raw)
	}
	if st := chat.Get("status"); st.Get("code").Int() != 0 {
		t.Errorf("ok chat status %s, want unset", st.Raw)
	}
	send := byName["execute_tool send_message"][0]
	if st := send.Get("status"); st.Get("code").Int() != 2 || st.Get("message").String() == "" {
		t.Errorf("failed tool status %s, want code 2 with a message", st.Raw)
	}
	fail := byName["chat gpt-4o"][0]
	if st := fail.Get("status"); st.Get("code").Int() != 2 || !strings.Contains(st.Get("message").String(), "overloaded") {
		t.Errorf("failed chat status %s", st.Raw)
	}
	if ev := fail.Get(`events.#(name=="exception")`); !ev.Exists() || ev.Get("timeUnixNano").Type != gjson.String ||
		!strings.Contains(attr(ev, "exception.message").Get("stringValue").String(), "overloaded") {
		t.Errorf("failed chat events %s, want an exception event", fail.Get("events").Raw)
	}
	if v := attr(fail, string(AttrErrorType)).Get("stringValue").String(); v != "529" {
		t.Errorf("error.type %q", v)
	}

	m := byName["misc"][0]
	for key, want := range map[string]string{
		"b":   `{"boolValue":true}`,
		"f":   `{"doubleValue":0.5}`,
		"nan": `{"doubleValue":"NaN"}`,
		"is":  `{"arrayValue":{"values":[{"intValue":"1"},{"intValue":"-2"}]}}`,
		"s":   `{"stringValue":"quote \" and \u0001"}`,
	} {
		if got := attr(m, key).Raw; got != want {
			t.Errorf("attribute %s = %s, want %s", key, got, want)
		}
	}
}

func TestSetupBoth(t *testing.T) {
	col := newCollector(t)
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	tr := mustSetup(t, Config{OTLPEndpoint: col.srv.URL + "/v1/traces", File: path})
	_, span := StartModelCall(context.Background(), tr.Tracer(), "gpt-4o")
	EndModelCall(span, llm.Usage{InputTokens: 1}, llm.StopEndTurn, nil)
	shutdown(t, tr)
	if n := len(col.spans(t)); n != 1 {
		t.Errorf("the collector got %d spans, want 1", n)
	}
	if n := len(readSpans(t, path)); n != 1 {
		t.Errorf("the file holds %d spans, want 1", n)
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

// newTestExporter returns an exporter to url with short delays, shut down at cleanup.
func newTestExporter(t *testing.T, url string) *otlpExporter {
	t.Helper()
	exp := newOTLPExporter(url, nil)
	exp.backoff = time.Millisecond
	t.Cleanup(func() { _ = exp.Shutdown(context.Background()) })
	return exp
}

func TestOTLPExportErrors(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		reply    string
		want     string // in the error, "" for none
		requests int
	}{
		{"ok", nil, "{}", "", 1},
		{"ok with a protobuf or empty answer", nil, "\x00\x01", "", 1},
		{"server error", []int{500}, `{"code":13,"message":"disk full"}`, "500 Internal Server Error from http://", 1},
		{"bad request", []int{400}, "not json at all", "not json at all", 1},
		{"retried", []int{503, 429, 502}, "{}", "", 4},
		{"retries give up", []int{503, 503, 503, 503, 503, 503}, "", "503 Service Unavailable", otlpMaxAttempts},
		{"partial success", nil, `{"partialSuccess":{"rejectedSpans":"2","errorMessage":"too old"}}`, "rejected 2 spans: too old", 1},
		{"partial success, none rejected", nil, `{"partialSuccess":{}}`, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			col := newCollector(t, tt.statuses...)
			col.reply = tt.reply
			exp := newTestExporter(t, col.srv.URL+"/v1/traces")
			err := exp.ExportSpans(context.Background(), testSpans(3))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("ExportSpans: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("ExportSpans = %v, want an error with %q", err, tt.want)
			}
			if n := len(col.requests()); n != tt.requests {
				t.Errorf("%d requests, want %d", n, tt.requests)
			}
			if n := len(col.spans(t)) / len(col.requests()); n != 3 {
				t.Errorf("%d spans per request, want 3", n)
			}
		})
	}
}

func TestOTLPExportUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/v1/traces"
	srv.Close() // nothing listens there any more
	exp := newTestExporter(t, url)
	exp.timeout = 200 * time.Millisecond
	if err := exp.ExportSpans(context.Background(), testSpans(1)); err == nil {
		t.Error("ExportSpans to a closed port succeeded")
	}
}

func TestOTLPExportCancelled(t *testing.T) {
	col := newCollector(t, 503, 503, 503, 503, 503)
	exp := newTestExporter(t, col.srv.URL)
	exp.backoff = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := exp.ExportSpans(ctx, testSpans(1)); err == nil || !strings.Contains(err.Error(), "503") {
		t.Errorf("ExportSpans = %v, want the 503", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("ExportSpans took %v past its context", d)
	}
	if n := len(col.requests()); n != 1 {
		t.Errorf("%d requests, want 1 (no time left to retry)", n)
	}
}

func TestOTLPShutdown(t *testing.T) {
	col := newCollector(t)
	exp := newTestExporter(t, col.srv.URL)
	if err := exp.ExportSpans(context.Background(), nil); err != nil || len(col.requests()) != 0 {
		t.Errorf("exporting no spans: %v, %d requests", err, len(col.requests()))
	}
	if err := exp.ExportSpans(context.Background(), testSpans(1)); err != nil {
		t.Fatal(err)
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), testSpans(1)); !errors.Is(err, errExporterStopped) {
		t.Errorf("ExportSpans after Shutdown = %v", err)
	}
}

func TestHeadersFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want map[string]string
	}{
		{"none", nil, nil},
		{"blank", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": " "}, nil},
		{"pairs", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "api-key=s3cr%3Dt, Authorization = Bearer%20x%2Cy "},
			map[string]string{"api-key": "s3cr=t", "Authorization": "Bearer x,y"}},
		{"malformed pairs skipped", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "novalue,bad key=1,k=%zz,ok=1,=2,nl=a%0Ab"},
			map[string]string{"ok": "1"}},
		{"traces wins", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "b=2"},
			map[string]string{"b": "2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			got := HeadersFromEnv(lookup)
			if len(got) != len(tt.want) || (got == nil) != (tt.want == nil) {
				t.Fatalf("HeadersFromEnv = %q, want %q", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("HeadersFromEnv = %q, want %q", got, tt.want)
				}
			}
		})
	}
}
