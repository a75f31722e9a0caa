package trace

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// otlpCollector is an httptest OTLP/HTTP receiver that records the requests it gets and
// answers with the statuses it is given (200 once they run out).
type otlpCollector struct {
	srv *httptest.Server

	mu       sync.Mutex
	reqs     []otlpRequest
	statuses []int
	reply    string
	replyCT  string
}

type otlpRequest struct {
	method, path string
	header       http.Header
	body         []byte
}

func newCollector(t *testing.T, statuses ...int) *otlpCollector {
	t.Helper()
	c := &otlpCollector{statuses: statuses, replyCT: "application/json"}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c.mu.Lock()
		c.reqs = append(c.reqs, otlpRequest{r.Method, r.URL.Path, r.Header.Clone(), body})
		status := http.StatusOK
		if len(c.statuses) > 0 {
			status, c.statuses = c.statuses[0], c.statuses[1:]
		}
		reply, ct := c.reply, c.replyCT
		c.mu.Unlock()
		w.Header().Set("Content-Type", ct)
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

// decodeTraces decodes an OTLP/HTTP traces body with the official types: protobuf, or
// JSON through protojson. OTLP JSON writes ids as hex where protojson expects base64;
// fixJSONIDs undoes what protojson made of them.
func decodeTraces(t *testing.T, body []byte, contentType string) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	req := &coltracepb.ExportTraceServiceRequest{}
	switch contentType {
	case "application/x-protobuf":
		if err := proto.Unmarshal(body, req); err != nil {
			t.Fatalf("protobuf body does not decode: %v", err)
		}
	case "application/json":
		if err := protojson.Unmarshal(body, req); err != nil {
			t.Fatalf("JSON body does not decode with protojson: %v\n%s", err, body)
		}
		fixJSONIDs(t, req)
	default:
		t.Fatalf("content type %q", contentType)
	}
	return req
}

// fixJSONIDs turns the ids protojson decoded as base64 back into the hex they were
// written as, and checks that they were lower-case hex of the right length.
func fixJSONIDs(t *testing.T, req *coltracepb.ExportTraceServiceRequest) {
	t.Helper()
	fix := func(id []byte, n int) []byte {
		if len(id) == 0 {
			return id
		}
		s := base64.StdEncoding.EncodeToString(id)
		raw, err := hex.DecodeString(s)
		if err != nil || len(raw) != n || s != string(bytes.ToLower([]byte(s))) {
			t.Fatalf("id %q is not %d bytes of lower-case hex", s, n)
		}
		return raw
	}
	for _, s := range allSpans(req) {
		s.TraceId, s.SpanId, s.ParentSpanId = fix(s.TraceId, 16), fix(s.SpanId, 8), fix(s.ParentSpanId, 8)
		for _, l := range s.Links {
			l.TraceId, l.SpanId = fix(l.TraceId, 16), fix(l.SpanId, 8)
		}
	}
}

func allSpans(req *coltracepb.ExportTraceServiceRequest) []*tracepb.Span {
	var out []*tracepb.Span
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			out = append(out, ss.Spans...)
		}
	}
	return out
}

// readTraceFile decodes every line of a --trace-file as one ExportTraceServiceRequest.
func readTraceFile(t *testing.T, path string) []*coltracepb.ExportTraceServiceRequest {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*coltracepb.ExportTraceServiceRequest
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		out = append(out, decodeTraces(t, sc.Bytes(), "application/json"))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func decodeMetrics(t *testing.T, body []byte, contentType string) *colmetricspb.ExportMetricsServiceRequest {
	t.Helper()
	req := &colmetricspb.ExportMetricsServiceRequest{}
	var err error
	if contentType == "application/x-protobuf" {
		err = proto.Unmarshal(body, req)
	} else {
		err = protojson.Unmarshal(body, req)
	}
	if err != nil {
		t.Fatalf("metrics body (%s) does not decode: %v", contentType, err)
	}
	return req
}

// kv returns the attributes as a map of their values.
func kv(attrs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	out := make(map[string]*commonpb.AnyValue, len(attrs))
	for _, a := range attrs {
		out[a.Key] = a.Value
	}
	return out
}

func byName(spans []*tracepb.Span) map[string][]*tracepb.Span {
	out := map[string][]*tracepb.Span{}
	for _, s := range spans {
		out[s.Name] = append(out[s.Name], s)
	}
	return out
}
