package agents

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/agents/trace"
	"github.com/stoke-cli/stoke/streamjson"
)

// controller owns one task: its row, and what runs its turns — the runtime and transcript
// kept between turns, the worktree of the turn running, the cancel func and sequence
// number of the latest scheduled turn, and the goroutine running it. One controller lives
// as long as its row is in the registry; a task that is not resident gives up its runtime
// after each turn and revives it from the transcript for the next.
//
// Concurrency: mu guards every field below it. It is a leaf lock: taken after the
// registry's lock (never before it), and never held across a call out of this file
// other than a row transition or a transcript write. The runtime's callbacks (the Inbox,
// the stop hook, the tool-round progress) take only mu. Turns of one task never overlap:
// each scheduled turn waits until the previous one has finished (last).
type controller struct {
	id  TaskID
	def Definition
	env *taskEnv

	mu    sync.Mutex
	row   Row
	queue []llm.Message // send_message input waiting for the running turn
	rt    *Runtime
	tr    *store.Transcript
	wt    *Worktree // the isolated worktree of the current turn (a fresh launch of an isolated type)
	// resident: the runtime may stay between turns (a background launch of a type that
	// allows it). lives counts the runtimes (or attempts to make one: a launch, a
	// revival) not yet released; OnDispose is due once for each.
	resident bool
	lives    int
	closed   bool // disposed: no turn will run on it again
	// cancel cancels the latest scheduled turn, whose number is seq (nil when idle).
	cancel        context.CancelCauseFunc
	seq           int
	stopRequested bool
	stopCause     error      // why the latest turn was stopped: ErrStopped (task_stop) or the run's end
	cur           *turnState // the turn running (nil between turns)
	// done is closed when the latest turn has settled (outcome recorded, notification
	// delivered); a row with no turn running or finishing has it closed. last is closed
	// when the latest scheduled turn has fully finished (nil: none yet).
	done, last chan struct{}
	rev        int // counts row changes; written is the rev last stored in the sidecar

	wmu     sync.Mutex // held while writing the sidecar
	written int
}

// turnState is what the running turn records while it ends.
type turnState struct {
	n            int
	continuation streamjson.Continuation
	toolUseID    string
	background   bool
	start        time.Time
	queued       time.Time // when a turn that waited for its slot was scheduled (zero: it did not wait)
	resident     bool      // the runtime may stay after this turn
	committed    bool
	row          Row // the row as committed at completion
}

// turn is one scheduled instruction of a task.
type turn struct {
	n            int
	instruction  string
	msg          *llm.Message
	toolUseID    string
	continuation streamjson.Continuation
	background   bool
	// caller is the span of the task or send_message call that started the turn, linked
	// from the turn's own trace.
	caller trace.SpanContext
	// done is the row's done channel of this turn; prev is closed when the task's
	// previous turn has finished (nil: none), finished when this one has.
	done, prev, finished chan struct{}
	seq                  int
	cancel               context.CancelCauseFunc
	// ticket is the turn's claim on a slot of slots (the caps): it runs once the slot is
	// its, and gives it back when its outcome is recorded.
	slots  *slots
	ticket *slotTicket
}

// newController returns the controller of row. A running or queued row gets an open done
// channel (its first turn is about to be scheduled); any other a closed one.
func newController(env *taskEnv, def Definition, row Row, resident bool) *controller {
	c := &controller{id: row.TaskID, def: def, env: env, row: row, resident: resident, done: make(chan struct{})}
	if row.Status.Active() {
		c.lives = 1
	} else {
		close(c.done)
	}
	return c
}

// snapshot returns the row.
func (c *controller) snapshot() Row {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.row
}

// state returns the row and the channel closed when its latest turn has settled.
func (c *controller) state() (Row, chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.row, c.done
}

// isResident reports whether the task has a runtime kept between turns.
func (c *controller) isResident() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rt != nil && !c.closed
}

// enqueue queues msg into the running (or queued) turn; false when the task has none.
func (c *controller) enqueue(msg llm.Message) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.row.Status.Active() {
		return false
	}
	c.queue = append(c.queue, msg)
	return true
}

