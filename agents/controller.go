package agents

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/trace"
	"github.com/stoke-cli/stoke/agents/worktree"
	"github.com/stoke-cli/stoke/streamjson"
)

// controller owns one task: its row, and what runs its turns — the runtime and transcript
// kept between turns, the worktree of the turn running, the cancel func and sequence
// number of the latest scheduled turn, and the goroutine running it. One controller lives
// as long as its row is in the registry; a task that is not resident gives up its runtime
// after each turn and revives it from the transcript for the next.
//
// Its methods are spread by concern: this file holds its state and the scheduling of its
// turns; controller_turn.go a turn (run, settle, finish); controller_persist.go its
// transcript and sidecar; controller_revive.go its revival from the transcript.
//
// Concurrency: mu guards every field below it. It is a leaf lock: taken after the
// registry's lock (never before it), and never held across a call out of the
// controller's files other than a row transition or a transcript write. The runtime's
// callbacks (the Inbox, the stop hook, the tool-round progress) take only mu. Turns of
// one task never overlap: each scheduled turn waits until the previous one has finished
// (last).
type controller struct {
	id  TaskID
	def catalog.Definition
	env *taskEnv

	mu    sync.Mutex
	row   Row
	queue []llm.Message // send_message input waiting for the running turn
	rt    *runtime.Runtime
	tr    *store.Transcript
	head  string             // what the working directory had checked out when rt was made
	stale bool               // rt was made before a branch switch: the turn finishing on it gives it up
	wt    *worktree.Worktree // the isolated worktree of the current turn (a fresh launch of an isolated type)
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
	// undelivered counts the notifications pushed (RegistryConfig.Notify) that the parent
	// has not been handed yet (Notification.Delivered): the row is kept from pruning.
	undelivered int
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
	// caller is the span of the task or send_message call that started the turn; parent
	// the span the turn hangs under: that call for a foreground turn, the run's root
	// (trace.RunFrom of the caller's context) for a background one, which outlives the
	// call and is linked to it. Without a run's root a background turn is a trace of its
	// own, linked to the call.
	caller, parent trace.SpanContext
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
func newController(env *taskEnv, def catalog.Definition, row Row, resident bool) *controller {
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
// the resident runtime, revived from the transcript, or fresh (a launch that never
// started: its prompt, then message). A resident runtime made under another head than
// head (what the working directory has checked out now: a branch switch since) is given
// up and returned, to dispose outside the locks, and the turn revives. Call under the
// registry's lock, after continuable.
func (c *controller) continueTurn(now time.Time, message, toolUseID, head string, queued bool) (turn, streamjson.Continuation, released) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var rel released
	if c.rt != nil && !c.closed && c.head != head {
		// Made before a branch switch: given up now, or, while the turn that ran on it is
		// still finishing (the finishing window), by that turn's finish.
		if c.cur == nil {
			rel = c.takeRuntimeLocked()
		} else {
			c.stale = true
		}
	}
	kind := streamjson.ContinuationResident
	if !c.resident || c.rt == nil || c.closed || c.stale {
		// A revived task starts a new life, resident from now on if its type allows
		// (a foreground launch's task too).
		kind = streamjson.ContinuationRevived
		c.lives++
		c.resident = c.def.Resident()
	}
	instruction := message
	if c.row.neverStarted() {
		// Its turn never ran: it runs now, the instruction it was queued with first.
		instruction = strings.Join(slices.DeleteFunc([]string{c.row.Pending, message}, func(s string) bool { return s == "" }), "\n\n")
		if c.row.Turn <= 1 {
			kind = streamjson.ContinuationFresh
		}
	}
	c.row.continueTurn(now, toolUseID, instruction, queued)
	c.done = make(chan struct{})
	msg := llm.UserText(instruction)
	return turn{n: c.row.Turn, instruction: instruction, msg: &msg, toolUseID: toolUseID, continuation: kind, background: true}, kind, rel
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

// stopping reports whether the latest turn was stopped (task_stop, CancelAll).
func (c *controller) stopping() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopRequested
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
		c.cancel(runtime.ErrDisposed)
	} else {
		rel = c.takeRuntimeLocked()
	}
	c.mu.Unlock()
	c.dispose(rel)
}

// releaseIdle gives up the resident runtime of a task with no turn running or waiting
// for its slot (a queued launch has no history yet to revive from, and a queued
// continuation was told it runs resident), when stale says the head it was made under
// is out of date; the row stays and its next turn revives. It reports whether there was
// one.
func (c *controller) releaseIdle(stale func(head string) bool) (released, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.row.Status.Active() || c.cur != nil || c.rt == nil || c.closed || !stale(c.head) {
		return released{}, false
	}
	return c.takeRuntimeLocked(), true
}

// retention returns the row, whether it counts against MaxRetained (settled: no turn
// running or queued, and not paused — a paused row holds work the end of a run
// interrupted), and whether pruning may drop it: its latest notification is pushed and
// the parent has been handed it.
func (c *controller) retention() (row Row, counted, evictable bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	counted = c.row.Status.Terminal() && c.row.Status != StatusPaused
	return c.row, counted, counted && c.row.Notified && c.undelivered == 0
}

// delivered records that the parent has been handed one of the task's notifications.
func (c *controller) delivered() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.undelivered > 0 {
		c.undelivered--
	}
}

// released is a runtime and transcript taken from a controller, to close outside its lock.
type released struct {
	id   TaskID
	rt   *runtime.Runtime
	tr   *store.Transcript
	live bool // OnDispose is due
}

func (c *controller) takeRuntimeLocked() released {
	r := released{id: c.id, rt: c.rt, tr: c.tr, live: c.lives > 0}
	if r.live {
		c.lives--
	}
	c.rt, c.tr, c.stale = nil, nil, false
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
