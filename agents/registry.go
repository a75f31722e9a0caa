package agents

import (
	"context"
	"fmt"
	"sync"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/trace"
	"github.com/stoke-cli/stoke/streamjson"
)

// Registry is the index of a session's tasks: it launches them, hands them messages,
// collects and stops them, and keeps the caps. Each task's row and runtime belong to its
// controller (controller.go); the registry changes a row only through the row state
// machine (row.go). See the package documentation for the concurrency contract; every
// exported method is safe for concurrent use.
type Registry struct {
	cfg    RegistryConfig
	env    *taskEnv
	runner turnRunner
	wg     sync.WaitGroup // turns scheduled and not yet settled
	// bg and fg are the slots of background turns (launches and every continuation) and
	// of foreground launches: the caps, and the turns waiting in line for a slot.
	bg, fg *slots

	// mu guards the fields below and every transition of a row into running (the caps
	// count running rows). It is taken before a controller's lock, never after it.
	mu sync.Mutex
	// parent is the run's context; ctx (derived from it, replaced by Reset) is the
	// lifetime of the turns.
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
	tasks  map[TaskID]*controller
	closed bool
}

// NewRegistry returns a registry whose turns live under ctx (the run's context).
func NewRegistry(ctx context.Context, cfg RegistryConfig) *Registry {
	cfg = withRegistryDefaults(cfg)
	rctx, cancel := context.WithCancelCause(ctx)
	queued := max(cfg.MaxQueued, 0) // NoQueue: none
	r := &Registry{cfg: cfg, runner: localRunner{}, parent: ctx, ctx: rctx, cancel: cancel, tasks: make(map[TaskID]*controller),
		bg: newSlots(cfg.MaxBackground, queued), fg: newSlots(cfg.MaxForeground, unbounded)}
	hooks := CommandHooks{SessionID: cfg.SessionID, CWD: cfg.CWD, Config: cfg.Hooks, Runner: cfg.HookRunner, Logger: cfg.Logger}
	r.env = &taskEnv{cfg: &r.cfg, lifecycle: Lifecycles(hooks, cfg.Lifecycle), head: cfg.Head, settled: r.prune}
	return r
}

// BackgroundEnabled reports whether run_in_background is offered and accepted. It reads
// the configuration only (immutable).
func (r *Registry) BackgroundEnabled() bool { return r.cfg.BackgroundAgents }

// Catalog returns the subagent types (immutable; callers must not change it).
func (r *Registry) Catalog() catalog.Catalog { return r.cfg.Catalog }

// LaunchRequest is a fresh launch.
type LaunchRequest struct {
	Description  string
	Prompt       string
	SubagentType string
	Background   bool
	// ToolUseID is the task call that launched it.
	ToolUseID string
}

// Launched is what Launch did: the task's row, and its place in the queue.
type Launched struct {
	Row
	// Position is the task's place in the queue of its kind when it was launched (1: the
	// next to start); 0 when it started at once.
	Position int
}

