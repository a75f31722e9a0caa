package agents

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/agents/trace"
	"github.com/stoke-cli/stoke/agents/worktree"
	"github.com/stoke-cli/stoke/streamjson"
)

// prepare makes what the first turn of a fresh launch runs with: the transcript, the
// worktree of an isolated type, the runtime. It fails with ErrShutdown when the
// controller was disposed meanwhile.
func (c *controller) prepare(ctx context.Context) error {
	tr, err := c.openTranscript()
	if err != nil {
		return err
	}
	var wt *worktree.Worktree
	if c.def.Isolation == "worktree" {
		if wt, err = c.newWorktree(ctx); err != nil {
			closeTranscript(tr)
			return err
		}
	}
	root := ""
	if wt != nil {
		root = wt.Path
	}
	head := c.env.head()
	rt := c.newRuntime(tr, nil, root)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		rt.Close()
		closeTranscript(tr)
		return ErrShutdown
	}
	c.rt, c.tr, c.wt, c.head = rt, tr, wt, head
	return nil
}

// runTurn runs one turn to its end: its slot (a queued turn waits for it), task_started,
// the runtime's Execute, the recorded outcome, the notification. It returns once the turn
// has settled. A turn stopped while it waited for its slot never runs: it starts and
// ends cancelled at once.
func (c *controller) runTurn(ctx context.Context, t turn) {
	defer close(t.finished)
	defer t.cancel(nil)
	defer t.slots.release(t.ticket)
	scheduled := c.env.cfg.Now()
	if t.prev != nil {
		<-t.prev
	}
	waitErr := t.slots.wait(ctx, t.ticket)
	var row Row
	var info TurnInfo
	// The turns of one kind start, and say so, in the order they got their slots.
	t.slots.inOrder(t.ticket, func() {
		c.mu.Lock()
		started := c.row.Status == StatusQueued && waitErr == nil
		if started {
			c.row.start(c.env.cfg.Now().UTC())
		}
		c.cur = &turnState{n: t.n, continuation: t.continuation, toolUseID: t.toolUseID, background: t.background,
			start: c.env.cfg.Now(), resident: c.resident}
		if c.row.Status == StatusQueued || started {
			c.cur.queued = scheduled
		}
		row = c.row
		info = c.turnInfoLocked()
		c.mu.Unlock()
		if started {
			c.persist()
		}
		c.env.cfg.Emit(taskStarted(row, t))
	})
	if waitErr != nil {
		c.finish(t, runtime.TurnResult{Reason: runtime.ReasonCancelled, Err: waitErr})
		return
	}
	extra := c.env.lifecycle.TurnStarted(ctx, info)

	ctx = llm.WithTaskID(ctx, string(c.id)) // tells parallel agents of one type apart (cassette)
	ctx, span := trace.StartTurn(ctx, c.env.cfg.Tracer, trace.TurnInfo{
		SessionID: c.env.cfg.SessionID, Agent: row.SubagentType, TaskID: string(c.id), SubagentType: row.SubagentType,
		Turn: t.n, Continuation: string(t.continuation), Caller: t.caller, Parent: t.parent,
	})
	res, err := runLimited(ctx, c.def, func(ctx context.Context) (runtime.TurnResult, error) { return c.execute(ctx, t, extra) })
	if err != nil {
		res = runtime.TurnResult{Reason: runtime.ReasonError, Err: err}
	}
	trace.EndTurn(span, res.Reason, res.Reason == runtime.ReasonCancelled, res.Err)
	c.finish(t, res)
}

// runLimited runs one turn of an agent of type d under d's MaxTime: a turn that runs out
// of time ends as an error wrapping ErrMaxTime, not as a cancellation. Without a MaxTime
// it is turn(ctx).
func runLimited(ctx context.Context, d catalog.Definition, turn func(context.Context) (runtime.TurnResult, error)) (runtime.TurnResult, error) {
	if d.MaxTime <= 0 {
		return turn(ctx)
	}
	limit := fmt.Errorf("%w: %v", ErrMaxTime, d.MaxTime)
	tctx, cancel := context.WithTimeoutCause(ctx, d.MaxTime, limit)
	defer cancel()
	res, err := turn(tctx)
	if err == nil && res.Reason == runtime.ReasonCancelled && ctx.Err() == nil && errors.Is(context.Cause(tctx), ErrMaxTime) {
		res.Reason, res.Err = runtime.ReasonError, limit
	}
	return res, err
}

