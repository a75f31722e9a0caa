package agents

import (
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/trace"
	"github.com/stoke-cli/stoke/streamjson"
)

// The spans of a two-turn agent, through the real registry and runtime: one trace per turn
// (fresh, then resident), each root span carrying the task id, turn and continuation, with
// the turn's model call as a child.
func TestSpansOneTracePerTurn(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	h := newHarness(t, replyText("ok"), func(c *RegistryConfig) { c.Tracer = tp.Tracer("test") })
	id := h.launchBG("first")
	h.collect(id)
	if res := h.send(id, "second"); res.Continuation != streamjson.ContinuationResident {
		t.Fatalf("continuation = %s", res.Continuation)
	}
	h.collect(id)

	spans := exp.GetSpans()
	type turnSpan struct {
		trace, span string
		attrs       map[string]string
	}
	var turns []turnSpan
	for _, s := range spans {
		if s.Parent.IsValid() {
			continue
		}
		a := map[string]string{}
		for _, kv := range s.Attributes {
			a[string(kv.Key)] = kv.Value.String()
		}
		turns = append(turns, turnSpan{s.SpanContext.TraceID().String(), s.SpanContext.SpanID().String(), a})
	}
	if len(turns) != 2 {
		t.Fatalf("root spans = %d, want one per turn (2); spans: %d", len(turns), len(spans))
	}
	if turns[0].trace == turns[1].trace {
		t.Errorf("both turns share trace %s", turns[0].trace)
	}
	for i, want := range []struct{ turn, cont string }{{"1", "fresh"}, {"2", "resident"}} {
		a := turns[i].attrs
		if a[string(trace.AttrTaskID)] != string(id) || a[string(trace.AttrTurn)] != want.turn || a[string(trace.AttrContinuation)] != want.cont {
			t.Errorf("turn %d attributes = %v", i+1, a)
		}
	}
	for _, tr := range turns {
		children := 0
		for _, s := range spans {
			if s.Parent.IsValid() && s.Parent.SpanID().String() == tr.span && s.SpanContext.TraceID().String() == tr.trace {
				children++
			}
		}
		if children == 0 {
			t.Errorf("turn span %s has no model-call child", tr.span)
		}
	}
}

// A turn stopped by task_stop is no fault: its span records the runtime's reason
// (cancelled) and the stop, and is not marked failed.
func TestSpanOfAStoppedTurn(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	g := newGate("", "never")
	h := newHarness(t, g.gen, func(c *RegistryConfig) { c.Tracer = tp.Tracer("test") })
	id := h.launchBG("work")
	g.wait(t)
	if _, err := h.reg.Stop(id); err != nil {
		t.Fatal(err)
	}
	h.collect(id)
	var root []sdktrace.ReadOnlySpan
	for _, s := range exp.GetSpans().Snapshots() {
		if !s.Parent().IsValid() {
			root = append(root, s)
		}
	}
	if len(root) != 1 {
		t.Fatalf("%d turn spans, want 1", len(root))
	}
	reason := ""
	for _, kv := range root[0].Attributes() {
		if kv.Key == trace.AttrTurnReason {
			reason = kv.Value.AsString()
		}
	}
	if reason != runtime.ReasonCancelled || root[0].Status().Code != codes.Unset {
		t.Errorf("stopped turn: reason %q, status %v; want cancelled and not failed", reason, root[0].Status())
	}
}
