//go:build stoke_omit_otlp

package trace

import (
	"context"
	"errors"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// errOTLPOmitted is returned by Setup for an OTLP endpoint in a binary built with
// -tags stoke_omit_otlp, which leaves the OTLP exporter (and its protobuf and gRPC
// initialisers) out for a faster start. The trace file still works.
var errOTLPOmitted = errors.New("this stoke was built without the OTLP exporter (tag stoke_omit_otlp); use a trace file")

func newOTLPExporter(context.Context, string) (sdktrace.SpanExporter, error) {
	return nil, errOTLPOmitted
}
