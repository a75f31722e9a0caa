package trace

import (
	"encoding/json"
	"math"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/proto"
)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func protoEqual(a, b proto.Message) bool { return proto.Equal(a, b) }

// miscAttrs covers every attribute type the encoders handle.
func miscAttrs() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Bool("b", true), attribute.Bool("false", false), attribute.Float64("f", 0.5),
		attribute.Float64("inf", math.Inf(1)), attribute.Int64("neg", -7),
		attribute.Int64Slice("is", []int64{1, -2}), attribute.String("s", "quote \" and \x01"),
		attribute.StringSlice("ss", []string{"a", ""}), attribute.BoolSlice("bs", []bool{true, false}),
		attribute.Float64Slice("fs", []float64{1.5}), attribute.String("empty", ""),
	}
}

// protoStatus is a google.rpc.Status with a message, as a collector answers an error.
func protoStatus(msg string) []byte {
	var b pb
	b.uvarint(1, 3)
	b.string(2, msg)
	return b
}

// protoPartial is an Export*ServiceResponse with a partial success.
func protoPartial(rejected int64, msg string) []byte {
	var b pb
	b.message(1, func(ps *pb) {
		ps.int64(1, rejected)
		ps.string(2, msg)
	})
	return b
}
