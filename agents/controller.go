package agents

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/trace"
	"github.com/stoke-cli/stoke/streamjson"
)

// controller owns one task's runtime between turns. Its fields are guarded by the
// registry's mutex. rt and tr are set under it, by Launch before the first turn starts or
// by the turn that revives them, and only the goroutine running a turn uses them (turns
// of one task never overlap: each waits for the entry's last).
type controller struct {
	id TaskID
	rt *Runtime
	tr *Transcript
	// wt is the isolated worktree of the current turn (a fresh launch of an isolated type).
	wt *Worktree

	// cancel cancels the active turn (nil when idle).
	cancel        context.CancelCauseFunc
	turnToolUseID string
	turnStart     time.Time
	// seq numbers scheduled turns; cancel belongs to turn seq.
	seq           int
	cur           *turnState
	stopRequested bool
	// resident: the runtime may stay between turns (a background launch of a type that
	// allows it). Other tasks are revived for every continuation.
	resident bool
	disposed bool
	released bool
}

// turnState is what one turn records while it ends.
type turnState struct {
	n            int
	continuation string
	committed    bool
	row          Row // the row as committed at completion
}

type turn struct {
	n            int
	instruction  string
	msg          *llm.Message
	toolUseID    string
	continuation string
	background   bool
	// caller is the span of the task or send_message call that started the turn, linked
	// from the turn's own trace.
	caller trace.SpanContext
	done   chan struct{}
	seq    int
}

// startTurnLocked schedules t on its own goroutine, after the task's previous turn has
// fully finished, whichever controller ran it (a revived controller replaces one whose
// turn may still be emitting its notification). Call with r.mu held and the row already
// running.
func (r *Registry) startTurnLocked(c *controller, e *entry, t turn) {
	prev := e.last
	done := make(chan struct{})
	e.last = done
	tctx, cancel := context.WithCancelCause(r.ctx)
	c.cancel = cancel
	c.seq++
	t.seq = c.seq
	c.stopRequested = false
	r.wg.Add(1)
	go func() {
		defer close(done)
		defer cancel(nil)
		if prev != nil {
			<-prev
		}
		r.runTurn(tctx, c, e, t)
	}()
}

// runTurn runs one turn to its end: task_started, the runtime's Execute, the recorded
// outcome, the notification. It calls r.wg.Done.
func (r *Registry) runTurn(ctx context.Context, c *controller, e *entry, t turn) {
	defer r.wg.Done()
	r.mu.Lock()
	c.turnToolUseID, c.turnStart = t.toolUseID, r.cfg.Now()
	c.cur = &turnState{n: t.n, continuation: t.continuation}
	row := e.row
	in := r.hookInput(c, e)
	r.mu.Unlock()
	r.runHooks(ctx, hooks.SubagentStart, e.def, in)

	ev := streamjson.NewTaskStarted()
	ev.TaskID, ev.RunID, ev.ToolUseID = string(c.id), fmt.Sprintf("%s#%d", c.id, t.n), t.toolUseID
	ev.Description, ev.SubagentType, ev.Prompt = row.Description, row.SubagentType, t.instruction
	ev.IsBackgrounded, ev.Turn, ev.Continuation = t.background, t.n, t.continuation
	r.cfg.Emit(ev)

	ctx = llm.WithTaskID(ctx, string(c.id)) // tells parallel agents of one type apart (cassette)
	ctx, span := trace.StartTurn(ctx, r.cfg.Tracer, trace.TurnInfo{
		SessionID: r.cfg.SessionID, Agent: row.SubagentType, TaskID: string(c.id), SubagentType: row.SubagentType,
		Turn: t.n, Continuation: t.continuation, Caller: t.caller,
	})
	res, err := e.def.runLimited(ctx, func(ctx context.Context) (TurnResult, error) { // the definition's MaxTime
		return r.execute(ctx, c, e, t)
	})
	if err != nil {
		res = TurnResult{Reason: ReasonError, Err: err}
	}
	trace.EndTurn(span, res.Reason, res.Err)
	r.finishTurn(c, e, t, res)
}

// execute runs the turn on the controller's runtime, reviving it from the transcript first
// when the controller has none.
func (r *Registry) execute(ctx context.Context, c *controller, e *entry, t turn) (TurnResult, error) {
	if c.rt == nil {
		if err := r.revive(c, e); err != nil {
			return TurnResult{}, err
		}
	}
	if c.tr != nil {
		c.tr.SetTurn(t.n)
	}
	msg := llm.UserText(t.instruction)
	if t.msg != nil {
		msg = *t.msg
	}
	return c.rt.Execute(ctx, msg)
}

