package trace

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Environment variables that carry a trace context into a process (the OpenTelemetry
// specification's "environment variables as context propagation carriers": W3C Trace
// Context's headers, upper-cased), as CI systems and otel-cli set them.
const (
	EnvTraceparent = "TRACEPARENT"
	EnvTracestate  = "TRACESTATE"
)

// SpanRun is the name of a run's root span: one process of a session, under which its
// agent turns hang.
const SpanRun = "stoke.run"

// AttrResumed marks a run that continues a stored session (--resume, --continue).
const AttrResumed attribute.Key = "stoke.resumed"

// ContextFromEnv returns ctx carrying the remote span context that TRACEPARENT (and
// TRACESTATE) name, for StartRun to hang the run under: the CI job's span. Unset, it
// returns ctx. A TRACEPARENT that is not a valid W3C traceparent is an error that names
// it (the caller warns and goes on without a parent); ctx is returned unchanged then.
func ContextFromEnv(ctx context.Context, lookup func(string) (string, bool)) (context.Context, error) {
	tp, _ := lookup(EnvTraceparent)
	if tp == "" {
		return ctx, nil
	}
	ts, _ := lookup(EnvTracestate)
	sc, err := ParseTraceparent(tp, ts)
	if err != nil {
		return ctx, fmt.Errorf("%s=%q: %w", EnvTraceparent, tp, err)
	}
	return oteltrace.ContextWithRemoteSpanContext(ctx, sc), nil
}

// ParseTraceparent reads a W3C traceparent ("00-<trace id>-<span id>-<flags>") and its
// tracestate (may be empty; a malformed one is dropped, as the W3C propagator does).
func ParseTraceparent(traceparent, tracestate string) (SpanContext, error) {
	carrier := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		carrier["tracestate"] = tracestate
	}
	sc := oteltrace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
	if !sc.IsValid() {
		return SpanContext{}, fmt.Errorf("not a W3C traceparent (version-traceid-parentid-flags, lower-case hex)")
	}
	return sc, nil
}

// Traceparent writes sc as a W3C traceparent and tracestate: to store a run's root with
// its session (so that a resumed run can link to it), or to hand a trace context to a
// child process (TRACEPARENT). Both are empty for an invalid sc.
func Traceparent(sc SpanContext) (traceparent, tracestate string) {
	if !sc.IsValid() {
		return "", ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(oteltrace.ContextWithSpanContext(context.Background(), sc), carrier)
	return carrier["traceparent"], carrier["tracestate"]
}

// RunInfo describes one run of a session.
type RunInfo struct {
	SessionID string
	// Resumed is set when the run continues a stored session; Previous is that session's
	// last run's root (invalid when unknown), which the new root links to.
	Resumed  bool
	Previous SpanContext
}

// StartRun starts a run's root span, SpanRun: a child of the span in ctx (ContextFromEnv's
// TRACEPARENT, when set), else a new trace. The returned context carries it, as the
// current span and as the run's root (RunFrom), which stays in the contexts derived from
// it: the run's parent turns pass it as TurnInfo.Parent, and so do the background turns
// their task and send_message calls start. End it with EndRun.
func StartRun(ctx context.Context, tracer Tracer, info RunInfo) (context.Context, Span) {
	if !enabled(tracer) {
		return ctx, disabled()
	}
	ep := endpointOf(tracer)
	attrs := []attribute.KeyValue{
		AttrProviderName.String(ep.providerName()),
		AttrSessionID.String(info.SessionID),
		AttrResumed.Bool(info.Resumed),
	}
	if info.SessionID != "" {
		attrs = append(attrs, AttrConversationID.String(info.SessionID))
	}
	var links []oteltrace.Link
	if info.Previous.IsValid() {
		links = append(links, oteltrace.Link{SpanContext: info.Previous})
	}
	ctx = context.WithValue(ctx, turnKey{}, turnValue{sessionID: info.SessionID})
	ctx, span := tracer.Start(ctx, SpanRun,
		oteltrace.WithLinks(links...),
		oteltrace.WithSpanKind(oteltrace.SpanKindInternal),
		oteltrace.WithAttributes(attrs...))
	return WithRun(ctx, span.SpanContext()), span
}

// runKey is the context key of the run's root.
type runKey struct{}

// WithRun returns ctx carrying root as the run's root span (RunFrom), whatever span is
// current in it.
func WithRun(ctx context.Context, root SpanContext) context.Context {
	if !root.IsValid() {
		return ctx
	}
	return context.WithValue(ctx, runKey{}, root)
}

// RunFrom returns the run's root span that ctx carries (StartRun, WithRun); invalid when
// none, and then a turn started from ctx is a trace of its own.
func RunFrom(ctx context.Context) SpanContext {
	sc, _ := ctx.Value(runKey{}).(SpanContext)
	return sc
}

// EndRun records how the run ended (completed, max_turns, error, cancelled) and ends
// span, as EndTurn does for a turn: an interrupted run (cancelled) is not a fault.
func EndRun(span Span, reason string, cancelled bool, err error) {
	EndTurn(span, reason, cancelled, err)
}
