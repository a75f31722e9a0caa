package trace

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The protobuf encoding of OTLP requests (opentelemetry/proto), written by hand: the few
// messages stoke sends do not justify google.golang.org/protobuf and the generated OTLP
// types in every binary. The tests decode what it writes with the official types.
//
// Field numbers are those of opentelemetry-proto v1; zero values are left out, as proto3
// does.

// Wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// pb appends protobuf fields to a byte slice.
type pb []byte

func (b *pb) tag(field, wire int) { *b = binary.AppendUvarint(*b, uint64(field)<<3|uint64(wire)) }

func (b *pb) uvarint(field int, v uint64) {
	if v != 0 {
		b.tag(field, wireVarint)
		*b = binary.AppendUvarint(*b, v)
	}
}

// int64 writes an int64 field (two's complement varint).
func (b *pb) int64(field int, v int64) { b.uvarint(field, uint64(v)) }

func (b *pb) fixed64(field int, v uint64) {
	if v != 0 {
		b.tag(field, wireFixed64)
		*b = binary.LittleEndian.AppendUint64(*b, v)
	}
}

func (b *pb) fixed32(field int, v uint32) {
	if v != 0 {
		b.tag(field, wireFixed32)
		*b = binary.LittleEndian.AppendUint32(*b, v)
	}
}

func (b *pb) bytes(field int, p []byte) {
	if len(p) > 0 {
		b.tag(field, wireBytes)
		*b = binary.AppendUvarint(*b, uint64(len(p)))
		*b = append(*b, p...)
	}
}

func (b *pb) string(field int, s string) {
	if s != "" {
		b.tag(field, wireBytes)
		*b = binary.AppendUvarint(*b, uint64(len(s)))
		*b = append(*b, s...)
	}
}

// message writes a nested message, even an empty one (a set oneof or a present
// sub-message), built by fill.
func (b *pb) message(field int, fill func(*pb)) {
	var m pb
	fill(&m)
	b.tag(field, wireBytes)
	*b = binary.AppendUvarint(*b, uint64(len(m)))
	*b = append(*b, m...)
}

// encodeSpansProto returns the protobuf ExportTraceServiceRequest of spans, grouped by
// resource and then by instrumentation scope, as encodeSpans does for JSON.
func encodeSpansProto(spans []sdktrace.ReadOnlySpan) []byte {
	type scopeKey struct {
		res   attribute.Distinct
		scope instrumentation.Scope
	}
	type scopeGroup struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resourceGroup struct {
		span   sdktrace.ReadOnlySpan // one of its spans, for the resource
		scopes []*scopeGroup
	}
	var order []*resourceGroup
	byResource := map[attribute.Distinct]*resourceGroup{}
	byScope := map[scopeKey]*scopeGroup{}
	for _, s := range spans {
		if s == nil {
			continue
		}
		rk := s.Resource().Equivalent()
		rg := byResource[rk]
		if rg == nil {
			rg = &resourceGroup{span: s}
			byResource[rk] = rg
			order = append(order, rg)
		}
		sk := scopeKey{rk, s.InstrumentationScope()}
		sg := byScope[sk]
		if sg == nil {
			sg = &scopeGroup{scope: sk.scope}
			byScope[sk] = sg
			rg.scopes = append(rg.scopes, sg)
		}
		sg.spans = append(sg.spans, s)
	}
	var out pb
	for _, rg := range order {
		out.message(1, func(rs *pb) {
			res := rg.span.Resource()
			rs.message(1, func(r *pb) { protoAttrs(r, 1, res.Attributes()) })
			for _, sg := range rg.scopes {
				rs.message(2, func(ss *pb) {
					ss.message(1, func(sc *pb) { protoScope(sc, sg.scope) })
					for _, s := range sg.spans {
						ss.message(2, func(sp *pb) { protoSpan(sp, s) })
					}
					ss.string(3, sg.scope.SchemaURL)
				})
			}
			rs.string(3, res.SchemaURL())
		})
	}
	return out
}

func protoScope(b *pb, scope instrumentation.Scope) {
	b.string(1, scope.Name)
	b.string(2, scope.Version)
	protoAttrs(b, 3, scope.Attributes.ToSlice())
}

func protoSpan(b *pb, s sdktrace.ReadOnlySpan) {
	sc, parent := s.SpanContext(), s.Parent()
	tid, sid := sc.TraceID(), sc.SpanID()
	b.bytes(1, tid[:])
	b.bytes(2, sid[:])
	b.string(3, sc.TraceState().String())
	if parent.SpanID().IsValid() {
		psid := parent.SpanID()
		b.bytes(4, psid[:])
	}
	b.string(5, s.Name())
	b.uvarint(6, uint64(spanKind(s.SpanKind())))
	b.fixed64(7, protoTime(s.StartTime().UnixNano()))
	b.fixed64(8, protoTime(s.EndTime().UnixNano()))
	protoAttrs(b, 9, s.Attributes())
	b.uvarint(10, uint64(clampUint32(s.DroppedAttributes())))
	for _, ev := range s.Events() {
		b.message(11, func(e *pb) {
			e.fixed64(1, protoTime(ev.Time.UnixNano()))
			e.string(2, ev.Name)
			protoAttrs(e, 3, ev.Attributes)
			e.uvarint(4, uint64(clampUint32(ev.DroppedAttributeCount)))
		})
	}
	b.uvarint(12, uint64(clampUint32(s.DroppedEvents())))
	for _, l := range s.Links() {
		b.message(13, func(lb *pb) {
			ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
			lb.bytes(1, ltid[:])
			lb.bytes(2, lsid[:])
			lb.string(3, l.SpanContext.TraceState().String())
			protoAttrs(lb, 4, l.Attributes)
			lb.uvarint(5, uint64(clampUint32(l.DroppedAttributeCount)))
			lb.fixed32(6, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext.IsRemote()))
		})
	}
	b.uvarint(14, uint64(clampUint32(s.DroppedLinks())))
	st := s.Status()
	b.message(15, func(sb *pb) { // always present, as in the JSON encoding
		switch st.Code {
		case codes.Error:
			sb.string(2, st.Description)
			sb.uvarint(3, 2)
		case codes.Ok:
			sb.uvarint(3, 1)
		}
	})
	b.fixed32(16, spanFlags(sc.TraceFlags(), parent.IsRemote()))
}

