package trace

import (
	"context"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Attribute keys of stoke's spans, fixed here so that dashboards, queries and tests agree.
// The gen_ai.* keys follow the OpenTelemetry GenAI semantic conventions (v1.40).
const (
	AttrSessionID    attribute.Key = "stoke.session_id"
	AttrTaskID       attribute.Key = "stoke.task_id"
	AttrTurn         attribute.Key = "stoke.turn"
	AttrContinuation attribute.Key = "stoke.continuation"
	AttrSubagentType attribute.Key = "stoke.subagent_type"
	// AttrTurnReason is how a turn ended: completed, max_turns, error, cancelled.
	AttrTurnReason attribute.Key = "stoke.turn.reason"

	AttrOperationName attribute.Key = "gen_ai.operation.name"
	AttrAgentName     attribute.Key = "gen_ai.agent.name"
	AttrRequestModel  attribute.Key = "gen_ai.request.model"
	AttrFinishReasons attribute.Key = "gen_ai.response.finish_reasons"
	// AttrInputTokens counts every input token, cached or not, as the conventions ask:
	// llm.Usage InputTokens + CacheReadInputTokens + CacheCreationInputTokens.
	AttrInputTokens         attribute.Key = "gen_ai.usage.input_tokens"
	AttrOutputTokens        attribute.Key = "gen_ai.usage.output_tokens"
	AttrCacheReadTokens     attribute.Key = "gen_ai.usage.cache_read.input_tokens"
	AttrCacheCreationTokens attribute.Key = "gen_ai.usage.cache_creation.input_tokens"
	AttrToolName            attribute.Key = "gen_ai.tool.name"
	AttrToolCallID          attribute.Key = "gen_ai.tool.call.id"
	AttrErrorType           attribute.Key = "error.type"
)

// Values of AttrOperationName; a span's name is the operation, a space, and its subject
// ("invoke_agent explorer", "chat gpt-4o", "execute_tool read_file").
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
)

// TurnInfo describes one agent turn.
type TurnInfo struct {
	// SessionID is the run's session.
	SessionID string
	// Agent is "parent" or the subagent type; it names the span.
	Agent string
	// TaskID and SubagentType are empty for the parent agent.
	TaskID       string
	SubagentType string
	// Turn counts the agent's instructions from 1 (the launch); Continuation is "fresh",
	// "resident" or "revived".
	Turn         int
	Continuation string
	// Caller is the span that asked for this turn (the task or send_message tool call),
	// when ctx does not carry it: a background turn runs under the registry's context,
	// not the caller's. Capture it with SpanContextFrom(ctx) where the turn is requested.
	Caller SpanContext
}

// enabled reports whether tracer can record anything; a nil or no-op tracer cannot, and
// the helpers then return at once, without allocating.
func enabled(tracer Tracer) bool {
	switch tracer.(type) {
	case nil, noop.Tracer:
		return false
	}
	return true
}

// disabled is the span the helpers return when tracing is off: a no-op span that is not
// in any context (ending it is harmless), obtained without allocating.
func disabled() Span { return oteltrace.SpanFromContext(context.Background()) }

// StartTurn starts the root span of one agent turn: a new trace, linked to the span in
// ctx (if any) and to info.Caller (if valid and different). The returned context carries
// the span; pass it to the turn's model and tool calls. End the span with EndTurn.
func StartTurn(ctx context.Context, tracer Tracer, info TurnInfo) (context.Context, Span) {
	if !enabled(tracer) {
		return ctx, disabled()
	}
	var links []oteltrace.Link
	inCtx := oteltrace.SpanContextFromContext(ctx)
	if inCtx.IsValid() {
		links = append(links, oteltrace.Link{SpanContext: inCtx})
	}
	if info.Caller.IsValid() && !info.Caller.Equal(inCtx) {
		links = append(links, oteltrace.Link{SpanContext: info.Caller})
	}
	attrs := []attribute.KeyValue{
		AttrOperationName.String(OpInvokeAgent),
		AttrAgentName.String(info.Agent),
		AttrSessionID.String(info.SessionID),
		AttrTurn.Int(info.Turn),
	}
	if info.TaskID != "" {
		attrs = append(attrs, AttrTaskID.String(info.TaskID))
	}
	if info.SubagentType != "" {
		attrs = append(attrs, AttrSubagentType.String(info.SubagentType))
	}
	if info.Continuation != "" {
		attrs = append(attrs, AttrContinuation.String(info.Continuation))
	}
	return tracer.Start(ctx, OpInvokeAgent+" "+info.Agent,
		oteltrace.WithNewRoot(),
		oteltrace.WithLinks(links...),
		oteltrace.WithSpanKind(oteltrace.SpanKindInternal),
		oteltrace.WithAttributes(attrs...))
}

