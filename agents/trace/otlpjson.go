package trace

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// otlpExporter is an sdktrace.SpanExporter that POSTs spans to an OTLP/HTTP endpoint in
// the JSON encoding (Content-Type application/json, an ExportTraceServiceRequest in the
// protobuf JSON mapping, ids as hex strings). It stands in for the SDK's otlptracehttp,
// whose protobuf and gRPC dependencies cost every run start-up time, traced or not.
//
// One export, retries included, is bounded by timeout. 429, 502, 503 and 504 answers and
// transport errors are retried with a doubling delay (or the answer's Retry-After), as
// the OTLP specification asks; any other failure is returned at once.
type otlpExporter struct {
	url       string
	header    http.Header // sent with every request (Config.Headers)
	transport *http.Transport
	client    *http.Client
	timeout   time.Duration // bound of one ExportSpans, retries included
	backoff   time.Duration // delay before the first retry, doubled after each

	stopped atomic.Bool
}

const (
	otlpTimeout     = 10 * time.Second
	otlpBackoff     = 500 * time.Millisecond
	otlpMaxAttempts = 5
)

var errExporterStopped = errors.New("OTLP exporter is shut down")

// newOTLPExporter returns an exporter that POSTs to endpointURL, a full URL whose path is
// used as is, with headers added to each request. It connects at the first export.
func newOTLPExporter(endpointURL string, headers map[string]string) *otlpExporter {
	var transport *http.Transport
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		transport = t.Clone() // proxy from the environment, dial and TLS timeouts
	} else {
		transport = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	header := make(http.Header, len(headers)+2)
	header.Set("User-Agent", "stoke-otlp-json")
	for k, v := range headers {
		header.Set(k, v)
	}
	header.Set("Content-Type", "application/json")
	return &otlpExporter{
		url:       endpointURL,
		header:    header,
		transport: transport,
		client:    &http.Client{Transport: transport},
		timeout:   otlpTimeout,
		backoff:   otlpBackoff,
	}
}

// checkHeaders reports a header that no HTTP request can carry.
func checkHeaders(headers map[string]string) error {
	for k, v := range headers {
		if err := checkHeader(k, v); err != nil {
			return err
		}
	}
	return nil
}

func checkHeader(name, value string) error {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return fmt.Errorf("OTLP header name %q: want an HTTP token", name)
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Errorf("OTLP header %s: the value holds a line break or NUL", name)
	}
	return nil
}

// isTokenChar reports whether r may appear in an HTTP header name (RFC 9110 tchar).
func isTokenChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return r < 0x80 && strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// ExportSpans sends spans in one request. It returns an error when the collector does not
// take them all; the batch span processor hands it to OpenTelemetry's error handler.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() {
		return errExporterStopped
	}
	if len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(encodeSpans(spans))
	if err != nil {
		return fmt.Errorf("OTLP export: encoding %d spans: %w", len(spans), err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	delay := e.backoff
	for attempt := 1; ; attempt++ {
		retryAfter, err := e.post(ctx, body)
		if err == nil || retryAfter < 0 || attempt == otlpMaxAttempts {
			return err
		}
		wait := max(delay, retryAfter)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return err
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return err
		case <-timer.C:
		}
		delay *= 2
	}
}

// post sends body once. On failure it also says whether to retry: after the returned
// delay (0 for the exporter's own backoff), or never when negative.
func (e *otlpExporter) post(ctx context.Context, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return -1, fmt.Errorf("OTLP export: %w", err)
	}
	req.Header = e.header.Clone()
	resp, err := e.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return -1, fmt.Errorf("OTLP export: %w", err)
		}
		return 0, fmt.Errorf("OTLP export: %w", err)
	}
	defer resp.Body.Close()
	reply, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)) // so the connection is reused
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return -1, partialSuccess(reply)
	}
	err = fmt.Errorf("OTLP export: %s from %s%s", resp.Status, e.url, replyMessage(reply))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return retryAfter(resp.Header.Get("Retry-After")), err
	}
	return -1, err
}

// partialSuccess returns an error when a successful answer says that spans were rejected
// (an ExportTraceServiceResponse with partialSuccess set). A body that is not JSON (or is
// empty) is a plain success.
func partialSuccess(reply []byte) error {
	var r struct {
		PartialSuccess struct {
			RejectedSpans json.RawMessage // int64: a string, or a number from lax servers
			ErrorMessage  string
		}
	}
	if json.Unmarshal(reply, &r) != nil {
		return nil
	}
	n := strings.Trim(string(r.PartialSuccess.RejectedSpans), `"`)
	if n == "0" || n == "null" {
		n = ""
	}
	if n == "" && r.PartialSuccess.ErrorMessage == "" {
		return nil
	}
	if n == "" {
		n = "no"
	}
	return fmt.Errorf("OTLP export: the collector rejected %s spans: %s", n, r.PartialSuccess.ErrorMessage)
}

