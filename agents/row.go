package agents

import (
	"fmt"
	"sort"
	"time"

	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/streamjson"
)

// Status of a task row. What each says about the task's latest turn, and whether
// send_message can start another (docs/sessions.md has the table for users):
//
//	running    a turn is running (or scheduled); messages are queued into it
//	completed  the turn ended with the agent's answer; continuable
//	paused     the turn was interrupted because the run ended (SIGINT, SIGTERM, --timeout,
//	           --background-on-exit cancel, or a crash found on --resume); its partial
//	           findings are kept; continuable. A turn that was still queued then never
//	           started: it keeps its instruction (Pending), which its next turn runs first
//	failed     the turn ended with an error (a provider's retries spent, the step cap);
//	           continuable on the history it kept — unless the launch itself failed before
//	           the first turn ran (BlockedReason says so), which leaves nothing to continue
//	cancelled  the parent stopped it with task_stop; its partial findings are kept; final
type Status string

const (
	// StatusQueued: the turn waits for a slot (over --max-background or --max-foreground).
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusPaused    Status = "paused"
)

// Active reports whether a turn is running or waits for its slot.
func (s Status) Active() bool { return s == StatusRunning || s == StatusQueued }

// Terminal reports whether no turn is running or pending.
func (s Status) Terminal() bool { return !s.Active() }

// known reports whether s is one of the statuses above.
func (s Status) known() bool {
	switch s {
	case StatusQueued, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled, StatusPaused:
		return true
	}
	return false
}

// Outcome is the recorded result of a task's latest turn.
type Outcome struct {
	Text        string               `json:"text"`
	Reason      string               `json:"reason"`
	Error       string               `json:"error,omitempty"`
	Interrupted bool                 `json:"interrupted"`
	Usage       streamjson.TaskUsage `json:"usage"`
	// Worktree says what became of the turn's isolated worktree, when it had one.
	Worktree string `json:"worktree,omitempty"`
	// KeptWorktree is the path of that worktree when it was kept (it held changes).
	KeptWorktree string `json:"kept_worktree,omitempty"`
	// Undelivered counts send_message messages queued into the turn that it ended before
	// reading (a failed or cancelled turn): the parent is told, so nothing is lost silently.
	Undelivered int `json:"undelivered,omitempty"`
}

