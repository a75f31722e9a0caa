package trace

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/stoke-cli/stoke/agents/llm"
)

// newRecorder returns a tracer whose ended spans land in the returned exporter at once.
func newRecorder(t *testing.T) (Tracer, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() {
		if err := tp.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return tp.Tracer(ScopeName), exp
}

// simulateTurn plays one agent turn as the runtime does: a model call asking for two
// tools, the two tools run concurrently, a final model call. It returns the turn span's
// context.
func simulateTurn(ctx context.Context, tracer Tracer, info TurnInfo) SpanContext {
	ctx, turn := StartTurn(ctx, tracer, info)
	_, call := StartModelCall(ctx, tracer, chatRequest("gpt-4o-mini"))
	EndModelCall(call, doneEvent(llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 50}, llm.StopToolUse), nil, nil)
	var wg sync.WaitGroup
	for i, name := range []string{"read_file", "grep"} {
		wg.Go(func() {
			_, tool := StartToolCall(ctx, tracer, name, fmt.Sprintf("call_%d", i))
			EndToolCall(tool, false)
		})
	}
	wg.Wait()
	_, call = StartModelCall(ctx, tracer, chatRequest("gpt-4o-mini"))
	EndModelCall(call, doneEvent(llm.Usage{InputTokens: 10, OutputTokens: 5}, llm.StopEndTurn), []llm.Block{llm.TextBlock("done")}, nil)
	EndTurn(turn, "completed", false, nil)
	return turn.SpanContext()
}

// chatRequest is a model call's request with a short history.
func chatRequest(model string) *llm.Request {
	return &llm.Request{Agent: "parent", Model: model, System: "be brief", Messages: []llm.Message{llm.UserText("hello")}}
}

// doneEvent is a call's final event, as a provider answers.
func doneEvent(u llm.Usage, stop string) llm.Event {
	return llm.Event{Kind: llm.EventDone, Usage: u, StopReason: stop, MessageID: "msg_1", Model: "gpt-4o-mini-2024-07-18"}
}

func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	out := make(map[attribute.Key]attribute.Value, len(kvs))
	for _, kv := range kvs {
		out[kv.Key] = kv.Value
	}
	return out
}