// revive rebuilds the runtime from the task's transcript.
func (r *Registry) revive(c *controller, e *entry) error {
	r.mu.Lock()
	path, def := e.row.Transcript, e.def
	r.mu.Unlock()
	if path == "" {
		return fmt.Errorf("%w: task has no transcript to revive from", ErrNotContinuable)
	}
	loaded, err := ReadTranscript(path)
	if err != nil {
		return fmt.Errorf("revive %s: %w", c.id, err)
	}
	for _, w := range loaded.Warnings {
		r.cfg.Logger.Warn("transcript damaged", "task_id", c.id, "warning", w)
	}
	if loaded.Meta.TaskID != "" && loaded.Meta.TaskID != string(c.id) {
		return fmt.Errorf("%w: transcript %s belongs to task %s", ErrNotContinuable, path, loaded.Meta.TaskID)
	}
	tr, err := OpenTranscript(path, r.cfg.Now)
	if err != nil {
		return fmt.Errorf("revive %s: %w", c.id, err)
	}
	rt := r.newRuntime(c, e, def, tr, RepairDangling(loaded.Messages), "")
	r.mu.Lock()
	c.tr, c.rt = tr, rt
	r.mu.Unlock()
	return nil
}

// entryInbox is the runtime's view of its task row: queued send_message input, and the
// atomic claim-or-complete at the end of a turn.
type entryInbox struct {
	r *Registry
	e *entry
	c *controller
}

func (in *entryInbox) Drain() []llm.Message {
	in.r.mu.Lock()
	defer in.r.mu.Unlock()
	q := in.e.queue
	in.e.queue = nil
	return q
}

func (in *entryInbox) Settle(final string) []llm.Message {
	// Persist the chat first (outside the lock), so the completed row always has its
	// history on disk.
	if in.c.tr != nil {
		if err := in.c.tr.Sync(); err != nil {
			in.r.cfg.Logger.Warn("sync transcript", "task_id", in.c.id, "err", err)
		}
	}
	in.r.mu.Lock()
	if q := in.e.queue; len(q) > 0 {
		in.e.queue = nil
		in.r.mu.Unlock()
		return q
	}
	if in.c.stopRequested || in.c.disposed {
		in.r.mu.Unlock()
		return nil // the turn is being cancelled; finishTurn records it
	}
	in.r.completeLocked(in.e, in.c, final)
	if in.c.cur != nil {
		in.c.cur.committed, in.c.cur.row = true, in.e.row
	}
	in.r.mu.Unlock()
	in.r.persist(in.e)
	return nil
}

// completeLocked records a successful turn: the running→completed transition.
func (r *Registry) completeLocked(e *entry, c *controller, final string) {
	now := r.cfg.Now().UTC()
	e.row.Status, e.row.UpdatedAt, e.row.EndedAt = StatusCompleted, now, now
	e.row.Interrupted = false
	e.row.LastOutcome = Outcome{Text: final, Reason: ReasonCompleted}
	if c.tr != nil {
		_ = c.tr.Write(Record{Type: RecordTurn, Turn: e.row.Turn, Status: string(StatusCompleted), Summary: final})
	}
}

// finishTurn records a turn that did not complete, emits the notification and releases
// what the turn held.
func (r *Registry) finishTurn(c *controller, e *entry, t turn, res TurnResult) {
	usage := streamjson.TaskUsage{TotalTokens: res.Stats.Usage.Total(), ToolUses: res.Stats.ToolUses, DurationMS: res.Stats.Duration.Milliseconds()}
	worktree := r.finalizeWorktree(c)
	r.mu.Lock()
	var row Row
	completed := c.cur != nil && c.cur.committed && res.Reason == ReasonCompleted
	if completed {
		row = c.cur.row
		row.LastOutcome.Usage, row.LastOutcome.Worktree = usage, worktree
		if e.row.Turn == t.n {
			e.row.LastOutcome.Usage, e.row.LastOutcome.Worktree = usage, worktree
		}
	} else {
		// No later turn can have been scheduled: that needs a completed row.
		now := r.cfg.Now().UTC()
		status, interrupted := StatusFailed, false
		if res.Reason == ReasonCancelled || c.stopRequested || errors.Is(res.Err, context.Canceled) {
			status, interrupted = StatusCancelled, true
		}
		errText := ""
		if res.Err != nil {
			errText = res.Err.Error()
		}
		e.row.Status, e.row.UpdatedAt, e.row.EndedAt = status, now, now
		e.row.Interrupted = interrupted
		e.row.LastOutcome = Outcome{Text: res.FinalText, Reason: res.Reason, Error: errText, Interrupted: interrupted, Usage: usage, Worktree: worktree, Undelivered: len(e.queue)}
		e.queue = nil
		if c.tr != nil {
			_ = c.tr.Write(Record{Type: RecordTurn, Turn: t.n, Status: string(status), Summary: res.FinalText})
			_ = c.tr.Sync()
		}
		row = e.row
	}
	c.cur = nil
	keep := completed && c.resident && !c.disposed
	if !keep && r.controllers[c.id] == c {
		delete(r.controllers, c.id)
	}
	if c.seq == t.seq {
		c.cancel = nil
	}
	r.mu.Unlock()

	if !completed {
		r.persist(e)
	}
	if !keep {
		r.dispose(c)
		r.release(c)
	}
	r.notify(c, t, row)

	r.mu.Lock()
	if e.row.Turn == t.n {
		e.row.Notified = true
	}
	close(t.done)
	prune := r.pruneLocked()
	r.mu.Unlock()
	for _, pc := range prune {
		r.dispose(pc)
	}
}