func protoTime(ns int64) uint64 { return uint64(max(ns, 0)) }

// protoAttrs writes kvs as repeated KeyValue field number field.
func protoAttrs(b *pb, field int, kvs []attribute.KeyValue) {
	for _, kv := range kvs {
		b.message(field, func(m *pb) {
			m.string(1, string(kv.Key))
			m.message(2, func(v *pb) { protoValue(v, kv.Value) })
		})
	}
}

// protoValue writes the fields of an AnyValue (none for an empty value).
func protoValue(b *pb, v attribute.Value) {
	switch v.Type() {
	case attribute.BOOL:
		b.tag(2, wireVarint) // written even when false: the oneof is set
		if v.AsBool() {
			*b = append(*b, 1)
		} else {
			*b = append(*b, 0)
		}
	case attribute.INT64:
		b.tag(3, wireVarint)
		*b = binary.AppendUvarint(*b, uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b.tag(4, wireFixed64)
		*b = binary.LittleEndian.AppendUint64(*b, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		s := v.AsString()
		b.tag(1, wireBytes)
		*b = binary.AppendUvarint(*b, uint64(len(s)))
		*b = append(*b, s...)
	case attribute.BYTESLICE:
		p := v.AsByteSlice()
		b.tag(7, wireBytes)
		*b = binary.AppendUvarint(*b, uint64(len(p)))
		*b = append(*b, p...)
	case attribute.BOOLSLICE:
		protoArray(b, v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		protoArray(b, v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		protoArray(b, v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		protoArray(b, v.AsStringSlice(), attribute.StringValue)
	case attribute.SLICE:
		protoArray(b, v.AsSlice(), func(v attribute.Value) attribute.Value { return v })
	case attribute.MAP:
		b.message(6, func(kl *pb) { protoAttrs(kl, 1, v.AsMap()) })
	case attribute.EMPTY:
	default:
		b.string(1, "INVALID")
	}
}

func protoArray[T any](b *pb, vals []T, value func(T) attribute.Value) {
	b.message(5, func(arr *pb) {
		for _, v := range vals {
			arr.message(1, func(av *pb) { protoValue(av, value(v)) })
		}
	})
}

// protoField returns the last length-delimited field number field of msg.
func protoField(msg []byte, field int) ([]byte, bool) {
	var (
		out   []byte
		found bool
	)
	protoScan(msg, func(f, wire int, v uint64, p []byte) {
		if f == field && wire == wireBytes {
			out, found = p, true
		}
	})
	return out, found
}

func protoString(msg []byte, field int) (string, bool) {
	p, ok := protoField(msg, field)
	return string(p), ok
}

func protoVarint(msg []byte, field int) (uint64, bool) {
	var (
		out   uint64
		found bool
	)
	protoScan(msg, func(f, wire int, v uint64, _ []byte) {
		if f == field && wire == wireVarint {
			out, found = v, true
		}
	})
	return out, found
}

// protoScan calls fn for each top-level field of msg, stopping at the first malformed one.
func protoScan(msg []byte, fn func(field, wire int, v uint64, p []byte)) {
	for len(msg) > 0 {
		key, n := binary.Uvarint(msg)
		if n <= 0 {
			return
		}
		msg = msg[n:]
		field, wire := int(key>>3), int(key&7)
		switch wire {
		case wireVarint:
			v, n := binary.Uvarint(msg)
			if n <= 0 {
				return
			}
			msg = msg[n:]
			fn(field, wire, v, nil)
		case wireFixed64:
			if len(msg) < 8 {
				return
			}
			fn(field, wire, binary.LittleEndian.Uint64(msg), nil)
			msg = msg[8:]
		case wireFixed32:
			if len(msg) < 4 {
				return
			}
			fn(field, wire, uint64(binary.LittleEndian.Uint32(msg)), nil)
			msg = msg[4:]
		case wireBytes:
			l, n := binary.Uvarint(msg)
			if n <= 0 || uint64(len(msg)-n) < l {
				return
			}
			fn(field, wire, 0, msg[n:n+int(l)])
			msg = msg[n+int(l):]
		default:
			return
		}
	}
}

func appendFixed64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }

func appendDouble(b []byte, f float64) []byte { return appendFixed64(b, math.Float64bits(f)) }
