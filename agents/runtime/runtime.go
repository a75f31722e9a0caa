package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/agents/trace"
	"github.com/stoke-cli/stoke/streamjson"
)

// Termination reasons of a turn.
const (
	ReasonCompleted = "completed"
	ReasonMaxTurns  = "max_turns"
	ReasonError     = "error"
	ReasonCancelled = "cancelled"
)

// DefaultMaxStopBlocks is how many times in one turn a Stop or SubagentStop hook may make
// an agent go on before the turn ends with ReasonMaxTurns (a hook that always blocks
// would otherwise loop forever; a hook should let the agent stop once stop_hook_active
// is true).
const DefaultMaxStopBlocks = 8

// Stats are the statistics of one instruction. They reset for each new instruction and add
// up across internal retries of the same instruction.
type Stats struct {
	Usage       llm.Usage
	ModelCalls  int
	ToolUses    int
	LastTool    string
	Duration    time.Duration
	APIDuration time.Duration
}

// TurnResult is the outcome of one Execute.
type TurnResult struct {
	// FinalText is the text of the last assistant message, or the partial text so far when
	// the turn was cancelled or failed.
	FinalText string
	// Reason is one of ReasonCompleted, ReasonMaxTurns, ReasonError, ReasonCancelled.
	Reason string
	// Err is the error that ended a turn that did not complete.
	Err   error
	Stats Stats
}

// Inbox feeds a running agent the input that arrives while it works. Implementations are
// called only from the goroutine running Execute.
type Inbox interface {
	// Drain returns the messages queued since the last call (nil when none). It is called
	// before every model call after the first.
	Drain() []llm.Message
	// Settle is called when the model answered without tool calls. Atomically, it either
	// claims queued input (returned; the turn goes on with it on the same chat), or commits
	// the turn's completion with the given final text and returns nil.
	Settle(final string) []llm.Message
}

// ChatStore persists the chat as it grows. Append is called for every message added, in
// order; Sync at turn boundaries.
type ChatStore interface {
	Append(m llm.Message) error
	Sync() error
}

// infoStore is a ChatStore that also records how a message came about (a model call's
// start, model and usage; when each tool call ran): store.Transcript, for reports.
type infoStore interface {
	AppendInfo(m llm.Message, info store.MessageInfo) error
}