// execute runs the turn on the controller's runtime, reviving it from the transcript first
// when the controller has none. extra is the context the lifecycle gave the turn (a
// SubagentStart hook's): it comes after the instruction.
func (c *controller) execute(ctx context.Context, t turn, extra string) (runtime.TurnResult, error) {
	c.mu.Lock()
	rt, tr := c.rt, c.tr
	c.mu.Unlock()
	if rt == nil {
		var err error
		// A launch whose first turn never ran has no history: it starts fresh.
		if rt, tr, err = c.revive(t.continuation == streamjson.ContinuationFresh); err != nil {
			return runtime.TurnResult{}, err
		}
	}
	if tr != nil {
		tr.SetTurn(t.n)
	}
	msg := llm.UserText(t.instruction)
	if t.msg != nil {
		msg = *t.msg
	}
	if extra != "" {
		msg.Content = append(slices.Clip(msg.Content), llm.TextBlock("<subagent-start-hook>"+extra+"</subagent-start-hook>"))
	}
	return rt.Execute(ctx, msg)
}

// newRuntime makes the task's runtime. Its callbacks reach only this controller.
func (c *controller) newRuntime(tr *store.Transcript, history []llm.Message, root string) *runtime.Runtime {
	cfg := c.env.cfg
	model := cfg.ModelName
	if c.def.Model != "" && c.def.Model != "inherit" {
		model = c.def.Model
	}
	var chat runtime.ChatStore
	if tr != nil {
		chat = boundarySynced{tr}
	}
	c.mu.Lock()
	toolUseID, description := c.row.ToolUseID, c.row.Description
	c.mu.Unlock()
	keys := streamjson.AgentKeys{TaskID: string(c.id), AgentID: string(c.id), SubagentType: c.def.Name, TaskDescription: description}
	def := c.def
	return cfg.NewRuntime(runtime.Config{
		Agent:     def.Name,
		System:    def.SystemPrompt(),
		Model:     cfg.Model,
		ModelName: model,
		Tools: func() *tools.Set {
			if cfg.SubagentTools == nil {
				return tools.NewSet()
			}
			return cfg.SubagentTools(def, root)
		},
		StopHook: c.stopHook,
		MaxSteps: def.StepCap(cfg.MaxSteps),
		Inbox:    c,
		Store:    chat,
		Emit:     cfg.Emit,
		Decorate: func(ev streamjson.Event) {
			switch ev := ev.(type) {
			case *streamjson.Assistant:
				ev.ParentToolUseID, ev.AgentKeys = &toolUseID, keys
			case *streamjson.User:
				ev.ParentToolUseID, ev.AgentKeys = &toolUseID, keys
			}
		},
		OnToolRound:    c.toolRound,
		History:        history,
		Now:            cfg.Now,
		Tracer:         cfg.Tracer,
		Output:         def.OutputSchema,
		OutputAttempts: cfg.OutputAttempts,
	})
}

// stopHook is the runtime's StopHook: the lifecycle may make the agent go on.
func (c *controller) stopHook(ctx context.Context, final string, active bool) string {
	c.mu.Lock()
	info := c.turnInfoLocked()
	c.mu.Unlock()
	return c.env.lifecycle.TurnStopping(ctx, info, final, active)
}

// turnInfoLocked describes the running turn for the lifecycle. Call with c.mu held.
func (c *controller) turnInfoLocked() TurnInfo {
	t := TurnInfo{TaskID: c.id, Definition: c.def, Turn: c.row.Turn, Transcript: c.row.Transcript}
	if c.cur != nil {
		t.Turn, t.Continuation, t.Background, t.ToolUseID = c.cur.n, c.cur.continuation, c.cur.background, c.cur.toolUseID
	}
	return t
}

// toolRound is the runtime's OnToolRound: a task_progress event.
func (c *controller) toolRound(s runtime.Stats) {
	p := streamjson.NewTaskProgress()
	c.mu.Lock()
	p.TaskID, p.Description, p.SubagentType = string(c.id), c.row.Description, c.def.Name
	p.Turn = c.row.Turn
	var start time.Time
	if c.cur != nil {
		p.ToolUseID, start = c.cur.toolUseID, c.cur.start
	}
	c.mu.Unlock()
	p.LastToolName = s.LastTool
	p.Usage = streamjson.TaskUsage{TotalTokens: s.Usage.Total(), ToolUses: s.ToolUses, DurationMS: c.env.cfg.Now().Sub(start).Milliseconds()}
	c.env.cfg.Emit(p)
}

// Drain implements Inbox: the send_message input queued since the last call.
func (c *controller) Drain() []llm.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.queue
	c.queue = nil
	return q
}