// Launch starts a new task. A background launch returns at once; a foreground one runs
// the turn on the calling goroutine, under ctx (the caller's) and the registry's lifetime,
// and returns its outcome. A launch over the cap of its kind (MaxBackground,
// MaxForeground) is queued: its row is queued until a slot frees, the oldest first; a
// background launch past MaxQueued fails (wrapping ErrNoSlot). The task calls of one reply
// take their places in the order the model wrote them (TaskToolOrder). A launch racing
// Shutdown either fails with ErrShutdown or runs a turn that Shutdown waits for. It takes
// the registry's lock twice, briefly (the slot with the new row; the start of the turn),
// never while the turn runs or waits.
func (r *Registry) Launch(ctx context.Context, req LaunchRequest) (Launched, error) {
	if err := ctx.Err(); err != nil {
		return Launched{}, fmt.Errorf("launch cancelled: %w", context.Cause(ctx))
	}
	if req.Background && !r.cfg.BackgroundAgents {
		return Launched{}, ErrBackgroundOff
	}
	def, err := r.cfg.Catalog.Lookup(req.SubagentType)
	if err != nil {
		return Launched{}, err
	}
	id := r.cfg.NewID(req)
	now := r.cfg.Now().UTC()
	row := Row{
		TaskID: id, Description: req.Description, SubagentType: def.Name, Prompt: req.Prompt,
		Status: StatusRunning, Turn: 1, Backgrounded: req.Background,
		ParentSessionID: r.cfg.SessionID, ToolUseID: req.ToolUseID,
		CreatedAt: now, UpdatedAt: now, Notified: !req.Background,
	}
	if r.cfg.Store != nil {
		row.Transcript = r.cfg.Store.TaskTranscript(string(id))
	}
	sl := r.fg
	if req.Background {
		sl = r.bg
	}
	var (
		ticket *slotTicket
		pos    int
		c      *controller
	)
	runtime.Admit(ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.closed {
			err = ErrShutdown
			return
		}
		if ticket, pos, err = sl.admit(); err != nil {
			return
		}
		if pos > 0 {
			row.queue(req.Prompt)
		}
		c = newController(r.env, def, row, req.Background && def.Resident())
		r.tasks[id] = c
	})
	if err != nil {
		return Launched{}, err
	}
	c.persist()

	if err := c.prepare(ctx); err != nil {
		sl.release(ticket)
		c.failLaunch(err)
		return Launched{Row: c.snapshot()}, err
	}
	t := turn{n: 1, instruction: req.Prompt, toolUseID: req.ToolUseID, continuation: streamjson.ContinuationFresh,
		background: req.Background, caller: trace.SpanContextFrom(ctx), parent: trace.RunFrom(ctx), slots: sl, ticket: ticket}
	if !req.Background {
		t.parent = t.caller // the task call waits for it
	}
	// Publish the turn in one critical section with the closed check, so that a
	// concurrent Shutdown either waits for this turn or makes this launch fail.
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		sl.release(ticket)
		c.failLaunch(ErrShutdown)
		return Launched{Row: c.snapshot()}, ErrShutdown
	}
	parent := r.ctx
	if !req.Background {
		// Foreground: cancelled by the caller's ctx, the registry's, or task_stop.
		fctx, cancel := context.WithCancelCause(ctx)
		life := r.ctx
		stop := context.AfterFunc(life, func() { cancel(context.Cause(life)) })
		defer func() { stop(); cancel(nil) }()
		parent = fctx
	}
	tctx, t := c.schedule(parent, t)
	r.wg.Add(1)
	r.mu.Unlock()
	if req.Background {
		r.runner.start(tctx, c, t, r.wg.Done)
		return Launched{Row: c.snapshot(), Position: pos}, nil
	}
	r.runner.run(tctx, c, t, r.wg.Done)
	return Launched{Row: c.snapshot(), Position: pos}, nil
}

// SendResult says what send_message did.
type SendResult struct {
	Row          Row
	Continuation streamjson.Continuation // queued, resident or revived
	// Position is the new turn's place in the background queue (1: the next to start); 0
	// when it started at once or the message went into a running turn.
	Position int
	// Pending: the turn runs the instruction it had been queued with first (the run ended
	// before that turn started), then the message.
	Pending bool
}