// TestTwoTurnsTwoTraces plays a parent that launches a background agent and later
// continues it: each agent turn is its own trace, linked to the parent's tool call that
// asked for it, with its model and tool calls as children.
func TestTwoTurnsTwoTraces(t *testing.T) {
	tracer, exp := newRecorder(t)

	// The parent's turn, with its task and send_message tool calls.
	pctx, parent := StartTurn(context.Background(), tracer, TurnInfo{SessionID: "s1", Agent: "parent", Turn: 1})
	taskCtx, taskCall := StartToolCall(pctx, tracer, "task", "call_task")
	// Turn 1 is started from the task call's context (a foreground launch would be).
	turn1 := simulateTurn(taskCtx, tracer, TurnInfo{
		SessionID: "s1", Agent: "explorer", TaskID: "t_1", SubagentType: "explorer", Turn: 1, Continuation: "fresh",
	})
	EndToolCall(taskCall, false)
	sendCtx, sendCall := StartToolCall(pctx, tracer, "send_message", "call_send")
	// Turn 2 runs under the registry's context; the caller comes in TurnInfo.Caller.
	turn2 := simulateTurn(context.Background(), tracer, TurnInfo{
		SessionID: "s1", Agent: "explorer", TaskID: "t_1", SubagentType: "explorer", Turn: 2, Continuation: "resident",
		Caller: SpanContextFrom(sendCtx),
	})
	EndToolCall(sendCall, false)
	EndTurn(parent, "completed", false, nil)

	spans := exp.GetSpans()
	if len(spans) != 1+2+2*5 {
		t.Fatalf("got %d spans, want 13 (parent turn, 2 tool calls, 2 × (turn, 2 model calls, 2 tools))", len(spans))
	}
	if turn1.TraceID() == turn2.TraceID() || turn1.TraceID() == parent.SpanContext().TraceID() {
		t.Fatalf("turn traces not distinct: turn1 %s, turn2 %s, parent %s", turn1.TraceID(), turn2.TraceID(), parent.SpanContext().TraceID())
	}

	tests := []struct {
		name         string
		turn         SpanContext
		turnN        int
		continuation string
		link         SpanContext
	}{
		{"turn 1", turn1, 1, "fresh", taskCall.SpanContext()},
		{"turn 2", turn2, 2, "resident", sendCall.SpanContext()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var root *tracetest.SpanStub
			children := map[string]int{}
			for i := range spans {
				s := &spans[i]
				if s.SpanContext.TraceID() != tt.turn.TraceID() {
					continue
				}
				if s.SpanContext.SpanID() == tt.turn.SpanID() {
					root = s
					continue
				}
				if s.Parent.SpanID() != tt.turn.SpanID() {
					t.Errorf("span %q: parent %s, want the turn span %s", s.Name, s.Parent.SpanID(), tt.turn.SpanID())
				}
				children[s.Name]++
			}
			if root == nil {
				t.Fatal("turn span not exported")
			}
			if root.Parent.IsValid() {
				t.Errorf("turn span has parent %s, want a root", root.Parent.SpanID())
			}
			if root.Name != "invoke_agent explorer" {
				t.Errorf("turn span name %q", root.Name)
			}
			a := attrs(root.Attributes)
			want := map[attribute.Key]attribute.Value{
				AttrTaskID:        attribute.StringValue("t_1"),
				AttrTurn:          attribute.IntValue(tt.turnN),
				AttrContinuation:  attribute.StringValue(tt.continuation),
				AttrSubagentType:  attribute.StringValue("explorer"),
				AttrSessionID:     attribute.StringValue("s1"),
				AttrAgentName:     attribute.StringValue("explorer"),
				AttrOperationName: attribute.StringValue(OpInvokeAgent),
				AttrTurnReason:    attribute.StringValue("completed"),
			}
			for k, v := range want {
				if a[k] != v {
					t.Errorf("%s = %v, want %v", k, a[k].String(), v.String())
				}
			}
			if len(root.Links) != 1 || root.Links[0].SpanContext.SpanID() != tt.link.SpanID() || root.Links[0].SpanContext.TraceID() != tt.link.TraceID() {
				t.Errorf("links %+v, want one to the caller's span %s", root.Links, tt.link.SpanID())
			}
			wantChildren := map[string]int{"chat gpt-4o-mini": 2, "execute_tool read_file": 1, "execute_tool grep": 1}
			if fmt.Sprint(children) != fmt.Sprint(wantChildren) {
				t.Errorf("children %v, want %v", children, wantChildren)
			}
		})
	}

	// The parent's tool calls are children of the parent turn, in its trace.
	for _, s := range spans {
		if s.Name == "execute_tool task" || s.Name == "execute_tool send_message" {
			if s.Parent.SpanID() != parent.SpanContext().SpanID() {
				t.Errorf("%s: parent %s, want the parent turn", s.Name, s.Parent.SpanID())
			}
		}
	}
}

func TestStartTurnLinks(t *testing.T) {
	tracer, exp := newRecorder(t)
	ctxSpan, other := tracer.Start(context.Background(), "caller-in-ctx")
	_, explicit := tracer.Start(context.Background(), "explicit-caller")
	tests := []struct {
		name   string
		ctx    context.Context
		caller SpanContext
		want   []SpanContext
	}{
		{"none", context.Background(), SpanContext{}, nil},
		{"ctx only", ctxSpan, SpanContext{}, []SpanContext{other.SpanContext()}},
		{"caller only", context.Background(), explicit.SpanContext(), []SpanContext{explicit.SpanContext()}},
		{"both", ctxSpan, explicit.SpanContext(), []SpanContext{other.SpanContext(), explicit.SpanContext()}},
		{"same twice", ctxSpan, other.SpanContext(), []SpanContext{other.SpanContext()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp.Reset()
			_, span := StartTurn(tt.ctx, tracer, TurnInfo{Agent: "parent", Turn: 1, Caller: tt.caller})
			EndTurn(span, "completed", false, nil)
			got := exp.GetSpans()
			if len(got) != 1 {
				t.Fatalf("got %d spans", len(got))
			}
			if got[0].Parent.IsValid() {
				t.Error("turn span has a parent")
			}
			var ids []SpanContext
			for _, l := range got[0].Links {
				ids = append(ids, l.SpanContext)
			}
			if len(ids) != len(tt.want) {
				t.Fatalf("links %v, want %v", ids, tt.want)
			}
			for i := range ids {
				if !ids[i].Equal(tt.want[i]) {
					t.Errorf("link %d = %s, want %s", i, ids[i].SpanID(), tt.want[i].SpanID())
				}
			}
			a := attrs(got[0].Attributes)
			for _, k := range []attribute.Key{AttrTaskID, AttrSubagentType, AttrContinuation} {
				if _, ok := a[k]; ok {
					t.Errorf("parent turn has %s", k)
				}
			}
		})
	}
	other.End()
	explicit.End()
}

