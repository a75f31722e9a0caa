package headless

import (
	"context"
	"errors"

	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/trace"
)

// startRun starts the run's root span (trace.StartRun): a child of the span ctx carries
// (the pipeline's TRACEPARENT), else a new trace, linked to the root of the stored
// session's last traced run. session.json records this root for the next run. Every
// parent turn hangs under it, and the background turns they start.
func (p *Parts) startRun(ctx context.Context) (context.Context, trace.Span) {
	var previous trace.SpanContext
	if tp := p.opened.previousRun; tp != "" {
		sc, err := trace.ParseTraceparent(tp, "")
		if err != nil {
			p.opts.Logger.Warn("session.json: the previous run's traceparent is ignored", "session_id", p.id, "err", err)
		}
		previous = sc
	}
	ctx, span := trace.StartRun(ctx, p.opts.Tracer, trace.RunInfo{SessionID: p.id, Resumed: p.opened.resumed, Previous: previous})
	if tp, _ := trace.Traceparent(span.SpanContext()); tp != "" {
		p.opened.info.Traceparent = tp // written when the session closes
	}
	return ctx, span
}

// endRun ends the run's root span with how the run ended (err is what Serve returns).
func endRun(span trace.Span, err error) {
	var ie *InterruptedError
	switch {
	case err == nil:
		trace.EndRun(span, runtime.ReasonCompleted, false, nil)
	case errors.As(err, &ie) || errors.Is(err, context.Canceled):
		trace.EndRun(span, runtime.ReasonCancelled, true, err)
	case errors.Is(err, ErrMaxTurns):
		trace.EndRun(span, runtime.ReasonMaxTurns, false, err)
	default:
		trace.EndRun(span, runtime.ReasonError, false, err)
	}
}
