package trace

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Attribute keys of stoke's spans, fixed here so that dashboards, queries and tests agree.
// The gen_ai.*, server.* and error.type keys follow the OpenTelemetry GenAI semantic
// conventions (semantic-conventions v1.41, gen-ai-spans.md and gen-ai-agent-spans.md).
const (
	AttrSessionID    attribute.Key = "stoke.session_id"
	AttrTaskID       attribute.Key = "stoke.task_id"
	AttrTurn         attribute.Key = "stoke.turn"
	AttrContinuation attribute.Key = "stoke.continuation"
	AttrSubagentType attribute.Key = "stoke.subagent_type"
	// AttrTurnReason is how a turn ended, in the agent runtime's words (its turn reasons).
	AttrTurnReason attribute.Key = "stoke.turn.reason"

	AttrOperationName  attribute.Key = "gen_ai.operation.name"
	AttrProviderName   attribute.Key = "gen_ai.provider.name"
	AttrConversationID attribute.Key = "gen_ai.conversation.id"
	AttrAgentID        attribute.Key = "gen_ai.agent.id"
	AttrAgentName      attribute.Key = "gen_ai.agent.name"
	AttrRequestModel   attribute.Key = "gen_ai.request.model"
	AttrResponseModel  attribute.Key = "gen_ai.response.model"
	AttrResponseID     attribute.Key = "gen_ai.response.id"
	AttrFinishReasons  attribute.Key = "gen_ai.response.finish_reasons"
	AttrServerAddress  attribute.Key = "server.address"
	AttrServerPort     attribute.Key = "server.port"
	// AttrInputTokens counts every input token, cached or not, as the conventions ask:
	// llm.Usage InputTokens + CacheReadInputTokens + CacheCreationInputTokens.
	AttrInputTokens         attribute.Key = "gen_ai.usage.input_tokens"
	AttrOutputTokens        attribute.Key = "gen_ai.usage.output_tokens"
	AttrCacheReadTokens     attribute.Key = "gen_ai.usage.cache_read.input_tokens"
	AttrCacheCreationTokens attribute.Key = "gen_ai.usage.cache_creation.input_tokens"
	AttrToolName            attribute.Key = "gen_ai.tool.name"
	AttrToolCallID          attribute.Key = "gen_ai.tool.call.id"
	AttrErrorType           attribute.Key = "error.type"

	// Opt-in content (Config.CaptureContent): JSON strings in the conventions' message
	// schemas (gen-ai-input-messages.json, gen-ai-output-messages.json).
	AttrInputMessages      attribute.Key = "gen_ai.input.messages"
	AttrOutputMessages     attribute.Key = "gen_ai.output.messages"
	AttrSystemInstructions attribute.Key = "gen_ai.system_instructions"
)

// Values of AttrOperationName; a span's name is the operation, a space, and its subject
// ("invoke_agent explorer", "chat gpt-4o", "execute_tool read_file").
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
)

// Finish reasons of the conventions (the FinishReason enum of gen-ai-output-messages.json).
const (
	FinishStop          = "stop"
	FinishLength        = "length"
	FinishContentFilter = "content_filter"
	FinishToolCall      = "tool_call"
	FinishError         = "error"
)

// FinishReason maps a stop reason of the llm vocabulary (Anthropic's words, which every
// provider adapter speaks) or a raw OpenAI one to the conventions' finish reason. An
// unknown reason is kept as is, as the conventions allow.
func FinishReason(stop string) string {
	switch stop {
	case llm.StopEndTurn, "stop_sequence", "stop", "pause_turn":
		return FinishStop
	case llm.StopToolUse, "tool_calls", "function_call":
		return FinishToolCall
	case llm.StopMaxTokens, "length", "model_context_window_exceeded":
		return FinishLength
	case "refusal", "content_filter":
		return FinishContentFilter
	}
	return stop
}

