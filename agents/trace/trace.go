// Package trace exports OpenTelemetry traces of agent turns, model calls and tool calls.
//
// Setup builds a Tracing from a Config: an OTLP/HTTP (JSON) exporter, a JSON-lines file, both,
// or neither, in which case everything is a no-op that starts no goroutine and costs no
// allocation on the hot path. Nothing is global: the Tracer is passed to the span
// helpers (StartTurn, StartModelCall, StartToolCall) explicitly, and a nil Tracer is
// the same as tracing off.
//
// Each agent turn is its own trace (a new root span), linked to the span that asked for
// it, so that a long-lived background agent's turns stay small, separate traces that a
// backend can still follow from the parent's task or send_message call.
package trace

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"

	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Tracer starts spans. It is OpenTelemetry's trace.Tracer, re-exported so that callers
// need not import OpenTelemetry.
type Tracer = oteltrace.Tracer

// Span is one span; End it exactly once.
type Span = oteltrace.Span

// SpanContext identifies a span across goroutines and contexts (see TurnInfo.Caller).
type SpanContext = oteltrace.SpanContext

// SpanContextFrom returns the span context of the span in ctx (invalid when none).
// Capture it where a turn is requested, for TurnInfo.Caller.
func SpanContextFrom(ctx context.Context) SpanContext {
	return oteltrace.SpanContextFromContext(ctx)
}

// ScopeName is the instrumentation scope of stoke's spans.
const ScopeName = "github.com/stoke-cli/stoke/agents"

// DefaultServiceName is the service.name resource attribute when Config leaves it empty.
const DefaultServiceName = "stoke"

// Config says where spans go. The zero Config turns tracing off.
type Config struct {
	// OTLPEndpoint is the full URL spans are POSTed to over OTLP/HTTP in the JSON
	// encoding (Content-Type application/json), e.g. http://localhost:4318/v1/traces.
	// EndpointFromEnv derives it from the standard OTEL_EXPORTER_OTLP_* variables. Each
	// export, retries included, gives up after 10 seconds; requests are not compressed,
	// and https uses the system's roots (OTEL_EXPORTER_OTLP_TIMEOUT, _COMPRESSION and
	// _CERTIFICATE are not read).
	OTLPEndpoint string
	// Headers are added to every OTLP request, e.g. an API key; HeadersFromEnv reads
	// them from OTEL_EXPORTER_OTLP_HEADERS.
	Headers map[string]string
	// File is a path that spans are written to as JSON lines, one span per line (the
	// stdouttrace format), for a --trace-file flag. The file is created or truncated.
	File string
	// ServiceName and ServiceVersion become the service.name and service.version
	// resource attributes. OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override them,
	// as in every OpenTelemetry SDK.
	ServiceName    string
	ServiceVersion string
}

// Enabled reports whether c sends spans anywhere.
func (c Config) Enabled() bool { return c.OTLPEndpoint != "" || c.File != "" }

// EndpointFromEnv returns the OTLP/HTTP traces URL the standard variables name, or ""
// when neither is set: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as is, else
// OTEL_EXPORTER_OTLP_ENDPOINT (a base URL) with /v1/traces appended, as the OpenTelemetry
// specification says. lookup is os.LookupEnv or a test's stand-in.
func EndpointFromEnv(lookup func(string) (string, bool)) string {
	if v, ok := lookup("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	if v, ok := lookup("OTEL_EXPORTER_OTLP_ENDPOINT"); ok && strings.TrimSpace(v) != "" {
		return strings.TrimRight(strings.TrimSpace(v), "/") + "/v1/traces"
	}
	return ""
}

// HeadersFromEnv returns the headers of OTLP requests that the standard variables name,
// or nil when neither is set: OTEL_EXPORTER_OTLP_TRACES_HEADERS if set, else
// OTEL_EXPORTER_OTLP_HEADERS. Each is a comma-separated list of key=value pairs whose
// values are percent-decoded (as in W3C Baggage); a malformed pair is skipped. lookup is
// os.LookupEnv or a test's stand-in.
func HeadersFromEnv(lookup func(string) (string, bool)) map[string]string {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"} {
		v, ok := lookup(name)
		if !ok || strings.TrimSpace(v) == "" {
			continue
		}
		headers := map[string]string{}
		for pair := range strings.SplitSeq(v, ",") {
			key, value, ok := strings.Cut(pair, "=")
			if !ok {
				continue
			}
			value, err := url.PathUnescape(value)
			key, value = strings.TrimSpace(key), strings.TrimSpace(value)
			if err != nil || checkHeader(key, value) != nil {
				continue
			}
			headers[key] = value
		}
		if len(headers) == 0 {
			return nil
		}
		return headers
	}
	return nil
}

