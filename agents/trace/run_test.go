package trace

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

const (
	pipelineTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	pipelineSpan  = "00f067aa0ba902b7"
)

func TestParseTraceparent(t *testing.T) {
	tests := []struct {
		name, traceparent, tracestate string
		ok, sampled                   bool
		wantState                     string
	}{
		{"sampled", "00-" + pipelineTrace + "-" + pipelineSpan + "-01", "", true, true, ""},
		{"not sampled, with tracestate", "00-" + pipelineTrace + "-" + pipelineSpan + "-00", "ci=job-7,vendor=x", true, false, "ci=job-7,vendor=x"},
		{"a malformed tracestate is dropped", "00-" + pipelineTrace + "-" + pipelineSpan + "-01", "not a state!", true, true, ""},
		{"upper-case hex", "00-" + strings.ToUpper(pipelineTrace) + "-" + pipelineSpan + "-01", "", false, false, ""},
		{"short trace id", "00-4bf92f3577b34da6-" + pipelineSpan + "-01", "", false, false, ""},
		{"zero trace id", "00-" + strings.Repeat("0", 32) + "-" + pipelineSpan + "-01", "", false, false, ""},
		{"zero span id", "00-" + pipelineTrace + "-" + strings.Repeat("0", 16) + "-01", "", false, false, ""},
		{"version ff", "ff-" + pipelineTrace + "-" + pipelineSpan + "-01", "", false, false, ""},
		{"not a traceparent", "hello", "", false, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := ParseTraceparent(tt.traceparent, tt.tracestate)
			if !tt.ok {
				if err == nil {
					t.Fatalf("ParseTraceparent(%q) = %v, want an error", tt.traceparent, sc)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if sc.TraceID().String() != pipelineTrace || sc.SpanID().String() != pipelineSpan || !sc.IsRemote() || sc.IsSampled() != tt.sampled {
				t.Errorf("span context %v (remote %v, sampled %v)", sc, sc.IsRemote(), sc.IsSampled())
			}
			if got := sc.TraceState().String(); got != tt.wantState {
				t.Errorf("tracestate %q, want %q", got, tt.wantState)
			}
			tp, ts := Traceparent(sc)
			if tp != tt.traceparent || ts != tt.wantState {
				t.Errorf("Traceparent = %q, %q; want %q, %q", tp, ts, tt.traceparent, tt.wantState)
			}
		})
	}
	if tp, ts := Traceparent(SpanContext{}); tp != "" || ts != "" {
		t.Errorf("Traceparent of an invalid span context = %q, %q", tp, ts)
	}
}

func TestContextFromEnv(t *testing.T) {
	ctx := context.Background()
	got, err := ContextFromEnv(ctx, envOf(nil))
	if err != nil || got != ctx {
		t.Errorf("no TRACEPARENT: %v, %v; want ctx as it was", got, err)
	}
	got, err = ContextFromEnv(ctx, envOf(map[string]string{"TRACEPARENT": "00-" + pipelineTrace + "-" + pipelineSpan + "-01", "TRACESTATE": "ci=1"}))
	if sc := oteltrace.SpanContextFromContext(got); err != nil || sc.TraceID().String() != pipelineTrace || !sc.IsRemote() || sc.TraceState().Get("ci") != "1" {
		t.Errorf("TRACEPARENT: %v, %v", sc, err)
	}
	got, err = ContextFromEnv(ctx, envOf(map[string]string{"TRACEPARENT": "00-abc-def-01"}))
	if err == nil || !strings.Contains(err.Error(), `TRACEPARENT="00-abc-def-01"`) || got != ctx {
		t.Errorf("a bad TRACEPARENT: %v; want an error naming it and ctx as it was", err)
	}
}

// TestRunIsOneTrace plays a run as item 1 of issue 28 would record it: the run's root
// under the pipeline's TRACEPARENT, two parent turns under the root, a foreground
// subagent's turn under its task call, a background agent's turn under the root linked
// to the send_message call that continued it, and a link to the previous run's root.
// Every span is in the pipeline's trace and every parent is present.
func TestRunIsOneTrace(t *testing.T) {
	tracer, exp := newRecorder(t)
	ctx, err := ContextFromEnv(context.Background(), envOf(map[string]string{"TRACEPARENT": "00-" + pipelineTrace + "-" + pipelineSpan + "-01"}))
	if err != nil {
		t.Fatal(err)
	}
	previous, err := ParseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "")
	if err != nil {
		t.Fatal(err)
	}
	runCtx, run := StartRun(ctx, tracer, RunInfo{SessionID: "s1", Resumed: true, Previous: previous})
	root := run.SpanContext()

	turnCtx, turn1 := StartTurn(runCtx, tracer, TurnInfo{SessionID: "s1", Agent: "parent", Turn: 1, Parent: root})
	taskCtx, task := StartToolCall(turnCtx, tracer, "task", "call_fg")
	simulateTurn(taskCtx, tracer, TurnInfo{SessionID: "s1", Agent: "explorer", TaskID: "t_fg", Turn: 1, Parent: SpanContextFrom(taskCtx)})
	EndToolCall(task, false)
	sendCtx, send := StartToolCall(turnCtx, tracer, "send_message", "call_send")
	caller := SpanContextFrom(sendCtx)
	EndToolCall(send, false)
	EndTurn(turn1, "completed", false, nil)
	if got := RunFrom(sendCtx); !got.Equal(root) {
		t.Errorf("RunFrom(a tool call's context) = %v, want the run's root %v", got, root)
	}
	// The background turn runs under the registry's context, not the caller's: one that
	// carries the pipeline's span, which is not linked (it is an ancestor already).
	simulateTurn(ctx, tracer, TurnInfo{SessionID: "s1", Agent: "keeper", TaskID: "t_bg", Turn: 2, Caller: caller, Parent: root})
	_, turn2 := StartTurn(runCtx, tracer, TurnInfo{SessionID: "s1", Agent: "parent", Turn: 2, Parent: root})
	EndTurn(turn2, "completed", false, nil)
	EndRun(run, "completed", false, nil)

	spans := exp.GetSpans()
	byID := map[oteltrace.SpanID]sdktraceStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = sdktraceStub{name: s.Name, parent: s.Parent.SpanID(), links: s.Links}
	}
	for _, s := range spans {
		if s.SpanContext.TraceID().String() != pipelineTrace {
			t.Errorf("%s: trace %s, want the pipeline's", s.Name, s.SpanContext.TraceID())
		}
		if s.Name == SpanRun {
			if s.Parent.SpanID().String() != pipelineSpan || !s.Parent.IsRemote() {
				t.Errorf("the run's parent is %v, want TRACEPARENT's span", s.Parent)
			}
			if len(s.Links) != 1 || !s.Links[0].SpanContext.Equal(previous) {
				t.Errorf("the run's links %v, want the previous run's root", s.Links)
			}
			continue
		}
		if _, ok := byID[s.Parent.SpanID()]; !ok {
			t.Errorf("%s: parent %s is not in the run", s.Name, s.Parent.SpanID())
		}
	}
	parentOf := func(taskID string) (string, []sdktrace.Link) {
		for _, s := range spans {
			for _, a := range s.Attributes {
				if a.Key == AttrTaskID && a.Value.AsString() == taskID {
					return byID[s.Parent.SpanID()].name, s.Links
				}
			}
		}
		t.Fatalf("no turn of %s", taskID)
		return "", nil
	}
	if name, links := parentOf("t_fg"); name != "execute_tool task" || len(links) != 0 {
		t.Errorf("the foreground turn hangs under %q with links %v, want its task call and none", name, links)
	}
	if name, links := parentOf("t_bg"); name != SpanRun || len(links) != 1 || !links[0].SpanContext.Equal(caller) {
		t.Errorf("the background turn hangs under %q with links %v, want the run's root, linked to send_message", name, links)
	}
	if n := len(spans); n != 1+2+2+2*5 {
		t.Errorf("%d spans", n)
	}
}

