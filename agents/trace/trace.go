// Package trace exports OpenTelemetry traces of agent turns, model calls and tool calls,
// and the GenAI client metrics derived from them.
//
// Setup builds a Tracing from a Config: OTLP/HTTP exporters (protobuf or JSON), a file or
// console of OTLP JSON lines, any mix, or none, in which case everything is a no-op that
// starts no goroutine and costs no allocation on the hot path. Nothing is global: the
// Tracer is passed to the span helpers (StartTurn, StartModelCall, StartToolCall)
// explicitly, and a nil Tracer is the same as tracing off.
//
// An agent turn given no TurnInfo.Parent is its own trace (a new root span), linked to
// the span that asked for it. For one trace per run, StartRun starts the run's root (under
// the pipeline's TRACEPARENT, ContextFromEnv) and each turn names its parent: the root,
// or the foreground task call that runs it.
package trace

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/stoke-cli/stoke/agents/llm/price"
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

// FlushTimeout bounds what telemetry adds to the end of a run: Shutdown gives up on
// exports that have not finished by then (a collector that is down or does not answer),
// whatever the export timeout.
const FlushTimeout = time.Second

// Exporter says where one signal goes over OTLP and on the console. The zero Exporter
// sends nothing.
type Exporter struct {
	// Endpoint is the full URL requests are POSTed to over OTLP/HTTP, e.g.
	// http://localhost:4318/v1/traces.
	Endpoint string
	// Protocol is ProtocolHTTPProtobuf (the default) or ProtocolHTTPJSON.
	Protocol string
	// Headers are added to every request, e.g. an API key.
	Headers map[string]string
	// Compression is CompressionGzip, or empty for none.
	Compression string
	// TLS configures an https endpoint's connections: the roots its certificate chain
	// must end in and a client certificate. nil: the system's roots, no client
	// certificate.
	TLS *tls.Config
	// Timeout bounds one export, retries included (DefaultTimeout when 0); Shutdown's
	// flush is bounded by FlushTimeout whatever this says.
	Timeout time.Duration
	// Console, when set, receives the signal as OTLP JSON lines.
	Console io.Writer
}

func (e Exporter) enabled() bool { return e.Endpoint != "" || e.Console != nil }

// Config says what is recorded and where it goes. The zero Config turns telemetry off.
// ConfigFromEnv fills Traces, Metrics and CaptureContent from the OTEL_* variables.
type Config struct {
	Traces  Exporter
	Metrics Exporter
	// File is a path that spans are written to as OTLP JSON lines, one
	// ExportTraceServiceRequest per line (the Collector file exporter's format), for a
	// --trace-file flag. The file is created or truncated.
	File string
	// ServiceName and ServiceVersion become the service.name and service.version
	// resource attributes. OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override them,
	// as in every OpenTelemetry SDK.
	ServiceName    string
	ServiceVersion string
	// Provider is the gen_ai.provider.name of model calls ("openai", "anthropic", ...);
	// ServerURL is the model service's base URL, for server.address and server.port.
	Provider  string
	ServerURL string
	// DeltaMetrics sends the metrics with delta temporality instead of cumulative. A run
	// exports them once, at its end, so the values are the same; the backend decides
	// which it wants (OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE).
	DeltaMetrics bool
	// Unsupported lists the OTEL_* variables ConfigFromEnv found set that stoke does not
	// act on; the caller logs one warning line for each.
	Unsupported []Unsupported
	// CaptureContent records prompts and completions on the chat spans
	// (gen_ai.input.messages, gen_ai.output.messages, gen_ai.system_instructions).
	CaptureContent bool
	// Prices price the model calls for the cost metric.
	Prices price.Table
	// Logger receives the one warning of a failed export; nil discards it.
	Logger *slog.Logger
}

// Enabled reports whether c sends telemetry anywhere.
func (c Config) Enabled() bool { return c.Traces.enabled() || c.Metrics.enabled() || c.File != "" }

// modelEndpoint is what every model-call span of a process shares.
type modelEndpoint struct {
	provider string
	address  string
	port     int
	capture  bool
}

// providerName is gen_ai.provider.name: the configured provider, or "_OTHER".
func (e *modelEndpoint) providerName() string {
	if e.provider == "" {
		return "_OTHER"
	}
	return e.provider
}

// newModelEndpoint parses the model service's base URL.
func newModelEndpoint(cfg Config) modelEndpoint {
	ep := modelEndpoint{provider: cfg.Provider, capture: cfg.CaptureContent}
	u, err := url.Parse(cfg.ServerURL)
	if err != nil || u.Hostname() == "" {
		return ep
	}
	ep.address = u.Hostname()
	if p, err := strconv.Atoi(u.Port()); err == nil {
		ep.port = p
	} else if u.Scheme == "http" {
		ep.port = 80
	} else {
		ep.port = 443
	}
	return ep
}

// stokeTracer is the SDK's tracer with what the span helpers add to model calls.
type stokeTracer struct {
	oteltrace.Tracer
	endpoint modelEndpoint
}

// Tracing owns the exporters of one process. Its methods are safe for concurrent use, and
// a nil *Tracing is a valid, disabled Tracing.
type Tracing struct {
	tracer   Tracer
	provider *sdktrace.TracerProvider // nil when off
	closers  []io.Closer              // the trace file
	abort    context.CancelFunc       // ends every OTLP send under way
	warned   *warnOnce
	// processors are shut down one by one: the provider's Shutdown skips those left when
	// its context ends, and their goroutines would outlive it.
	processors []sdktrace.SpanProcessor
	// exporting counts span exporters not yet shut down: after an abort, Shutdown waits
	// (briefly) for the batch processors to let go of them before closing the file.
	exporting sync.WaitGroup

	shutdownOnce sync.Once
	shutdownErr  error
}