// Row is a task's plain, serializable record.
type Row struct {
	TaskID          TaskID    `json:"task_id"`
	Description     string    `json:"description"`
	SubagentType    string    `json:"subagent_type"`
	Prompt          string    `json:"prompt"`
	Status          Status    `json:"status"`
	Turn            int       `json:"turn"`
	Backgrounded    bool      `json:"backgrounded"`
	ParentSessionID string    `json:"parent_session_id"`
	ToolUseID       string    `json:"tool_use_id"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
	EndedAt         time.Time `json:"ended_at,omitzero"`
	LastOutcome     Outcome   `json:"last_outcome"`
	Interrupted     bool      `json:"interrupted"`
	Transcript      string    `json:"transcript"`
	// Notified: the latest turn's notification has been delivered (or none is due).
	Notified bool `json:"notified"`
	// BlockedReason, when set, says why the task cannot be continued.
	BlockedReason string `json:"blocked_reason,omitempty"`
	// NotStarted: the latest turn has not started. It waits for a slot (queued), or the
	// run ended before it got one (paused); Pending is its instruction, which the next
	// turn of a paused row runs first, as the same turn.
	NotStarted bool   `json:"not_started,omitempty"`
	Pending    string `json:"pending,omitempty"`
}

// The row state machine. Every change of a row's status is one of these methods:
//
//	(launch)  ─────────────► running | queued (no free slot: it waits in line)
//	queued    ─start───────► running
//	running   ─complete────► completed ─continueTurn─► running | queued (turn+1)
//	running   ─end─────────► failed | paused ─continueTurn─► running | queued (turn+1)
//	running   ─end─────────► cancelled            (task_stop: never continued)
//	queued    ─end─────────► cancelled            (task_stop before it started)
//	queued    ─end─────────► paused, Pending      (the run ended before it started)
//	paused, Pending ─continueTurn─► running | queued (the same turn, Pending first)
//	(restore) ─────────────► completed | failed | paused ─continueTurn─► running | queued (turn+1)
//	running   ─failLaunch──► failed, blocked      (before the first turn ran)
//
// A launch and a continuation take their slot (or their place in the queue) under the
// registry's lock; a queued row starts, and the other transitions happen, under the task
// controller's. The methods only change the row: persisting and announcing it is the
// caller's.

// complete records a turn that ended with its final answer.
func (r *Row) complete(now time.Time, final string) {
	r.Status, r.UpdatedAt, r.EndedAt = StatusCompleted, now, now
	r.Interrupted = false
	r.LastOutcome = Outcome{Text: final, Reason: runtime.ReasonCompleted}
}

// end records a turn that did not complete: status is StatusFailed (an error),
// StatusPaused (interrupted by the end of the run) or StatusCancelled (task_stop).
func (r *Row) end(now time.Time, status Status, o Outcome) {
	interrupted := status != StatusFailed
	r.Status = status
	r.UpdatedAt, r.EndedAt = now, now
	r.Interrupted = interrupted
	o.Interrupted = interrupted
	r.LastOutcome = o
}

// failLaunch records a launch that failed before its first turn ran; no notification is
// due, and there is no history to continue.
func (r *Row) failLaunch(now time.Time, err error) {
	r.Status, r.UpdatedAt, r.EndedAt, r.Notified = StatusFailed, now, now, true
	r.LastOutcome = Outcome{Reason: runtime.ReasonError, Error: err.Error()}
	r.BlockedReason = "its launch failed before it started (" + err.Error() + "); launch a new task"
}

// blocked says why a new turn cannot start on the row ("" when it can; a running row
// takes messages into its turn instead).
func (r *Row) blocked() string {
	switch {
	case r.BlockedReason != "":
		return r.BlockedReason
	case r.Status == StatusCancelled:
		return "it was stopped with task_stop and cannot be continued; launch a new task"
	}
	return ""
}

// continuable says why a new turn cannot start on the row (nil when it can).
func (r *Row) continuable() error {
	if reason := r.blocked(); reason != "" {
		return fmt.Errorf("%w: task %s: %s", ErrNotContinuable, r.TaskID, reason)
	}
	return nil
}

// start moves a queued row to running: its turn got its slot.
func (r *Row) start(now time.Time) {
	r.Status, r.UpdatedAt, r.NotStarted, r.Pending = StatusRunning, now, false, ""
}

// neverStarted reports whether the row's latest turn was queued and never ran.
func (r *Row) neverStarted() bool { return r.NotStarted }

// queue records that the row's latest turn, with instruction, waits for a slot.
func (r *Row) queue(instruction string) {
	r.Status, r.NotStarted, r.Pending = StatusQueued, true, instruction
}

// continueTurn starts the next turn of a completed, failed or paused row, with
// instruction; queued says it waits for a slot. A paused row whose turn never started
// runs that turn now (the turn number stays).
func (r *Row) continueTurn(now time.Time, toolUseID, instruction string, queued bool) {
	if !r.neverStarted() {
		r.Turn++
	}
	r.Status, r.UpdatedAt, r.NotStarted, r.Pending = StatusRunning, now, false, ""
	if queued {
		r.queue(instruction)
	}
	r.Notified, r.Interrupted = false, false
	if r.ToolUseID == "" {
		r.ToolUseID = toolUseID
	}
}

// restored returns the row as a resume brings it back: completed and failed rows stay
// as they were, running ones come back paused (their process ended mid-turn), all
// already notified in the registry (a notification the parent never read is delivered
// with the first prompt: UnreadNotifications). A queued turn (its process ended before
// the turn got a slot) comes back paused, its instruction kept for the next turn. A
// queued row of an older stoke, which did not keep the instruction, comes back at the
// turn it had finished, or, a launch, not continuable.
func (r Row) restored() (Row, error) {
	switch r.Status {
	case StatusCompleted, StatusFailed:
	case StatusQueued:
		r.Status = StatusPaused
		switch {
		case r.neverStarted():
			r.Interrupted = true
		case r.Turn > 1:
			r.Turn--
		case r.BlockedReason == "":
			r.BlockedReason = "it was queued and never started; launch it again"
		}
	case StatusRunning, StatusPaused:
		r.Status = StatusPaused
		r.Interrupted = true
	default:
		return Row{}, fmt.Errorf("restore: task %s is %s; only completed, failed, paused and running tasks are restored", r.TaskID, r.Status)
	}
	r.Notified = true
	return r, nil
}

// lookup returns the controller of id.
func (r *Registry) lookup(id TaskID) (*controller, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.tasks[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTask, id)
	}
	return c, nil
}

// controllers returns every task's controller.
func (r *Registry) controllers() []*controller {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*controller, 0, len(r.tasks))
	for _, c := range r.tasks {
		out = append(out, c)
	}
	return out
}

// rows returns every row.
func (r *Registry) rows() []Row {
	cs := r.controllers()
	out := make([]Row, len(cs))
	for i, c := range cs {
		out[i] = c.snapshot()
	}
	return out
}

// Get returns a snapshot of the row of id. Safe for concurrent use; it never waits for a turn.
func (r *Registry) Get(id TaskID) (Row, bool) {
	c, err := r.lookup(id)
	if err != nil {
		return Row{}, false
	}
	return c.snapshot(), true
}

// List returns a snapshot of every row, oldest first. Safe for concurrent use; it never
// waits for a turn.
func (r *Registry) List() []Row {
	out := r.rows()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].TaskID < out[j].TaskID
	})
	return out
}

// Unsettled reports how many tasks are running or have a notification not yet delivered.
// Safe for concurrent use; it drops to zero before Lifecycle.TurnSettled of the last turn.
func (r *Registry) Unsettled() int {
	n := 0
	for _, row := range r.rows() {
		if row.Status.Active() || !row.Notified {
			n++
		}
	}
	return n
}