// replyMessage is the part of an error answer worth reporting: the message of a
// google.rpc.Status, else the start of the body.
func replyMessage(reply []byte) string {
	var status struct{ Message string }
	msg := ""
	if json.Unmarshal(reply, &status) == nil && status.Message != "" {
		msg = status.Message
	} else {
		msg = strings.ToValidUTF8(strings.TrimSpace(string(reply)), "?")
	}
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// retryAfter parses a Retry-After header given in seconds (0 when absent or a date).
func retryAfter(v string) time.Duration {
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s > 0 {
		return time.Duration(s) * time.Second
	}
	return 0
}

// Shutdown releases the exporter's idle connections; later exports fail.
func (e *otlpExporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.transport.CloseIdleConnections()
	return nil
}

// The OTLP JSON encoding of an ExportTraceServiceRequest
// (opentelemetry/proto/collector/trace/v1): the protobuf JSON mapping with lowerCamelCase
// names, 64-bit integers as decimal strings, enums as numbers, and trace and span ids as
// lower-case hex rather than base64.
type (
	otlpTraceRequest struct {
		ResourceSpans []*otlpResourceSpans `json:"resourceSpans"`
	}
	otlpResourceSpans struct {
		Resource   otlpResource      `json:"resource"`
		ScopeSpans []*otlpScopeSpans `json:"scopeSpans"`
		SchemaURL  string            `json:"schemaUrl,omitempty"`
	}
	otlpResource struct {
		Attributes []otlpKeyValue `json:"attributes,omitempty"`
	}
	otlpScopeSpans struct {
		Scope     otlpScope  `json:"scope"`
		Spans     []otlpSpan `json:"spans"`
		SchemaURL string     `json:"schemaUrl,omitempty"`
	}
	otlpScope struct {
		Name       string         `json:"name,omitempty"`
		Version    string         `json:"version,omitempty"`
		Attributes []otlpKeyValue `json:"attributes,omitempty"`
	}
	otlpSpan struct {
		TraceID                string         `json:"traceId"`
		SpanID                 string         `json:"spanId"`
		TraceState             string         `json:"traceState,omitempty"`
		ParentSpanID           string         `json:"parentSpanId,omitempty"`
		Flags                  uint32         `json:"flags"`
		Name                   string         `json:"name"`
		Kind                   int            `json:"kind"`
		StartTimeUnixNano      string         `json:"startTimeUnixNano"`
		EndTimeUnixNano        string         `json:"endTimeUnixNano"`
		Attributes             []otlpKeyValue `json:"attributes,omitempty"`
		DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
		Events                 []otlpEvent    `json:"events,omitempty"`
		DroppedEventsCount     uint32         `json:"droppedEventsCount,omitempty"`
		Links                  []otlpLink     `json:"links,omitempty"`
		DroppedLinksCount      uint32         `json:"droppedLinksCount,omitempty"`
		Status                 otlpStatus     `json:"status"`
	}
	otlpEvent struct {
		TimeUnixNano           string         `json:"timeUnixNano"`
		Name                   string         `json:"name"`
		Attributes             []otlpKeyValue `json:"attributes,omitempty"`
		DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
	}
	otlpLink struct {
		TraceID                string         `json:"traceId"`
		SpanID                 string         `json:"spanId"`
		TraceState             string         `json:"traceState,omitempty"`
		Attributes             []otlpKeyValue `json:"attributes,omitempty"`
		DroppedAttributesCount uint32         `json:"droppedAttributesCount,omitempty"`
		Flags                  uint32         `json:"flags"`
	}
	otlpStatus struct {
		Message string `json:"message,omitempty"`
		Code    int    `json:"code"` // 0 unset, 1 ok, 2 error
	}
	otlpKeyValue struct {
		Key   string       `json:"key"`
		Value otlpAnyValue `json:"value"`
	}
	// otlpAnyValue sets one field, or none for an empty value.
	otlpAnyValue struct {
		StringValue *string         `json:"stringValue,omitempty"`
		BoolValue   *bool           `json:"boolValue,omitempty"`
		IntValue    string          `json:"intValue,omitempty"`
		DoubleValue any             `json:"doubleValue,omitempty"` // float64, or "NaN", "Infinity", "-Infinity"
		BytesValue  *[]byte         `json:"bytesValue,omitempty"`  // base64
		ArrayValue  *otlpArrayValue `json:"arrayValue,omitempty"`
		KvlistValue *otlpKvlist     `json:"kvlistValue,omitempty"`
	}
	otlpArrayValue struct {
		Values []otlpAnyValue `json:"values"`
	}
	otlpKvlist struct {
		Values []otlpKeyValue `json:"values"`
	}
)

// encodeSpans groups spans by resource, then by instrumentation scope.
func encodeSpans(spans []sdktrace.ReadOnlySpan) *otlpTraceRequest {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	req := &otlpTraceRequest{}
	byResource := map[attribute.Distinct]*otlpResourceSpans{}
	byScope := map[scopeKey]*otlpScopeSpans{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		res := s.Resource()
		rk := res.Equivalent() // nil-safe
		rs := byResource[rk]
		if rs == nil {
			rs = &otlpResourceSpans{Resource: otlpResource{Attributes: encodeAttrs(res.Attributes())}, SchemaURL: res.SchemaURL()}
			byResource[rk] = rs
			req.ResourceSpans = append(req.ResourceSpans, rs)
		}
		scope := s.InstrumentationScope()
		sk := scopeKey{rk, scope}
		ss := byScope[sk]
		if ss == nil {
			ss = &otlpScopeSpans{
				Scope:     otlpScope{Name: scope.Name, Version: scope.Version, Attributes: encodeAttrs(scope.Attributes.ToSlice())},
				SchemaURL: scope.SchemaURL,
			}
			byScope[sk] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, encodeSpan(s))
	}
	return req
}

func encodeSpan(s sdktrace.ReadOnlySpan) otlpSpan {
	sc, parent := s.SpanContext(), s.Parent()
	out := otlpSpan{
		TraceID:                sc.TraceID().String(),
		SpanID:                 sc.SpanID().String(),
		TraceState:             sc.TraceState().String(),
		Flags:                  spanFlags(sc.TraceFlags(), parent.IsRemote()),
		Name:                   s.Name(),
		Kind:                   spanKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             encodeAttrs(s.Attributes()),
		DroppedAttributesCount: clampUint32(s.DroppedAttributes()),
		DroppedEventsCount:     clampUint32(s.DroppedEvents()),
		DroppedLinksCount:      clampUint32(s.DroppedLinks()),
	}
	if parent.SpanID().IsValid() {
		out.ParentSpanID = parent.SpanID().String()
	}
	for _, ev := range s.Events() {
		out.Events = append(out.Events, otlpEvent{
			TimeUnixNano:           unixNano(ev.Time),
			Name:                   ev.Name,
			Attributes:             encodeAttrs(ev.Attributes),
			DroppedAttributesCount: clampUint32(ev.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		out.Links = append(out.Links, otlpLink{
			TraceID:                l.SpanContext.TraceID().String(),
			SpanID:                 l.SpanContext.SpanID().String(),
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             encodeAttrs(l.Attributes),
			DroppedAttributesCount: clampUint32(l.DroppedAttributeCount),
			Flags:                  spanFlags(l.SpanContext.TraceFlags(), l.SpanContext.IsRemote()),
		})
	}
	switch st := s.Status(); st.Code {
	case codes.Ok:
		out.Status.Code = 1
	case codes.Error:
		out.Status = otlpStatus{Code: 2, Message: st.Description}
	}
	return out
}

// spanFlags are the W3C trace flags plus OTLP's "whether the parent is remote is known"
// bit (0x100) and "the parent is remote" bit (0x200).
func spanFlags(tf oteltrace.TraceFlags, remote bool) uint32 {
	flags := uint32(tf) | 0x100
	if remote {
		flags |= 0x200
	}
	return flags
}

// spanKind maps a span kind to OTLP's enum, which numbers them alike.
func spanKind(k oteltrace.SpanKind) int {
	if k < oteltrace.SpanKindInternal || k > oteltrace.SpanKindConsumer {
		return 0
	}
	return int(k)
}

func unixNano(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(max(0, t.UnixNano()), 10)
}

func clampUint32(n int) uint32 {
	return uint32(min(max(n, 0), math.MaxUint32))
}

func encodeAttrs(kvs []attribute.KeyValue) []otlpKeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]otlpKeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = otlpKeyValue{Key: string(kv.Key), Value: encodeValue(kv.Value)}
	}
	return out
}

func encodeValue(v attribute.Value) otlpAnyValue {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return otlpAnyValue{BoolValue: &b}
	case attribute.INT64:
		return otlpAnyValue{IntValue: strconv.FormatInt(v.AsInt64(), 10)}
	case attribute.FLOAT64:
		return otlpAnyValue{DoubleValue: encodeDouble(v.AsFloat64())}
	case attribute.STRING:
		s := v.AsString()
		return otlpAnyValue{StringValue: &s}
	case attribute.BYTESLICE:
		b := v.AsByteSlice()
		return otlpAnyValue{BytesValue: &b}
	case attribute.BOOLSLICE:
		return encodeArray(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return encodeArray(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return encodeArray(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return encodeArray(v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		return encodeArray(v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		return otlpAnyValue{KvlistValue: &otlpKvlist{Values: encodeAttrs(v.AsMap())}}
	case attribute.EMPTY:
		return otlpAnyValue{}
	}
	s := "INVALID" // a type newer than this encoder, as the SDK's own exporter does
	return otlpAnyValue{StringValue: &s}
}

func encodeArray[T any](vals []T, value func(T) attribute.Value) otlpAnyValue {
	arr := &otlpArrayValue{Values: make([]otlpAnyValue, len(vals))}
	for i, v := range vals {
		arr.Values[i] = encodeValue(value(v))
	}
	return otlpAnyValue{ArrayValue: arr}
}

// encodeDouble returns f, or the protobuf JSON string for a value JSON has no number for.
func encodeDouble(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return f
}
