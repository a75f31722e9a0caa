package trace

import (
	"math"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

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