// Config configures a Runtime. Everything but Model is optional.
type Config struct {
	// Agent is "parent" or the subagent type; it is sent as llm.Request.Agent.
	Agent  string
	System string
	Model  llm.Model
	// ModelName overrides the model name sent in requests and reported in events.
	ModelName string
	// Tools returns the prepared tool set; it is called once, on the first Execute.
	Tools func() *tools.Set
	// Order is the ordered-tools policy: which calls of a reply are admitted in call
	// order (callorder.go). Nil: none is.
	Order ToolOrder
	// MaxSteps caps model calls per instruction; 0 means no cap.
	MaxSteps int
	Inbox    Inbox
	Store    ChatStore
	// Emit receives the assistant and tool-result events of the agent, already decorated
	// by Decorate. It must be safe for concurrent use.
	Emit func(streamjson.Event)
	// Decorate sets the agent keys and parent_tool_use_id on the agent's events.
	Decorate func(streamjson.Event)
	// OnToolRound is called after each tool round with the stats so far.
	OnToolRound func(Stats)
	// StopHook, when set, is asked before the agent stops (the model answered without tool
	// calls). A non-empty answer is appended as a user message and the turn goes on;
	// active tells whether the hook already made this turn go on once.
	StopHook func(ctx context.Context, final string, active bool) (goOn string)
	// MaxStopBlocks caps how many times StopHook may make one turn go on; the turn then
	// ends with ReasonMaxTurns. 0 means DefaultMaxStopBlocks; negative, no cap.
	MaxStopBlocks int
	// Tracer records a span per model call and per tool call; nil records nothing.
	Tracer trace.Tracer
	// OnModelEvent, when set, sees every event of every model call as it streams (text
	// deltas, tool calls, retries, done), from the goroutine running Execute; it must not block.
	OnModelEvent func(llm.Event)
	// History seeds the chat (transcript revival). The runtime owns the slice afterwards.
	History []llm.Message
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Chat is the message history of one agent.
type Chat struct {
	msgs []llm.Message
}

// Messages returns the history. The caller must not modify it.
func (c *Chat) Messages() []llm.Message { return c.msgs }

// Runtime is one agent: one chat and its prepared tool declarations, run one turn at a time.
type Runtime struct {
	cfg  Config
	busy atomic.Bool

	// Only the goroutine that holds busy touches these.
	chat  *Chat
	tools *tools.Set
	stats Stats

	closeOnce sync.Once
	closed    atomic.Bool
}

// New returns a runtime; the chat and tools are made on the first Execute.
func New(cfg Config) *Runtime {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ModelName == "" && cfg.Model != nil {
		cfg.ModelName = cfg.Model.Name()
	}
	if cfg.MaxStopBlocks == 0 {
		cfg.MaxStopBlocks = DefaultMaxStopBlocks
	}
	return &Runtime{cfg: cfg}
}

// Chat returns the runtime's chat (nil before the first Execute). Only for tests and
// inspection between turns.
func (r *Runtime) Chat() *Chat { return r.chat }

// Tools returns the prepared tool set (nil before the first Execute).
func (r *Runtime) Tools() *tools.Set { return r.tools }

// Close marks the runtime disposed; later Executes fail with ErrDisposed. Idempotent.
func (r *Runtime) Close() { r.closeOnce.Do(func() { r.closed.Store(true) }) }

// SetMaxSteps changes the cap on model calls of the Executes that follow (0: none). Call
// it between turns, never while one runs.
func (r *Runtime) SetMaxSteps(n int) { r.cfg.MaxSteps = n }

// Execute runs one turn for instruction: it appends it as a user turn and loops model calls
// and tool rounds until the model answers without tool calls. Only one Execute may run at a
// time; a concurrent call fails with ErrBusy. Statistics reset for each call.
func (r *Runtime) Execute(ctx context.Context, instruction llm.Message) (TurnResult, error) {
	if !r.busy.CompareAndSwap(false, true) {
		return TurnResult{}, ErrBusy
	}
	defer r.busy.Store(false)
	if r.closed.Load() {
		return TurnResult{}, ErrDisposed
	}
	if r.chat == nil {
		r.chat = &Chat{msgs: r.cfg.History}
		r.cfg.History = nil
		if r.cfg.Tools != nil {
			r.tools = r.cfg.Tools()
		} else {
			r.tools = tools.NewSet()
		}
	}
	r.stats = Stats{}
	res := r.loop(ctx, instruction)
	if r.cfg.Store != nil {
		if err := r.cfg.Store.Sync(); err != nil && res.Err == nil {
			res.Err = fmt.Errorf("sync transcript: %w", err)
		}
	}
	return res, nil
}

func (r *Runtime) loop(ctx context.Context, instruction llm.Message) TurnResult {
	start := r.cfg.Now()
	var final, partial string
	finish := func(reason string, err error) TurnResult {
		r.stats.Duration = r.cfg.Now().Sub(start)
		text := final
		if reason != ReasonCompleted && text == "" {
			text = partial
		}
		return TurnResult{FinalText: text, Reason: reason, Err: err, Stats: r.stats}
	}
	if err := r.add(instruction); err != nil {
		return finish(ReasonError, err)
	}
	stopBlocks := 0
	for step := 0; ; step++ {
		if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
			return finish(ReasonCancelled, err)
		}
		if step > 0 && r.cfg.Inbox != nil {
			for _, m := range r.cfg.Inbox.Drain() {
				if err := r.add(m); err != nil {
					return finish(ReasonError, err)
				}
			}
		}
		if r.cfg.MaxSteps > 0 && r.stats.ModelCalls >= r.cfg.MaxSteps {
			return finish(ReasonMaxTurns, fmt.Errorf("%w (%d)", ErrMaxSteps, r.cfg.MaxSteps))
		}
		reply, err := r.call(ctx, &partial)
		if err != nil {
			if ctx.Err() != nil {
				return finish(ReasonCancelled, context.Cause(ctx))
			}
			return finish(ReasonError, err)
		}
		if t := reply.Text(); t != "" {
			partial = t
		}
		uses := reply.ToolUses()
		if len(uses) == 0 {
			if r.cfg.StopHook != nil && ctx.Err() == nil {
				if goOn := r.cfg.StopHook(ctx, reply.Text(), stopBlocks > 0); goOn != "" {
					// A Stop hook asked the agent to go on: the same instruction continues,
					// so the statistics keep adding up; past the cap, the turn ends.
					stopBlocks++
					if limit := r.cfg.MaxStopBlocks; limit > 0 && stopBlocks > limit {
						final = reply.Text()
						return finish(ReasonMaxTurns, fmt.Errorf("%w: it blocked %d times in a row, at most %d are allowed", ErrStopLoop, stopBlocks, limit))
					}
					if err := r.add(llm.UserText(goOn)); err != nil {
						return finish(ReasonError, err)
					}
					continue
				}
			}
			if r.cfg.Inbox != nil {
				if more := r.cfg.Inbox.Settle(reply.Text()); len(more) > 0 {
					for _, m := range more {
						if err := r.add(m); err != nil {
							return finish(ReasonError, err)
						}
					}
					continue
				}
			}
			final = reply.Text()
			return finish(ReasonCompleted, nil)
		}
		results, times := r.runTools(ctx, uses)
		if err := r.addInfo(results, store.MessageInfo{Calls: times}); err != nil {
			return finish(ReasonError, err)
		}
		r.emit(streamjson.NewUser(results.Content))
		if r.cfg.OnToolRound != nil {
			r.cfg.OnToolRound(r.stats)
		}
	}
}