// prepare makes what the first turn of a fresh launch runs with: the transcript, the
// worktree of an isolated type, the runtime. It fails with ErrShutdown when the
// controller was disposed meanwhile.
func (c *controller) prepare(ctx context.Context) error {
	tr, err := c.openTranscript()
	if err != nil {
		return err
	}
	var wt *Worktree
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
	rt := c.newRuntime(tr, nil, root)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		rt.Close()
		closeTranscript(tr)
		return ErrShutdown
	}
	c.rt, c.tr, c.wt = rt, tr, wt
	return nil
}

func (c *controller) openTranscript() (*store.Transcript, error) {
	st := c.env.cfg.Store
	if st == nil {
		return nil, nil
	}
	tr, err := st.OpenTranscript(st.TaskTranscript(string(c.id)), c.env.cfg.Now)
	if err != nil {
		return nil, err
	}
	if err := tr.Write(store.Record{Type: store.RecordMeta, TaskID: string(c.id), SubagentType: c.def.Name, System: c.def.SystemPrompt()}); err != nil {
		tr.Close()
		return nil, err
	}
	return tr, nil
}

func (c *controller) newWorktree(ctx context.Context) (*Worktree, error) {
	var dir string
	var err error
	if st := c.env.cfg.Store; st != nil {
		dir, err = st.WorktreeDir()
	} else {
		dir, err = store.TempWorktreeDir()
	}
	if err != nil {
		return nil, err
	}
	return NewWorktree(ctx, c.env.cfg.CWD, dir, c.id, 1)
}

// schedule makes t the task's latest turn: it gets a context derived from parent that
// task_stop, CancelAll and disposal cancel, and waits for the previous turn. Call with
// the row already running, under the registry's lock (so that Stop and CancelAll see
// the new turn's cancel func).
func (c *controller) schedule(parent context.Context, t turn) (context.Context, turn) {
	ctx, cancel := context.WithCancelCause(parent)
	c.mu.Lock()
	defer c.mu.Unlock()
	t.done, t.prev, t.finished, t.cancel = c.done, c.last, make(chan struct{}), cancel
	c.last = t.finished
	c.cancel = cancel
	c.seq++
	t.seq = c.seq
	c.stopRequested, c.stopCause = false, nil
	return ctx, t
}

// continueTurn moves a completed or paused row into its next turn (queued: waiting for a
// slot), with message as the instruction, and returns the turn and how it continues: on
// the resident runtime, or revived from the transcript. Call under the registry's lock,
// after continuable.
func (c *controller) continueTurn(now time.Time, message, toolUseID string, queued bool) (turn, streamjson.Continuation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kind := streamjson.ContinuationResident
	if !c.resident || c.rt == nil || c.closed {
		// A revived task starts a new life, resident from now on if its type allows
		// (a foreground launch's task too).
		kind = streamjson.ContinuationRevived
		c.lives++
		c.resident = c.def.Resident()
	}
	c.row.continueTurn(now, toolUseID, queued)
	c.done = make(chan struct{})
	msg := llm.UserText(message)
	return turn{n: c.row.Turn, instruction: message, msg: &msg, toolUseID: toolUseID, continuation: kind, background: true}, kind
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
		c.finish(t, TurnResult{Reason: ReasonCancelled, Err: waitErr})
		return
	}
	c.env.lifecycle.TurnStarted(ctx, info)

	ctx = llm.WithTaskID(ctx, string(c.id)) // tells parallel agents of one type apart (cassette)
	ctx, span := trace.StartTurn(ctx, c.env.cfg.Tracer, trace.TurnInfo{
		SessionID: c.env.cfg.SessionID, Agent: row.SubagentType, TaskID: string(c.id), SubagentType: row.SubagentType,
		Turn: t.n, Continuation: string(t.continuation), Caller: t.caller,
	})
	res, err := c.def.runLimited(ctx, func(ctx context.Context) (TurnResult, error) { return c.execute(ctx, t) })
	if err != nil {
		res = TurnResult{Reason: ReasonError, Err: err}
	}
	trace.EndTurn(span, res.Reason, res.Err)
	c.finish(t, res)
}