func TestEndModelCall(t *testing.T) {
	tracer, exp := newRecorder(t)
	usage := llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadInputTokens: 300, CacheCreationInputTokens: 50}
	tests := []struct {
		name       string
		stop       string
		err        error
		finish     string // the normalised finish reason, "" for none
		wantStatus codes.Code
		wantType   string // error.type, "" for none
	}{
		{"success", llm.StopEndTurn, nil, FinishStop, codes.Unset, ""},
		{"tool use", llm.StopToolUse, nil, FinishToolCall, codes.Unset, ""},
		{"max tokens", llm.StopMaxTokens, nil, FinishLength, codes.Unset, ""},
		{"no stop reason", "", nil, "", codes.Unset, ""},
		{"cancelled", "", fmt.Errorf("model call: %w", context.Canceled), FinishError, codes.Unset, "cancelled"},
		{"timeout", "", fmt.Errorf("model call: %w", context.DeadlineExceeded), FinishError, codes.Error, "timeout"},
		{"rate limited", "", fmt.Errorf("model call: %w", &llm.ProviderError{Provider: "openai", StatusCode: 429, Message: "slow down"}), FinishError, codes.Error, "429"},
		{"stream cut", "", fmt.Errorf("model call: %w", llm.ErrStreamCut), FinishError, codes.Error, "stream_cut"},
		{"other", "", errors.New("boom"), FinishError, codes.Error, "_OTHER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp.Reset()
			ctx, turn := StartTurn(context.Background(), tracer, TurnInfo{Agent: "parent", Turn: 1})
			_, call := StartModelCall(ctx, tracer, chatRequest("claude-sonnet-4"))
			EndModelCall(call, llm.Event{Kind: llm.EventDone, Usage: usage, StopReason: tt.stop}, nil, tt.err)
			turn.End()
			spans := exp.GetSpans()
			if len(spans) != 2 {
				t.Fatalf("got %d spans", len(spans))
			}
			s := spans[0]
			if s.Name != "chat claude-sonnet-4" || s.SpanKind != oteltrace.SpanKindClient {
				t.Errorf("span %q kind %v", s.Name, s.SpanKind)
			}
			a := attrs(s.Attributes)
			for k, want := range map[attribute.Key]int64{
				AttrInputTokens: 450, AttrOutputTokens: 20, AttrCacheReadTokens: 300, AttrCacheCreationTokens: 50,
			} {
				if got := a[k].AsInt64(); got != want {
					t.Errorf("%s = %d, want %d", k, got, want)
				}
			}
			if got := a[AttrRequestModel].AsString(); got != "claude-sonnet-4" {
				t.Errorf("model %q", got)
			}
			if got, ok := a[AttrFinishReasons]; ok != (tt.finish != "") || (ok && got.AsStringSlice()[0] != tt.finish) {
				t.Errorf("finish reasons %v, want [%s]", got.String(), tt.finish)
			}
			if got := a[AttrErrorType].AsString(); got != tt.wantType {
				t.Errorf("error.type %q, want %q", got, tt.wantType)
			}
			if s.Status.Code != tt.wantStatus {
				t.Errorf("status %v, want %v", s.Status.Code, tt.wantStatus)
			}
			if tt.err != nil && (len(s.Events) != 1 || s.Events[0].Name != "exception") {
				t.Errorf("events %v, want the recorded error", s.Events)
			}
		})
	}
}