// Settle implements Inbox: atomically, it claims queued input or commits the turn's
// completion (the running→completed transition), which is durable (boundary) before
// Settle returns and anything announces it.
func (c *controller) Settle(final string) []llm.Message {
	c.mu.Lock()
	if q := c.queue; len(q) > 0 {
		c.queue = nil
		c.mu.Unlock()
		return q
	}
	if c.stopRequested || c.closed {
		c.mu.Unlock()
		return nil // the turn is being cancelled; finish records it
	}
	c.row.complete(c.env.cfg.Now().UTC(), final)
	tr := c.tr
	if tr != nil {
		_ = tr.Write(c.turnRecordLocked(c.row.Turn, final))
	}
	if c.cur != nil {
		c.cur.committed, c.cur.row = true, c.row
	}
	c.mu.Unlock()
	c.boundary(tr)
	return nil
}

// finish records a turn that did not complete, emits the notification and releases what
// the turn held. The turn counts as settled when it returns.
func (c *controller) finish(t turn, res runtime.TurnResult) {
	cfg := c.env.cfg
	usage := streamjson.TaskUsage{TotalTokens: res.Stats.Usage.Total(), ToolUses: res.Stats.ToolUses, DurationMS: res.Stats.Duration.Milliseconds()}
	worktree, kept := c.finalizeWorktree()
	c.mu.Lock()
	var row Row
	completed := c.cur != nil && c.cur.committed && res.Reason == runtime.ReasonCompleted
	keep := completed && c.cur.resident && !c.closed && !c.stale
	if completed {
		row = c.cur.row
		row.LastOutcome.Usage, row.LastOutcome.Worktree, row.LastOutcome.KeptWorktree = usage, worktree, kept
		if c.row.Turn == t.n {
			c.row.LastOutcome.Usage, c.row.LastOutcome.Worktree, c.row.LastOutcome.KeptWorktree = usage, worktree, kept
		}
	} else {
		// No later turn can have been scheduled: that needs a completed row.
		errText := ""
		if res.Err != nil {
			errText = res.Err.Error()
		}
		c.row.end(cfg.Now().UTC(), c.endStatusLocked(res), Outcome{Text: res.FinalText, Reason: res.Reason, Error: errText, Usage: usage, Worktree: worktree, KeptWorktree: kept, Undelivered: len(c.queue)})
		if errors.Is(res.Err, ErrNotContinuable) {
			c.row.BlockedReason = errText // a revival found nothing it may continue from
		}
		c.queue = nil
		if c.tr != nil {
			_ = c.tr.Write(c.turnRecordLocked(t.n, res.FinalText))
		}
		row = c.row
	}
	tr := c.tr
	c.cur = nil
	if c.seq == t.seq {
		c.cancel = nil
	}
	var rel released
	if !keep {
		rel = c.takeRuntimeLocked()
	}
	if t.background {
		c.undelivered++ // until the parent is handed the notification below
	}
	c.mu.Unlock()

	if !completed {
		c.boundary(tr)
	}
	// The outcome is recorded: the slot goes to the next turn in line.
	t.slots.release(t.ticket)
	c.dispose(rel)
	n := taskNotification(row, t)
	cfg.Emit(n)
	if t.background {
		cfg.Notify(Notification{Row: row, ToolUseID: t.toolUseID, Status: n.Status, ack: sync.OnceFunc(c.delivered)})
	}
	c.mu.Lock()
	if c.row.Turn == t.n {
		c.row.Notified = true
	}
	row.Notified = true // this turn's notification
	info := c.turnInfoLocked()
	info.Turn, info.Continuation, info.Background, info.ToolUseID = t.n, t.continuation, t.background, t.toolUseID
	c.mu.Unlock()
	c.persist() // the sidecar as the turn left it: its usage, its notification pushed
	// The rows this settlement pushes over MaxRetained are disposed, and the lifecycle has
	// heard of it, before the turn counts as settled: whoever waits for it (Collect, Wait)
	// sees the registry as it will stay.
	c.env.settled()
	c.env.lifecycle.TurnSettled(info, row)
	close(t.done)
}

// endStatusLocked is the status of a turn that did not complete: cancelled when the
// parent stopped it (task_stop), running or queued; paused when anything else cut it
// short (the end of the run: a signal, --timeout, --background-on-exit cancel, shutdown)
// — a turn still queued then keeps its instruction (Row.Pending) for the next; failed on
// an error. Call with c.mu held.
func (c *controller) endStatusLocked(res runtime.TurnResult) Status {
	interrupted := res.Reason == runtime.ReasonCancelled || c.stopRequested || errors.Is(res.Err, context.Canceled)
	switch {
	case !interrupted:
		return StatusFailed
	case errors.Is(c.stopCause, ErrStopped):
		return StatusCancelled
	default:
		return StatusPaused
	}
}