// execute runs the turn on the controller's runtime, reviving it from the transcript first
// when the controller has none.
func (c *controller) execute(ctx context.Context, t turn) (TurnResult, error) {
	c.mu.Lock()
	rt, tr := c.rt, c.tr
	c.mu.Unlock()
	if rt == nil {
		var err error
		if rt, tr, err = c.revive(); err != nil {
			return TurnResult{}, err
		}
	}
	if tr != nil {
		tr.SetTurn(t.n)
	}
	msg := llm.UserText(t.instruction)
	if t.msg != nil {
		msg = *t.msg
	}
	return rt.Execute(ctx, msg)
}

// revive rebuilds the runtime from the task's transcript.
func (c *controller) revive() (*Runtime, *store.Transcript, error) {
	c.mu.Lock()
	path := c.row.Transcript
	c.mu.Unlock()
	st := c.env.cfg.Store
	if path == "" || st == nil {
		return nil, nil, fmt.Errorf("%w: task has no transcript to revive from", ErrNotContinuable)
	}
	loaded, err := st.ReadTranscript(path)
	if errors.Is(err, store.ErrOutside) {
		return nil, nil, fmt.Errorf("%w: its transcript path leaves its session directory: %w", ErrNotContinuable, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("revive %s: %w", c.id, err)
	}
	for _, w := range loaded.Warnings {
		c.env.cfg.Logger.Warn("transcript damaged", "task_id", c.id, "warning", w)
	}
	if loaded.Meta.TaskID != "" && loaded.Meta.TaskID != string(c.id) {
		return nil, nil, fmt.Errorf("%w: transcript %s belongs to task %s", ErrNotContinuable, path, loaded.Meta.TaskID)
	}
	history, rep := store.Repair(loaded.Messages)
	if len(history) == 0 {
		return nil, nil, fmt.Errorf("%w: its transcript %s holds no history", ErrNotContinuable, path)
	}
	if rep.Damaged() {
		c.env.cfg.Logger.Warn("transcript repaired", "task_id", c.id, "repairs", rep.String())
	}
	tr, err := st.OpenTranscript(path, c.env.cfg.Now)
	if err != nil {
		return nil, nil, fmt.Errorf("revive %s: %w", c.id, err)
	}
	rt := c.newRuntime(tr, history, "")
	c.mu.Lock()
	c.rt, c.tr = rt, tr
	c.mu.Unlock()
	return rt, tr, nil
}

// newRuntime makes the task's runtime. Its callbacks reach only this controller.
func (c *controller) newRuntime(tr *store.Transcript, history []llm.Message, root string) *Runtime {
	cfg := c.env.cfg
	model := cfg.ModelName
	if c.def.Model != "" && c.def.Model != "inherit" {
		model = c.def.Model
	}
	var chat ChatStore
	if tr != nil {
		chat = boundarySynced{tr}
	}
	c.mu.Lock()
	toolUseID, description := c.row.ToolUseID, c.row.Description
	c.mu.Unlock()
	keys := streamjson.AgentKeys{TaskID: string(c.id), AgentID: string(c.id), SubagentType: c.def.Name, TaskDescription: description}
	def := c.def
	return cfg.NewRuntime(RuntimeConfig{
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
		OnToolRound: c.toolRound,
		History:     history,
		Now:         cfg.Now,
		Tracer:      cfg.Tracer,
	})
}

// boundarySynced is a task's transcript as its runtime writes it: the runtime's own sync
// at the end of a turn is left out, for every turn ends at a boundary (Settle or finish)
// that syncs the transcript with the turn's end record in it.
type boundarySynced struct{ *store.Transcript }

func (boundarySynced) Sync() error { return nil }

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
func (c *controller) toolRound(s Stats) {
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

// turnRecordLocked is the transcript record that ends turn n: its status and summary, and
// the row as its sidecar holds it (the durable copy of the sidecar). Call with c.mu held.
func (c *controller) turnRecordLocked(n int, summary string) store.Record {
	rec := store.Record{Type: store.RecordTurn, Turn: n, Status: string(c.row.Status), Summary: summary}
	if cur := c.cur; cur != nil && cur.n == n { // how the turn ran, for reports
		rec.Start, rec.Queued, rec.Continuation = cur.start.UTC(), cur.queued.UTC(), string(cur.continuation)
	}
	if st := c.env.cfg.Store; st != nil {
		if data, err := EncodeSidecar(Sidecar{Row: c.row, CWD: c.env.cfg.CWD, Isolation: c.def.Isolation}, st.Rel); err == nil {
			rec.Row = data
		}
	}
	return rec
}

// boundary makes the end of a turn durable, in two fsyncs: the transcript (the turn's
// history and its end record, row included), then — the sidecar replaced meanwhile — the
// directory that holds the sidecar's new name. A crash of the process loses nothing
// written; after a crash of the machine, the sidecar is what this boundary wrote, or is
// rebuilt from the row in the transcript (ReadSidecar).
func (c *controller) boundary(tr *store.Transcript) {
	if tr != nil {
		if err := tr.Sync(); err != nil {
			c.env.cfg.Logger.Warn("sync transcript", "task_id", c.id, "err", err)
		}
	}
	c.persist()
	if st := c.env.cfg.Store; st != nil {
		if err := st.SyncSidecars(); err != nil {
			c.env.cfg.Logger.Warn("sync sidecars", "task_id", c.id, "err", err)
		}
	}
}

// finish records a turn that did not complete, emits the notification and releases what
// the turn held. The turn counts as settled when it returns.
func (c *controller) finish(t turn, res TurnResult) {
	cfg := c.env.cfg
	usage := streamjson.TaskUsage{TotalTokens: res.Stats.Usage.Total(), ToolUses: res.Stats.ToolUses, DurationMS: res.Stats.Duration.Milliseconds()}
	worktree := c.finalizeWorktree()
	c.mu.Lock()
	var row Row
	completed := c.cur != nil && c.cur.committed && res.Reason == ReasonCompleted
	keep := completed && c.cur.resident && !c.closed
	if completed {
		row = c.cur.row
		row.LastOutcome.Usage, row.LastOutcome.Worktree = usage, worktree
		if c.row.Turn == t.n {
			c.row.LastOutcome.Usage, c.row.LastOutcome.Worktree = usage, worktree
		}
	} else {
		// No later turn can have been scheduled: that needs a completed row.
		errText := ""
		if res.Err != nil {
			errText = res.Err.Error()
		}
		c.row.end(cfg.Now().UTC(), c.endStatusLocked(res), Outcome{Text: res.FinalText, Reason: res.Reason, Error: errText, Usage: usage, Worktree: worktree, Undelivered: len(c.queue)})
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
		cfg.Notify(Notification{Row: row, ToolUseID: t.toolUseID, Status: n.Status})
	}
	c.mu.Lock()
	if c.row.Turn == t.n {
		c.row.Notified = true
	}
	row.Notified = true // this turn's notification
	info := c.turnInfoLocked()
	info.Turn, info.Continuation, info.Background, info.ToolUseID = t.n, t.continuation, t.background, t.toolUseID
	c.mu.Unlock()
	// The rows this settlement pushes over MaxRetained are disposed, and the lifecycle has
	// heard of it, before the turn counts as settled: whoever waits for it (Collect, Wait)
	// sees the registry as it will stay.
	c.env.settled()
	c.env.lifecycle.TurnSettled(info, row)
	close(t.done)
}

// endStatusLocked is the status of a turn that did not complete: cancelled when the
// parent stopped it (task_stop), or when a queued launch is stopped before it ever ran
// (there is no history to continue); paused when anything else cut it short (the end of
// the run: a signal, --timeout, --background-on-exit cancel, shutdown); failed on an
// error. Call with c.mu held.
func (c *controller) endStatusLocked(res TurnResult) Status {
	interrupted := res.Reason == ReasonCancelled || c.stopRequested || errors.Is(res.Err, context.Canceled)
	switch {
	case !interrupted:
		return StatusFailed
	case errors.Is(c.stopCause, ErrStopped), c.row.Status == StatusQueued && c.row.Turn <= 1:
		return StatusCancelled
	default:
		return StatusPaused
	}
}

// finalizeWorktree ends the isolated worktree of the turn that just ran, if it had one, and
// says what became of it.
func (c *controller) finalizeWorktree() string {
	c.mu.Lock()
	wt := c.wt
	c.wt = nil
	c.mu.Unlock()
	if wt == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	note, err := wt.Finalize(ctx)
	if err != nil {
		c.env.cfg.Logger.Warn("finalize worktree", "task_id", c.id, "path", wt.Path, "err", err)
		return fmt.Sprintf("The worktree at %s could not be finalized: %v", wt.Path, err)
	}
	return note
}

// failLaunch records a launch that failed before its first turn ran, and disposes it.
func (c *controller) failLaunch(err error) {
	c.mu.Lock()
	c.row.failLaunch(c.env.cfg.Now().UTC(), err)
	close(c.done)
	c.closed = true
	rel := c.takeRuntimeLocked()
	c.mu.Unlock()
	c.persist()
	c.dispose(rel)
}

// stop cancels the latest scheduled turn with cause (task_stop, the end of the run); its
// partial findings are kept. Call under the registry's lock.
func (c *controller) stop(cause error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopRequested {
		c.stopRequested, c.stopCause = true, cause
	}
	if c.cancel != nil {
		c.cancel(cause)
	}
}

// close disposes the controller for good (shutdown, pruning): a turn still running is
// cancelled and releases the runtime when it ends; an idle runtime is released now.
// Idempotent.
func (c *controller) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	var rel released
	if c.cancel != nil {
		c.cancel(ErrDisposed)
	} else {
		rel = c.takeRuntimeLocked()
	}
	c.mu.Unlock()
	c.dispose(rel)
}

// releaseIdle gives up the resident runtime of a task with no turn running or waiting
// for its slot (a queued launch has no history yet to revive from, and a queued
// continuation was told it runs resident); the row stays and its next turn revives. It
// reports whether there was one.
func (c *controller) releaseIdle() (released, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.row.Status.Active() || c.cur != nil || c.rt == nil || c.closed {
		return released{}, false
	}
	return c.takeRuntimeLocked(), true
}

// released is a runtime and transcript taken from a controller, to close outside its lock.
type released struct {
	id   TaskID
	rt   *Runtime
	tr   *store.Transcript
	live bool // OnDispose is due
}

func (c *controller) takeRuntimeLocked() released {
	r := released{id: c.id, rt: c.rt, tr: c.tr, live: c.lives > 0}
	if r.live {
		c.lives--
	}
	c.rt, c.tr = nil, nil
	return r
}

// dispose closes what takeRuntimeLocked took, and reports it to OnDispose once.
func (c *controller) dispose(r released) {
	if r.live && c.env.cfg.OnDispose != nil {
		c.env.cfg.OnDispose(r.id)
	}
	if r.rt != nil {
		r.rt.Close()
	}
	closeTranscript(r.tr)
}

func closeTranscript(tr *store.Transcript) {
	if tr != nil {
		_ = tr.Close()
	}
}

// persist writes the row to its sidecar, unless a newer write already happened. Call
// without mu held, after the transition, before anything announces it.
func (c *controller) persist() { c.write(true) }

// flush writes the row to its sidecar if an earlier write failed.
func (c *controller) flush() { c.write(false) }

func (c *controller) write(changed bool) {
	st := c.env.cfg.Store
	if st == nil {
		return
	}
	c.mu.Lock()
	if changed {
		c.rev++
	}
	rev := c.rev
	sc := Sidecar{Row: c.row, CWD: c.env.cfg.CWD, Isolation: c.def.Isolation}
	c.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if rev <= c.written {
		return
	}
	data, err := EncodeSidecar(sc, st.Rel)
	if err == nil {
		err = st.WriteSidecar(string(sc.TaskID), data)
	}
	if err != nil {
		c.env.cfg.Logger.Warn("write sidecar", "task_id", sc.TaskID, "err", err)
		return
	}
	c.written = rev
}
