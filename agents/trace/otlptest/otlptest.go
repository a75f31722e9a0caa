// Package otlptest decodes what stoke exports (OTLP/HTTP bodies, --trace-file lines) with
// the official OTLP types, for tests. stoke itself never imports it: the protobuf runtime
// stays out of the binary.
package otlptest

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"testing"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Content types of OTLP/HTTP bodies.
const (
	Protobuf = "application/x-protobuf"
	JSON     = "application/json"
)

// DecodeTraces decodes an ExportTraceServiceRequest: protobuf, or OTLP JSON through
// protojson. OTLP JSON writes trace and span ids as hex where protojson expects base64;
// the ids protojson decoded are turned back into the bytes the hex says, after checking
// that they were lower-case hex of the right length.
func DecodeTraces(t testing.TB, body []byte, contentType string) *coltracepb.ExportTraceServiceRequest {
	t.Helper()
	req := &coltracepb.ExportTraceServiceRequest{}
	switch contentType {
	case Protobuf:
		if err := proto.Unmarshal(body, req); err != nil {
			t.Fatalf("protobuf traces do not decode: %v", err)
		}
	case JSON:
		if err := protojson.Unmarshal(body, req); err != nil {
			t.Fatalf("JSON traces do not decode with protojson: %v\n%s", err, body)
		}
		fixJSONIDs(t, req)
	default:
		t.Fatalf("content type %q", contentType)
	}
	return req
}

func fixJSONIDs(t testing.TB, req *coltracepb.ExportTraceServiceRequest) {
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
	for _, s := range Spans(req) {
		s.TraceId, s.SpanId, s.ParentSpanId = fix(s.TraceId, 16), fix(s.SpanId, 8), fix(s.ParentSpanId, 8)
		for _, l := range s.Links {
			l.TraceId, l.SpanId = fix(l.TraceId, 16), fix(l.SpanId, 8)
		}
	}
}

// ReadTraceFile decodes every line of a --trace-file as one ExportTraceServiceRequest.
func ReadTraceFile(t testing.TB, path string) []*coltracepb.ExportTraceServiceRequest {
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
		out = append(out, DecodeTraces(t, sc.Bytes(), JSON))
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// DecodeMetrics decodes an ExportMetricsServiceRequest, protobuf or JSON.
func DecodeMetrics(t testing.TB, body []byte, contentType string) *colmetricspb.ExportMetricsServiceRequest {
	t.Helper()
	req := &colmetricspb.ExportMetricsServiceRequest{}
	var err error
	if contentType == Protobuf {
		err = proto.Unmarshal(body, req)
	} else {
		err = protojson.Unmarshal(body, req)
	}
	if err != nil {
		t.Fatalf("metrics (%s) do not decode: %v", contentType, err)
	}
	return req
}

// Spans returns every span of req.
func Spans(req *coltracepb.ExportTraceServiceRequest) []*tracepb.Span {
	var out []*tracepb.Span
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			out = append(out, ss.Spans...)
		}
	}
	return out
}

// Attrs returns attributes by key.
func Attrs(attrs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	out := make(map[string]*commonpb.AnyValue, len(attrs))
	for _, a := range attrs {
		out[a.Key] = a.Value
	}
	return out
}