// Send delivers message to id: queued into a running (or queued) turn, or a new turn of a
// completed task (on its resident runtime if there is one, else revived from its
// transcript), scheduled after the task's previous turn has finished. A new turn takes a
// background slot, or waits for one in the queue; past MaxQueued it fails (wrapping
// ErrNoSlot) and the row stays as it was. It never waits for a turn: the check and the
// transition happen in one critical section of the registry's lock, so a message is
// queued into exactly one turn or starts exactly one. ctx is the caller's: it is not the
// new turn's context, only the span its trace links to, and the run's root it hangs
// under (trace.RunFrom).
func (r *Registry) Send(ctx context.Context, id TaskID, message, toolUseID string) (SendResult, error) {
	var (
		res    SendResult
		err    error
		c      *controller
		t      turn
		tctx   context.Context
		ticket *slotTicket
		stale  released // a resident runtime made before a branch switch
	)
	head := r.env.head() // before the lock: it reads the repository
	runtime.Admit(ctx, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		var ok bool
		if c, ok = r.tasks[id]; !ok {
			err = fmt.Errorf("%w: %s", ErrUnknownTask, id)
			return
		}
		if c.enqueue(llm.UserText("Message from the parent agent while you were working:\n" + message)) {
			res = SendResult{Row: c.snapshot(), Continuation: streamjson.ContinuationQueued}
			return
		}
		// Not running, and only this lock lets it run again: the checks below hold
		// until the transition.
		row := c.snapshot()
		if err = row.continuable(); err != nil {
			return
		}
		if r.closed {
			err = ErrShutdown
			return
		}
		var pos int
		if ticket, pos, err = r.bg.admit(); err != nil {
			err = fmt.Errorf("%w; wait for one to finish, then send again", err)
			return
		}
		var kind streamjson.Continuation
		t, kind, stale = c.continueTurn(r.cfg.Now().UTC(), message, toolUseID, head, pos > 0)
		t.caller, t.parent = trace.SpanContextFrom(ctx), trace.RunFrom(ctx)
		t.slots, t.ticket = r.bg, ticket
		tctx, t = c.schedule(r.ctx, t)
		r.wg.Add(1)
		res = SendResult{Continuation: kind, Position: pos, Pending: row.neverStarted()}
	})
	if err != nil || ticket == nil {
		return res, err
	}
	if stale.rt != nil {
		r.cfg.Logger.Info("released a resident agent: the branch changed", "task_id", id, "head", head)
	}
	c.dispose(stale)
	res.Row = c.snapshot()
	c.persist()
	r.runner.start(tctx, c, t, r.wg.Done)
	return res, nil
}

// Stop cancels id's running turn; its partial findings are kept. A queued turn leaves the
// queue and ends cancelled without having run. It does not wait; under the registry's
// lock, it reaches the latest scheduled turn, even one not started yet.
func (r *Registry) Stop(id TaskID) (Row, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.tasks[id]
	if !ok {
		return Row{}, fmt.Errorf("%w: %s", ErrUnknownTask, id)
	}
	row := c.snapshot()
	if !row.Status.Active() {
		return row, fmt.Errorf("%w: task %s is %s, not running", ErrNotContinuable, id, row.Status)
	}
	c.stop(ErrStopped)
	return row, nil
}

// CancelAll cancels every running and queued turn with cause; their partial findings are
// kept. It does not wait.
func (r *Registry) CancelAll(cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	// The queued first: a running turn cancelled first would free its slot for a queued
	// one, which could start before its own cancel arrives.
	for _, queued := range []bool{true, false} {
		for _, c := range r.tasks {
			if (c.snapshot().Status == StatusQueued) == queued {
				c.stop(cause)
			}
		}
	}
}

// Wait blocks until every turn has settled (its notification delivered), or ctx ends. It
// holds no lock while it waits; turns started while it waits are waited for too.
func (r *Registry) Wait(ctx context.Context) error {
	for {
		var done chan struct{}
		for _, c := range r.controllers() {
			if _, d := c.state(); !isClosed(d) {
				done = d
				break
			}
		}
		if done == nil {
			return nil
		}
		select {
		case <-done:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Shutdown cancels every running turn, waits for all turns to finish, and disposes every
// controller, completed ones included; the rows stay listed. Idempotent and safe to call
// from several goroutines; later launches and continuations fail with ErrShutdown. It
// must not be called from a turn (it waits for every turn).
func (r *Registry) Shutdown() {
	r.mu.Lock()
	r.closed = true
	cancel := r.cancel
	r.mu.Unlock()
	r.CancelAll(ErrShutdown)
	cancel(ErrShutdown)
	r.wg.Wait()
	for _, c := range r.controllers() {
		c.close()
		c.flush() // a sidecar write that failed (a full disk) is tried once more
	}
	if st := r.cfg.Store; st != nil {
		_ = st.SyncSidecars()
	}
}

// Reset shuts down like Shutdown and forgets every row; unless the run's context has
// ended, the registry then takes new work. Like Shutdown, never from a turn.
func (r *Registry) Reset() {
	r.Shutdown()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tasks = make(map[TaskID]*controller)
	if r.parent.Err() == nil {
		r.ctx, r.cancel = context.WithCancelCause(r.parent)
		r.closed = false
	}
}