// ReasonCancelled is the turn reason of a cancelled turn (agents.ReasonCancelled).
const ReasonCancelled = "cancelled"

// EndTurn records how the turn ended (reason: completed, max_turns, error, cancelled)
// and ends span. A non-nil err is recorded and marks the span failed, unless the turn
// was cancelled (reason "cancelled", or err is a context cancellation): a stopped task
// or an interrupted run is not a fault.
func EndTurn(span Span, reason string, err error) {
	if span.IsRecording() {
		if reason != "" {
			span.SetAttributes(AttrTurnReason.String(reason))
		}
		recordError(span, err, reason == ReasonCancelled)
	}
	span.End()
}

// StartModelCall starts the span of one model call, a child of the turn span in ctx.
// End it with EndModelCall.
func StartModelCall(ctx context.Context, tracer Tracer, model string) (context.Context, Span) {
	if !enabled(tracer) {
		return ctx, disabled()
	}
	return tracer.Start(ctx, OpChat+" "+model,
		oteltrace.WithSpanKind(oteltrace.SpanKindClient),
		oteltrace.WithAttributes(
			AttrOperationName.String(OpChat),
			AttrRequestModel.String(model)))
}

// EndModelCall records the call's token usage, its stop reason (if not empty) and its
// error (if any), and ends span.
func EndModelCall(span Span, usage llm.Usage, stopReason string, err error) {
	if span.IsRecording() {
		span.SetAttributes(
			AttrInputTokens.Int64(usage.InputTokens+usage.CacheReadInputTokens+usage.CacheCreationInputTokens),
			AttrOutputTokens.Int64(usage.OutputTokens),
			AttrCacheReadTokens.Int64(usage.CacheReadInputTokens),
			AttrCacheCreationTokens.Int64(usage.CacheCreationInputTokens))
		if stopReason != "" {
			span.SetAttributes(AttrFinishReasons.StringSlice([]string{stopReason}))
		}
		recordError(span, err, false)
	}
	span.End()
}

// StartToolCall starts the span of one tool call, a child of the turn span in ctx. Tools
// of one round run concurrently; each gets its own span. End it with EndToolCall.
func StartToolCall(ctx context.Context, tracer Tracer, name, callID string) (context.Context, Span) {
	if !enabled(tracer) {
		return ctx, disabled()
	}
	return tracer.Start(ctx, OpExecuteTool+" "+name,
		oteltrace.WithSpanKind(oteltrace.SpanKindInternal),
		oteltrace.WithAttributes(
			AttrOperationName.String(OpExecuteTool),
			AttrToolName.String(name),
			AttrToolCallID.String(callID)))
}

// EndToolCall ends span, marking it failed when the tool's result is an error (a tool
// error is a result the model sees, so it has no Go error to record).
func EndToolCall(span Span, isError bool) {
	if isError && span.IsRecording() {
		span.SetAttributes(AttrErrorType.String("tool_error"))
		span.SetStatus(codes.Error, "tool returned an error")
	}
	span.End()
}

// recordError records err on span and, unless it is a cancellation, marks the span failed.
func recordError(span Span, err error, cancelled bool) {
	if err == nil {
		return
	}
	typ := errorType(err)
	if cancelled {
		typ = errCancelled
	}
	span.SetAttributes(AttrErrorType.String(typ))
	span.RecordError(err)
	if typ != errCancelled {
		span.SetStatus(codes.Error, err.Error())
	}
}

const errCancelled = "cancelled"

// errorType classifies err for error.type, with few distinct values (the conventions
// ask for low cardinality).
func errorType(err error) string {
	var pe *llm.ProviderError
	switch {
	case errors.Is(err, context.Canceled):
		return errCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, llm.ErrStreamCut):
		return "stream_cut"
	case errors.As(err, &pe) && pe.StatusCode != 0:
		return strconv.Itoa(pe.StatusCode)
	default:
		return "_OTHER"
	}
}