type sdktraceStub struct {
	name   string
	parent oteltrace.SpanID
	links  []sdktrace.Link
}

// TestTurnWithoutParent: a turn given no Parent is still the root of its own trace,
// linked to the span in ctx, as before runs had a root.
func TestTurnWithoutParent(t *testing.T) {
	tracer, exp := newRecorder(t)
	ctx, call := tracer.Start(context.Background(), "execute_tool task")
	_, turn := StartTurn(ctx, tracer, TurnInfo{Agent: "explorer", TaskID: "t_1", Turn: 1})
	EndTurn(turn, "completed", false, nil)
	call.End()
	s := exp.GetSpans()[0]
	if s.Parent.IsValid() || s.SpanContext.TraceID() == call.SpanContext().TraceID() || len(s.Links) != 1 {
		t.Errorf("turn parent %v, trace %s, links %v: want a new trace linked to the call", s.Parent, s.SpanContext.TraceID(), s.Links)
	}
}

func TestStartRunDisabled(t *testing.T) {
	ctx := context.Background()
	got, span := StartRun(ctx, noop.Tracer{}, RunInfo{SessionID: "s"})
	if got != ctx || span.IsRecording() {
		t.Error("a disabled tracer made a run span")
	}
	EndRun(span, "completed", false, nil)
}

func TestWithRun(t *testing.T) {
	ctx := context.Background()
	if RunFrom(ctx).IsValid() || WithRun(ctx, SpanContext{}) != ctx {
		t.Fatal("a context without a run has a root")
	}
	root, err := ParseTraceparent("00-"+pipelineTrace+"-"+pipelineSpan+"-01", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := RunFrom(WithRun(ctx, root)); !got.Equal(root) {
		t.Errorf("RunFrom(WithRun(root)) = %v", got)
	}
}