// add appends m to the chat and the store. A message of the same role as the last one is
// merged into it, so that roles alternate; revival applies the same rule (store.AppendMessage).
func (r *Runtime) add(m llm.Message) error { return r.addInfo(m, store.MessageInfo{}) }

// addInfo is add, with what the store may record of how m came about.
func (r *Runtime) addInfo(m llm.Message, info store.MessageInfo) error {
	r.chat.msgs = store.AppendMessage(r.chat.msgs, m)
	if r.cfg.Store == nil {
		return nil
	}
	var err error
	if is, ok := r.cfg.Store.(infoStore); ok {
		err = is.AppendInfo(m, info)
	} else {
		err = r.cfg.Store.Append(m)
	}
	if err != nil {
		return fmt.Errorf("append transcript: %w", err)
	}
	return nil
}

func (r *Runtime) emit(ev streamjson.Event) {
	if r.cfg.Emit == nil {
		return
	}
	if r.cfg.Decorate != nil {
		r.cfg.Decorate(ev)
	}
	r.cfg.Emit(ev)
}

// call makes one model call and appends the reply to the chat.
func (r *Runtime) call(ctx context.Context, partial *string) (_ llm.Message, err error) {
	req := &llm.Request{
		Agent:    r.cfg.Agent,
		Model:    r.cfg.ModelName,
		System:   r.cfg.System,
		Messages: r.chat.msgs,
		Tools:    r.tools.Specs(),
	}
	callStart := r.cfg.Now()
	var (
		text    strings.Builder
		blocks  []llm.Block
		done    llm.Event
		seen    bool
		content []llm.Block
	)
	ctx, span := trace.StartModelCall(ctx, r.cfg.Tracer, req)
	defer func() { trace.EndModelCall(span, done, content, err) }()
	for ev, err := range r.cfg.Model.Generate(ctx, req) {
		if err != nil {
			r.stats.APIDuration += r.cfg.Now().Sub(callStart)
			if text.Len() > 0 {
				*partial = text.String()
			}
			return llm.Message{}, fmt.Errorf("model call: %w", err)
		}
		if r.cfg.OnModelEvent != nil {
			r.cfg.OnModelEvent(ev)
		}
		switch ev.Kind {
		case llm.EventTextDelta:
			text.WriteString(ev.Text)
		case llm.EventToolCall:
			tc := ev.ToolCall
			tc.Type = llm.BlockToolUse
			tc.Input = normalizeInput(tc.Input)
			blocks = append(blocks, tc)
		case llm.EventDone:
			done, seen = ev, true
		case llm.EventRetry:
			// The provider makes the call again: what the broken attempt streamed is void.
			text.Reset()
			blocks = blocks[:0]
		}
	}
	r.stats.APIDuration += r.cfg.Now().Sub(callStart)
	if !seen {
		// A stream cut short (often by cancellation) still keeps its partial findings.
		if text.Len() > 0 {
			*partial = text.String()
		}
		if err := ctx.Err(); err != nil {
			return llm.Message{}, err
		}
		return llm.Message{}, fmt.Errorf("model call: %w", llm.ErrStreamCut)
	}
	r.stats.ModelCalls++
	r.stats.Usage = r.stats.Usage.Add(done.Usage)
	content = blocks
	if text.Len() > 0 {
		content = append([]llm.Block{llm.TextBlock(text.String())}, blocks...)
	}
	if len(content) == 0 {
		content = []llm.Block{llm.TextBlock("")}
	}
	reply := llm.Message{Role: llm.RoleAssistant, Content: content}
	model := done.Model
	if model == "" {
		model = r.cfg.ModelName
	}
	usage := done.Usage
	if err := r.addInfo(reply, store.MessageInfo{Start: callStart, Model: model, Usage: &usage}); err != nil {
		return llm.Message{}, err
	}
	stop := done.StopReason
	if stop == "" {
		stop = llm.StopEndTurn
		if len(blocks) > 0 {
			stop = llm.StopToolUse
		}
	}
	id := done.MessageID
	if id == "" {
		id = fmt.Sprintf("msg_%d", r.cfg.Now().UnixNano())
	}
	r.emit(streamjson.NewAssistant(id, model, content, stop, done.Usage))
	return reply, nil
}