func TestEndTurnAndToolCall(t *testing.T) {
	tracer, exp := newRecorder(t)
	stopped := errors.New("stopped by task_stop") // a cancel cause that is not context.Canceled
	tests := []struct {
		name       string
		end        func(ctx context.Context, turn Span)
		wantStatus codes.Code
		wantType   string
	}{
		{"completed", func(_ context.Context, s Span) { EndTurn(s, "completed", false, nil) }, codes.Unset, ""},
		{"failed", func(_ context.Context, s Span) { EndTurn(s, "error", false, errors.New("model call: boom")) }, codes.Error, "_OTHER"},
		{"max turns", func(_ context.Context, s Span) { EndTurn(s, "max_turns", false, errors.New("too many steps")) }, codes.Error, "_OTHER"},
		{"stopped", func(_ context.Context, s Span) { EndTurn(s, "cancelled", true, stopped) }, codes.Unset, "cancelled"},
		{"tool error", func(ctx context.Context, s Span) {
			_, tool := StartToolCall(ctx, tracer, "shell", "call_1")
			EndToolCall(tool, true)
			s.End()
		}, codes.Error, "tool_error"},
		{"tool ok", func(ctx context.Context, s Span) {
			_, tool := StartToolCall(ctx, tracer, "shell", "call_1")
			EndToolCall(tool, false)
			s.End()
		}, codes.Unset, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp.Reset()
			ctx, turn := StartTurn(context.Background(), tracer, TurnInfo{Agent: "worker", TaskID: "t_2", Turn: 3, Continuation: "revived"})
			tt.end(ctx, turn)
			spans := exp.GetSpans()
			s := spans[0] // the tool span when there is one: it ends first
			a := attrs(s.Attributes)
			if got := a[AttrErrorType].AsString(); got != tt.wantType {
				t.Errorf("error.type %q, want %q", got, tt.wantType)
			}
			if s.Status.Code != tt.wantStatus {
				t.Errorf("status %v, want %v", s.Status.Code, tt.wantStatus)
			}
		})
	}
}

// TestDisabledHelpers checks that with tracing off (a nil or no-op tracer) the helpers
// leave ctx alone, return non-recording spans, and allocate nothing.
func TestDisabledHelpers(t *testing.T) {
	tracers := map[string]Tracer{
		"nil":          nil,
		"noop":         noop.Tracer{},
		"provider":     noop.NewTracerProvider().Tracer("x"),
		"off Tracing":  mustSetup(t, Config{}).Tracer(),
		"nil *Tracing": (*Tracing)(nil).Tracer(),
	}
	for name, tracer := range tracers {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			usage := llm.Usage{InputTokens: 1, OutputTokens: 1}
			err := errors.New("boom")
			req := chatRequest("gpt-4o")
			allocs := testing.AllocsPerRun(100, func() {
				tctx, turn := StartTurn(ctx, tracer, TurnInfo{Agent: "explorer", TaskID: "t_1", Turn: 2, Continuation: "resident"})
				mctx, call := StartModelCall(tctx, tracer, req)
				EndModelCall(call, llm.Event{Usage: usage, StopReason: llm.StopEndTurn}, nil, err)
				_, tool := StartToolCall(mctx, tracer, "read_file", "call_1")
				EndToolCall(tool, true)
				EndTurn(turn, "error", false, err)
				if tctx != ctx || mctx != ctx || turn.IsRecording() {
					t.Fatal("disabled helpers changed ctx or recorded")
				}
			})
			if allocs != 0 {
				t.Errorf("disabled helpers allocate %v times per turn, want 0", allocs)
			}
		})
	}
}

func mustSetup(t *testing.T, cfg Config) *Tracing {
	t.Helper()
	tr, err := Setup(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	return tr
}

func BenchmarkTurnDisabled(b *testing.B) {
	ctx := context.Background()
	var tracer Tracer = noop.Tracer{}
	req := chatRequest("gpt-4o")
	for b.Loop() {
		tctx, turn := StartTurn(ctx, tracer, TurnInfo{Agent: "explorer", TaskID: "t_1", Turn: 2})
		_, call := StartModelCall(tctx, tracer, req)
		EndModelCall(call, llm.Event{StopReason: llm.StopEndTurn}, nil, nil)
		EndTurn(turn, "completed", false, nil)
	}
}

func BenchmarkTurnRecording(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tracer := tp.Tracer(ScopeName)
	ctx := context.Background()
	req := chatRequest("gpt-4o")
	for b.Loop() {
		tctx, turn := StartTurn(ctx, tracer, TurnInfo{Agent: "explorer", TaskID: "t_1", Turn: 2})
		_, call := StartModelCall(tctx, tracer, req)
		EndModelCall(call, llm.Event{Usage: llm.Usage{InputTokens: 10}, StopReason: llm.StopEndTurn}, nil, nil)
		EndTurn(turn, "completed", false, nil)
	}
}