// TurnInfo describes one agent turn.
type TurnInfo struct {
	// SessionID is the run's session; it is the gen_ai.conversation.id of the turn and
	// of its model calls.
	SessionID string
	// Agent is "parent" or the subagent type; it names the span (gen_ai.agent.name).
	Agent string
	// TaskID and SubagentType are empty for the parent agent. TaskID is the subagent's
	// gen_ai.agent.id; the parent's is the session id.
	TaskID       string
	SubagentType string
	// Turn counts the agent's instructions from 1 (the launch); Continuation is a
	// streamjson.Continuation: fresh, resident or revived.
	Turn         int
	Continuation string
	// Caller is the span that asked for this turn (the task or send_message tool call),
	// when ctx does not carry it: a background turn runs under the registry's context,
	// not the caller's. Capture it with SpanContextFrom(ctx) where the turn is requested.
	Caller SpanContext
	// Parent, when valid, is the span the turn hangs under: the run's root (StartRun),
	// or the foreground task call that runs it. Invalid, the turn is the root of a trace
	// of its own, linked to the span in ctx and to Caller.
	Parent SpanContext
}

// turnKey is the context key of the turn a model call belongs to.
type turnKey struct{}

// turnValue is what a turn hands its model calls through the context.
type turnValue struct {
	sessionID string
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

// endpointOf returns what the tracer knows of the model service (zero for a tracer that
// Setup did not make).
func endpointOf(tracer Tracer) *modelEndpoint {
	if t, ok := tracer.(*stokeTracer); ok {
		return &t.endpoint
	}
	return &modelEndpoint{}
}

// StartTurn starts the span of one agent turn: a child of info.Parent when it is valid,
// linked to info.Caller unless that is the parent; else the root of a new trace, linked
// to the span in ctx (if any) and to info.Caller (if valid and not that span). The
// returned context carries the span; pass it to the turn's model and tool calls. End it
// with EndTurn.
func StartTurn(ctx context.Context, tracer Tracer, info TurnInfo) (context.Context, Span) {
	if !enabled(tracer) {
		return ctx, disabled()
	}
	var links []oteltrace.Link
	inCtx := oteltrace.SpanContextFromContext(ctx)
	if info.Parent.IsValid() {
		// The span in ctx is not this turn's business: for a background turn it is the
		// registry's (none, or the pipeline's TRACEPARENT), an ancestor already.
		inCtx = info.Parent
	} else if inCtx.IsValid() {
		links = append(links, oteltrace.Link{SpanContext: inCtx})
	}
	if info.Caller.IsValid() && !info.Caller.Equal(inCtx) {
		links = append(links, oteltrace.Link{SpanContext: info.Caller})
	}
	ep := endpointOf(tracer)
	agentID := info.TaskID
	if agentID == "" {
		agentID = info.SessionID
	}
	attrs := []attribute.KeyValue{
		AttrOperationName.String(OpInvokeAgent),
		AttrProviderName.String(ep.providerName()),
		AttrAgentName.String(info.Agent),
		AttrSessionID.String(info.SessionID),
		AttrTurn.Int(info.Turn),
	}
	if agentID != "" {
		attrs = append(attrs, AttrAgentID.String(agentID))
	}
	if info.SessionID != "" {
		attrs = append(attrs, AttrConversationID.String(info.SessionID))
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
	ctx = context.WithValue(ctx, turnKey{}, turnValue{sessionID: info.SessionID})
	opts := []oteltrace.SpanStartOption{
		oteltrace.WithLinks(links...),
		oteltrace.WithSpanKind(oteltrace.SpanKindInternal),
		oteltrace.WithAttributes(attrs...),
	}
	if info.Parent.IsValid() {
		ctx = oteltrace.ContextWithSpanContext(ctx, info.Parent)
	} else {
		opts = append(opts, oteltrace.WithNewRoot())
	}
	return tracer.Start(ctx, OpInvokeAgent+" "+info.Agent, opts...)
}

// EndTurn records how the turn ended — reason, the turn reason as the agent runtime
// gave it, is recorded as it is — and ends span. A non-nil err is recorded and marks the
// span failed, unless the turn was cancelled (cancelled, or err is a context
// cancellation): a stopped task or an interrupted run is not a fault.
func EndTurn(span Span, reason string, cancelled bool, err error) {
	if span.IsRecording() {
		if reason != "" {
			span.SetAttributes(AttrTurnReason.String(reason))
		}
		recordError(span, err, cancelled)
	}
	span.End()
}

// modelSpan is the span of a model call: it remembers whether the call's content is
// recorded, for EndModelCall.
type modelSpan struct {
	oteltrace.Span
	capture bool
}

// StartModelCall starts the span of one model call (req), a child of the turn span in
// ctx, with the GenAI attributes known before the answer: operation, provider, server,
// conversation, request model, and (when Config.CaptureContent) the system instructions
// and input messages. End it with EndModelCall.
func StartModelCall(ctx context.Context, tracer Tracer, req *llm.Request) (context.Context, Span) {
	if !enabled(tracer) {
		return ctx, disabled()
	}
	ep := endpointOf(tracer)
	model := req.Model
	attrs := []attribute.KeyValue{
		AttrOperationName.String(OpChat),
		AttrProviderName.String(ep.providerName()),
		AttrRequestModel.String(model),
	}
	if ep.address != "" {
		attrs = append(attrs, AttrServerAddress.String(ep.address), AttrServerPort.Int(ep.port))
	}
	if tv, ok := ctx.Value(turnKey{}).(turnValue); ok && tv.sessionID != "" {
		attrs = append(attrs, AttrConversationID.String(tv.sessionID))
	}
	if ep.capture {
		if req.System != "" {
			attrs = append(attrs, AttrSystemInstructions.String(jsonString([]part{{Type: "text", Content: req.System}})))
		}
		attrs = append(attrs, AttrInputMessages.String(jsonString(inputMessages(req.Messages))))
	}
	ctx, span := tracer.Start(ctx, OpChat+" "+model,
		oteltrace.WithSpanKind(oteltrace.SpanKindClient),
		oteltrace.WithAttributes(attrs...))
	return ctx, &modelSpan{Span: span, capture: ep.capture}
}

// EndModelCall records the call's outcome and ends span: from done (the call's EventDone,
// zero when it failed) the token usage, response model and id and finish reason; the
// output content when captured; err (if any).
func EndModelCall(span Span, done llm.Event, output []llm.Block, err error) {
	if span.IsRecording() {
		u := done.Usage
		span.SetAttributes(
			AttrInputTokens.Int64(u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens),
			AttrOutputTokens.Int64(u.OutputTokens),
			AttrCacheReadTokens.Int64(u.CacheReadInputTokens),
			AttrCacheCreationTokens.Int64(u.CacheCreationInputTokens))
		if done.Model != "" {
			span.SetAttributes(AttrResponseModel.String(done.Model))
		}
		if done.MessageID != "" {
			span.SetAttributes(AttrResponseID.String(done.MessageID))
		}
		finish := FinishReason(done.StopReason)
		if err != nil {
			finish = FinishError
		}
		if finish != "" {
			span.SetAttributes(AttrFinishReasons.StringSlice([]string{finish}))
		}
		if ms, ok := span.(*modelSpan); ok && ms.capture && err == nil {
			span.SetAttributes(AttrOutputMessages.String(jsonString([]outputMessage{{
				Role: string(llm.RoleAssistant), Parts: parts(output), FinishReason: finish,
			}})))
		}
		recordError(span, err, false)
	}
	span.End()
}

// The conventions' message shapes (gen-ai-input-messages.json, gen-ai-output-messages.json).
type (
	message struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	outputMessage struct {
		Role         string `json:"role"`
		Parts        []part `json:"parts"`
		FinishReason string `json:"finish_reason"`
	}
	part struct {
		Type      string          `json:"type"`
		Content   string          `json:"content,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Arguments json.RawMessage `json:"arguments,omitempty"`
		Result    *string         `json:"result,omitempty"`
	}
)

// inputMessages converts a chat history: tool results become a "tool" message each, as
// the conventions' example does.
func inputMessages(msgs []llm.Message) []message {
	out := make([]message, 0, len(msgs))
	for _, m := range msgs {
		var results, rest []llm.Block
		for _, b := range m.Content {
			if b.Type == llm.BlockToolResult {
				results = append(results, b)
			} else {
				rest = append(rest, b)
			}
		}
		if len(results) > 0 {
			out = append(out, message{Role: "tool", Parts: parts(results)})
		}
		if len(rest) > 0 || len(results) == 0 {
			out = append(out, message{Role: string(m.Role), Parts: parts(rest)})
		}
	}
	return out
}

func parts(blocks []llm.Block) []part {
	out := make([]part, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case llm.BlockText:
			out = append(out, part{Type: "text", Content: b.Text})
		case llm.BlockToolUse:
			args := b.Input
			if !json.Valid(args) {
				args = json.RawMessage(`null`)
			}
			out = append(out, part{Type: "tool_call", ID: b.ID, Name: b.Name, Arguments: args})
		case llm.BlockToolResult:
			res := b.Content
			out = append(out, part{Type: "tool_call_response", ID: b.ToolUseID, Result: &res})
		}
	}
	return out
}

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
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