// normalizeInput returns tool-call arguments in the form a transcript stores them (as
// json.Marshal writes a RawMessage: compact, HTML-escaped), so that a chat revived from
// the transcript sends the provider the very bytes the resident chat sent (prompt-cache
// fidelity). Empty arguments become {}; arguments that are not JSON are wrapped as
// {"_raw_arguments": "..."}, as the openai provider does, so that the transcript record
// and the events stay encodable and the tool's schema check tells the model what failed.
func normalizeInput(in json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(in)) == 0 {
		return json.RawMessage(`{}`)
	}
	if out, err := json.Marshal(in); err == nil {
		return out
	}
	out, _ := json.Marshal(map[string]string{"_raw_arguments": string(in)})
	return out
}

// runTools runs the calls concurrently and returns their results in call order, as one
// user message, and when each ran. Every tool_use gets a result, even when ctx is
// cancelled. The Admitted calls (Config.Order) take their places in the queues in call
// order (callorder.go).
func (r *Runtime) runTools(ctx context.Context, uses []llm.Block) (llm.Message, []store.CallTime) {
	out := make([]llm.Block, len(uses))
	times := make([]store.CallTime, len(uses))
	rank := make([]int, len(uses))
	n := 0
	for i, u := range uses {
		rank[i] = -1
		if r.cfg.Order != nil && r.cfg.Order(u.Name) == Admitted {
			rank[i], n = n, n+1
		}
	}
	var order *callOrder
	if n > 1 {
		order = newCallOrder(n)
	}
	var wg sync.WaitGroup
	for i, u := range uses {
		wg.Go(func() {
			tctx, span := trace.StartToolCall(ctx, r.cfg.Tracer, u.Name, u.ID)
			if order != nil && rank[i] >= 0 {
				tctx = withCallSlot(tctx, order, rank[i])
				defer order.pass(rank[i])
			}
			start := r.cfg.Now()
			res := r.tools.Run(tctx, tools.Call{ID: u.ID, Name: u.Name, Input: u.Input})
			times[i] = store.CallTime{ID: u.ID, Start: start.UTC(), DurationMS: r.cfg.Now().Sub(start).Milliseconds()}
			if ctx.Err() != nil && !res.IsError && res.Content == "" {
				res = tools.Errorf("cancelled: %v", context.Cause(ctx))
			}
			trace.EndToolCall(span, res.IsError)
			out[i] = llm.Block{Type: llm.BlockToolResult, ToolUseID: u.ID, Content: res.Content, IsError: res.IsError}
		})
	}
	wg.Wait()
	r.stats.ToolUses += len(uses)
	r.stats.LastTool = uses[len(uses)-1].Name
	return llm.Message{Role: llm.RoleUser, Content: out}, times
}
