//go:build !stoke_omit_otlp

package trace

import (
	"context"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// newOTLPExporter returns an OTLP/HTTP (protobuf) exporter that POSTs to endpointURL, a
// full URL whose path is used as is. It does not connect until the first export.
//
// Linking it costs start-up time in every run, traced or not: its protobuf and gRPC
// dependencies run their package initialisers. Build with -tags stoke_omit_otlp to leave
// it out (see otlp_omit.go).
func newOTLPExporter(ctx context.Context, endpointURL string) (sdktrace.SpanExporter, error) {
	return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(endpointURL))
}