// warnOnce logs the first export failure as one warning line and drops the others.
type warnOnce struct {
	once   sync.Once
	logger *slog.Logger
}

func (w *warnOnce) report(err error) {
	w.once.Do(func() {
		if w.logger != nil {
			w.logger.Warn("telemetry not exported; later failures are not reported", "err", err)
		}
	})
}

// Setup starts the exporters cfg names. With none it returns a disabled Tracing at once:
// a no-op Tracer, no goroutine, no exporter. Otherwise spans are batched in the
// background until Shutdown, which the caller must call before the process exits.
func Setup(ctx context.Context, cfg Config) (*Tracing, error) {
	if !cfg.Enabled() {
		return &Tracing{tracer: noop.Tracer{}}, nil
	}
	for _, e := range []Exporter{cfg.Traces, cfg.Metrics} {
		if e.Endpoint == "" {
			continue
		}
		u, err := url.Parse(e.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("OTLP endpoint %q: want an http:// or https:// URL", e.Endpoint)
		}
		if err := checkHeaders(e.Headers); err != nil {
			return nil, err
		}
	}
	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, err
	}
	t := &Tracing{warned: &warnOnce{logger: cfg.Logger}}
	// Exporters first, processors last: WithBatcher starts a goroutine at once, which a
	// failure after it would leak.
	var (
		exporters []sdktrace.SpanExporter
		sinks     []metricSink
	)
	if cfg.File != "" {
		f, err := os.OpenFile(cfg.File, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("trace file: %w", err)
		}
		t.closers = append(t.closers, f)
		exporters = append(exporters, &linesExporter{w: f, report: t.warned.report})
	}
	abortCtx, abort := context.WithCancel(context.Background())
	t.abort = abort
	if cfg.Traces.Console != nil {
		exporters = append(exporters, &linesExporter{w: cfg.Traces.Console, report: t.warned.report})
	}
	if e := cfg.Traces; e.Endpoint != "" {
		exporters = append(exporters, newOTLPExporter(newOTLPClient(e, abortCtx), t.warned.report))
	}
	if e := cfg.Metrics; e.Console != nil {
		sinks = append(sinks, linesMetricSink{lines: &linesExporter{w: e.Console}})
	}
	if e := cfg.Metrics; e.Endpoint != "" {
		sinks = append(sinks, otlpMetricSink{client: newOTLPClient(e, abortCtx)})
	}
	if len(sinks) > 0 {
		t.processors = append(t.processors, newMetricsProcessor(cfg.Prices, sinks, t.warned.report, cfg.ServiceVersion, cfg.DeltaMetrics))
	}
	for _, exp := range exporters {
		t.exporting.Add(1)
		t.processors = append(t.processors, sdktrace.NewBatchSpanProcessor(&trackedExporter{SpanExporter: exp, wg: &t.exporting}))
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, p := range t.processors {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	t.provider = sdktrace.NewTracerProvider(opts...)
	t.tracer = &stokeTracer{
		Tracer:   t.provider.Tracer(ScopeName, oteltrace.WithInstrumentationVersion(cfg.ServiceVersion)),
		endpoint: newModelEndpoint(cfg),
	}
	return t, nil
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

// Shutdown ends every span still buffered, flushes the spans and metrics and closes the
// trace file; later spans are dropped. It returns within FlushTimeout (or when ctx
// ends, if sooner): exports still under way then are cancelled, and reported as the one
// warning line a failed export gets. It is idempotent and does nothing when disabled.
// The returned error is about the trace file only.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if !t.Enabled() {
		return nil
	}
	t.shutdownOnce.Do(func() {
		ctx, cancel := context.WithTimeout(ctx, FlushTimeout)
		defer cancel()
		stop := context.AfterFunc(ctx, t.abort)
		var perr error
		for _, p := range t.processors {
			perr = errors.Join(perr, p.Shutdown(ctx))
		}
		perr = errors.Join(perr, t.provider.Shutdown(ctx))
		stop()
		t.abort()
		if perr != nil {
			// The batch processors go on in the background; the abort ends their sends.
			waitGroup(&t.exporting, shutdownGrace)
		}
		var err error
		for _, c := range t.closers {
			if e := c.Close(); e != nil {
				err = errors.Join(err, fmt.Errorf("trace file: %w", e))
			}
		}
		if perr != nil && !errors.Is(perr, context.DeadlineExceeded) && !errors.Is(perr, context.Canceled) {
			err = errors.Join(err, fmt.Errorf("trace shutdown: %w", perr))
		} else if perr != nil {
			t.warned.report(fmt.Errorf("gave up after %v: %w", FlushTimeout, perr))
		}
		t.shutdownErr = err
	})
	return t.shutdownErr
}

// shutdownGrace is how long Shutdown waits, after its deadline, for the aborted exports
// to return, so that the trace file is not closed under a write.
const shutdownGrace = 250 * time.Millisecond

// waitGroup waits for wg, at most d.
func waitGroup(wg *sync.WaitGroup, d time.Duration) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
	}
}

// trackedExporter marks its exporter's shutdown in a WaitGroup.
type trackedExporter struct {
	sdktrace.SpanExporter
	wg   *sync.WaitGroup
	once sync.Once
}

func (e *trackedExporter) Shutdown(ctx context.Context) error {
	err := e.SpanExporter.Shutdown(ctx)
	e.once.Do(e.wg.Done)
	return err
}