// finalizeWorktree ends the isolated worktree of the turn that just ran, if it had one, and
// says what became of it.
func (r *Registry) finalizeWorktree(c *controller) string {
	r.mu.Lock()
	wt := c.wt
	c.wt = nil
	r.mu.Unlock()
	if wt == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	note, err := wt.Finalize(ctx)
	if err != nil {
		r.cfg.Logger.Warn("finalize worktree", "task_id", c.id, "path", wt.Path, "err", err)
		return fmt.Sprintf("The worktree at %s could not be finalized: %v", wt.Path, err)
	}
	return note
}

// notify emits task_notification and, for a background turn, hands the parent its
// <task-notification> message.
func (r *Registry) notify(c *controller, t turn, row Row) {
	n := streamjson.NewTaskNotification()
	n.TaskID, n.RunID, n.ToolUseID = string(c.id), fmt.Sprintf("%s#%d", c.id, t.n), t.toolUseID
	n.Turn, n.Summary, n.Interrupted = t.n, row.LastOutcome.Text, row.Interrupted
	n.OutputFile, n.Usage = row.Transcript, row.LastOutcome.Usage
	switch row.Status {
	case StatusCompleted:
		n.Status = streamjson.StatusCompleted
	case StatusCancelled:
		n.Status, n.Reason = streamjson.StatusStopped, "cancelled"
	default:
		n.Status, n.Reason = streamjson.StatusFailed, row.LastOutcome.Reason
	}
	r.cfg.Emit(n)
	if t.background {
		r.cfg.Notify(llm.UserText(NotificationText(row, t.toolUseID, n.Status)))
	}
}

// NotificationText is the <task-notification> message the parent model reads.
func NotificationText(row Row, toolUseID, status string) string {
	var b strings.Builder
	b.WriteString("<task-notification>\n")
	fmt.Fprintf(&b, "<task-id>%s</task-id>\n", row.TaskID)
	fmt.Fprintf(&b, "<tool-use-id>%s</tool-use-id>\n", toolUseID)
	fmt.Fprintf(&b, "<status>%s</status>\n", status)
	fmt.Fprintf(&b, "<turn>%d</turn>\n", row.Turn)
	summary := fmt.Sprintf("Agent %q (%s) %s turn %d.", row.Description, row.SubagentType, status, row.Turn)
	if row.Interrupted {
		summary += " It was cancelled before it finished; the result holds its partial findings."
	} else if row.LastOutcome.Error != "" {
		summary += " Error: " + row.LastOutcome.Error
	}
	if row.LastOutcome.Worktree != "" {
		summary += " " + row.LastOutcome.Worktree
	}
	if n := row.LastOutcome.Undelivered; n > 0 {
		summary += fmt.Sprintf(" %d message(s) sent to it with send_message were not delivered.", n)
	}
	fmt.Fprintf(&b, "<summary>%s</summary>\n", summary)
	fmt.Fprintf(&b, "<result>%s</result>\n", row.LastOutcome.Text)
	u := row.LastOutcome.Usage
	fmt.Fprintf(&b, "<usage><total_tokens>%d</total_tokens><tool_uses>%d</tool_uses><duration_ms>%d</duration_ms></usage>\n", u.TotalTokens, u.ToolUses, u.DurationMS)
	b.WriteString("<note>The same task id notifies again after every continuation. Continue it with send_message.</note>\n")
	b.WriteString("</task-notification>")
	return b.String()
}

// settleFailed records a launch that failed before its first turn ran.
func (r *Registry) settleFailed(e *entry, c *controller, done chan struct{}, err error) {
	r.mu.Lock()
	now := r.cfg.Now().UTC()
	e.row.Status, e.row.UpdatedAt, e.row.EndedAt, e.row.Notified = StatusFailed, now, now, true
	e.row.LastOutcome = Outcome{Reason: ReasonError, Error: err.Error()}
	if r.controllers[c.id] == c {
		delete(r.controllers, c.id)
	}
	close(done)
	r.mu.Unlock()
	r.persist(e)
	r.dispose(c)
}

// dispose aborts c's active turn and releases its runtime, exactly once. A turn still
// running finishes first (its finalizer releases it).
func (r *Registry) dispose(c *controller) {
	r.mu.Lock()
	if c.disposed {
		r.mu.Unlock()
		return
	}
	c.disposed = true
	active := c.cancel != nil
	if active {
		c.cancel(ErrDisposed)
	}
	r.mu.Unlock()
	if r.cfg.OnDispose != nil {
		r.cfg.OnDispose(c.id)
	}
	if !active {
		r.release(c)
	}
}

// release frees the runtime and transcript of a disposed controller.
func (r *Registry) release(c *controller) {
	r.mu.Lock()
	if c.released {
		r.mu.Unlock()
		return
	}
	c.released = true
	rt, tr := c.rt, c.tr
	r.mu.Unlock()
	if rt != nil {
		rt.Close()
	}
	if tr != nil {
		_ = tr.Close()
	}
}