// Tracing owns the exporters of one process. Its methods are safe for concurrent use, and
// a nil *Tracing is a valid, disabled Tracing.
type Tracing struct {
	tracer   Tracer
	provider *sdktrace.TracerProvider // nil when off
	file     *os.File                 // nil unless Config.File

	shutdownOnce sync.Once
	shutdownErr  error
}

// Setup starts the exporters cfg names. With neither OTLPEndpoint nor File it returns a
// disabled Tracing at once: a no-op Tracer, no goroutine, no exporter. Otherwise spans
// are batched in the background until Shutdown, which the caller must call before the
// process exits.
func Setup(ctx context.Context, cfg Config) (*Tracing, error) {
	if !cfg.Enabled() {
		return &Tracing{tracer: noop.Tracer{}}, nil
	}
	// Exporters first, batch processors last: WithBatcher starts a goroutine at once,
	// which a failure after it would leak.
	var (
		exporters []sdktrace.SpanExporter
		file      *os.File
	)
	fail := func(err error) (*Tracing, error) {
		for _, exp := range exporters {
			err = errors.Join(err, exp.Shutdown(ctx))
		}
		if file != nil {
			err = errors.Join(err, file.Close())
		}
		return nil, err
	}
	if cfg.OTLPEndpoint != "" {
		u, err := url.Parse(cfg.OTLPEndpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL", cfg.OTLPEndpoint)
		}
		if err := checkHeaders(cfg.Headers); err != nil {
			return nil, err
		}
	}
	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.File != "" {
		f, err := os.OpenFile(cfg.File, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("trace file: %w", err)
		}
		file = f
		exp, err := stdouttrace.New(stdouttrace.WithWriter(f))
		if err != nil {
			return fail(fmt.Errorf("trace file exporter: %w", err))
		}
		exporters = append(exporters, exp)
	}
	if cfg.OTLPEndpoint != "" {
		exporters = append(exporters, newOTLPExporter(cfg.OTLPEndpoint, cfg.Headers))
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, exp := range exporters {
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	provider := sdktrace.NewTracerProvider(opts...)
	return &Tracing{
		tracer:   provider.Tracer(ScopeName, oteltrace.WithInstrumentationVersion(cfg.ServiceVersion)),
		provider: provider,
		file:     file,
	}, nil
}

// newResource describes this process: service name and version, the SDK, and the
// standard OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES variables, which win. A
// malformed variable is skipped rather than failing the run.
func newResource(ctx context.Context, cfg Config) (*resource.Resource, error) {
	name := cfg.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	attrs := []resource.Option{resource.WithTelemetrySDK(), resource.WithAttributes(semconv.ServiceName(name))}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.ServiceVersion(cfg.ServiceVersion)))
	}
	attrs = append(attrs, resource.WithFromEnv(), resource.WithSchemaURL(semconv.SchemaURL))
	res, err := resource.New(ctx, attrs...)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	return res, nil
}

// Enabled reports whether spans go anywhere.
func (t *Tracing) Enabled() bool { return t != nil && t.provider != nil }

// Tracer returns the tracer to pass to the span helpers: a no-op one when disabled.
func (t *Tracing) Tracer() Tracer {
	if t == nil || t.tracer == nil {
		return noop.Tracer{}
	}
	return t.tracer
}

// Shutdown ends every span still buffered in the exporters, flushes them and closes the
// trace file; later spans are dropped. It returns when done or when ctx ends: give it a
// context that outlives the run's (context.WithoutCancel plus a timeout). It is
// idempotent and does nothing when disabled.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	t.shutdownOnce.Do(func() {
		var err error
		if e := t.provider.Shutdown(ctx); e != nil {
			err = fmt.Errorf("trace shutdown: %w", e)
		}
		if t.file != nil {
			if e := t.file.Close(); e != nil {
				err = errors.Join(err, fmt.Errorf("trace file: %w", e))
			}
		}
		t.shutdownErr = err
	})
	return t.shutdownErr
}
