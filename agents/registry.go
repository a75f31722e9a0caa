package agents

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/agents/trace"
	"github.com/stoke-cli/stoke/streamjson"
)

// Status of a task row.
type Status string

const (
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
	StatusPaused    Status = "paused"
)

// Terminal reports whether no turn is running or pending.
func (s Status) Terminal() bool { return s != StatusRunning }

// Outcome is the recorded result of a task's latest turn.
type Outcome struct {
	Text        string               `json:"text"`
	Reason      string               `json:"reason"`
	Error       string               `json:"error,omitempty"`
	Interrupted bool                 `json:"interrupted"`
	Usage       streamjson.TaskUsage `json:"usage"`
	// Worktree says what became of the turn's isolated worktree, when it had one.
	Worktree string `json:"worktree,omitempty"`
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
}

// RegistryConfig configures a Registry.
type RegistryConfig struct {
	SessionID string
	// Dir is the session directory; transcripts go to Dir/agents/<task-id>.jsonl and
	// sidecars to Dir/agents/<task-id>.meta.json. Empty: nothing is stored.
	Dir string
	// CWD is the working directory the agents run in (recorded in sidecars).
	CWD       string
	Model     llm.Model
	ModelName string
	Catalog   Catalog
	// MaxBackground caps running background tasks (default 4).
	MaxBackground int
	// MaxRetained caps settled rows (default 100).
	MaxRetained int
	// BackgroundAgents enables run_in_background.
	BackgroundAgents bool
	// MaxSteps caps model calls per subagent turn (0: none).
	MaxSteps int
	// Emit receives task events and the subagents' own events. Safe for concurrent use.
	Emit func(streamjson.Event)
	// Notify delivers a <task-notification> message to the parent. Safe for concurrent use.
	Notify func(llm.Message)
	// SubagentTools returns the tool set prepared for a new runtime of def, working in root
	// (a worktree) or, when root is empty, in the session's working directory.
	SubagentTools func(def Definition, root string) *tools.Set
	// Hooks are the command hooks from settings; a definition's own hooks add to them.
	Hooks hooks.Config
	// HookRunner runs hooks; nil runs none.
	HookRunner *hooks.Runner
	// Tracer records one trace per agent turn; nil records nothing.
	Tracer trace.Tracer
	// NewRuntime constructs runtimes (tests count constructions); nil means NewRuntime.
	NewRuntime func(RuntimeConfig) *Runtime
	// OnDispose is called once per disposed controller (tests).
	OnDispose func(TaskID)
	NewID     func(LaunchRequest) TaskID // nil: NewTaskID; a replay gives each launch its recorded id
	Now       func() time.Time
	Logger    *slog.Logger
}

// Registry owns the session's task rows and the resident controllers of their runtimes.
type Registry struct {
	cfg RegistryConfig
	// parent is the run's context; ctx (derived from it, replaced by Reset) is the lifetime
	// of the turns. Both are read under mu once the registry is in use.
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	mu          sync.Mutex
	entries     map[TaskID]*entry
	controllers map[TaskID]*controller
	closed      bool
}

type entry struct {
	row   Row
	def   Definition
	queue []llm.Message
	// rev counts row changes (guarded by the registry mutex); written is the rev last
	// stored in the sidecar (guarded by wmu, held while writing).
	rev     int
	wmu     sync.Mutex
	written int
	// done is closed when the latest turn has settled (outcome recorded, notification
	// emitted). An entry with no turn running or finishing must have it closed.
	done chan struct{}
	// last is closed when the latest scheduled turn has fully finished, whichever
	// controller ran it; the next turn waits for it (nil: none yet).
	last chan struct{}
}

// NewRegistry returns a registry whose turns live under ctx (the run's context).
func NewRegistry(ctx context.Context, cfg RegistryConfig) *Registry {
	if cfg.MaxBackground <= 0 {
		cfg.MaxBackground = 4
	}
	if cfg.MaxRetained <= 0 {
		cfg.MaxRetained = 100
	}
	if cfg.Emit == nil {
		cfg.Emit = func(streamjson.Event) {}
	}
	if cfg.Notify == nil {
		cfg.Notify = func(llm.Message) {}
	}
	if cfg.NewRuntime == nil {
		cfg.NewRuntime = NewRuntime
	}
	if cfg.NewID == nil {
		cfg.NewID = func(LaunchRequest) TaskID { return NewTaskID() }
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Catalog == nil {
		cfg.Catalog = NewCatalog(BuiltinDefinitions()...)
	}
	if cfg.ModelName == "" && cfg.Model != nil {
		cfg.ModelName = cfg.Model.Name()
	}
	rctx, cancel := context.WithCancelCause(ctx)
	return &Registry{
		parent:      ctx,
		cfg:         cfg,
		ctx:         rctx,
		cancel:      cancel,
		entries:     make(map[TaskID]*entry),
		controllers: make(map[TaskID]*controller),
	}
}

// BackgroundEnabled reports whether run_in_background is offered and accepted.
func (r *Registry) BackgroundEnabled() bool { return r.cfg.BackgroundAgents }

// Catalog returns the subagent types.
func (r *Registry) Catalog() Catalog { return r.cfg.Catalog }

// LaunchRequest is a fresh launch.
type LaunchRequest struct {
	Description  string
	Prompt       string
	SubagentType string
	Background   bool
	// ToolUseID is the task call that launched it.
	ToolUseID string
}

// Launch starts a new task. A background launch returns at once; a foreground one waits
// for the turn (under ctx, the caller's) and returns its outcome.
func (r *Registry) Launch(ctx context.Context, req LaunchRequest) (Row, error) {
	if err := ctx.Err(); err != nil {
		return Row{}, fmt.Errorf("launch cancelled: %w", context.Cause(ctx))
	}
	if req.Background && !r.cfg.BackgroundAgents {
		return Row{}, ErrBackgroundOff
	}
	def, err := r.cfg.Catalog.Lookup(req.SubagentType)
	if err != nil {
		return Row{}, err
	}
	id := r.cfg.NewID(req)
	now := r.cfg.Now().UTC()
	e := &entry{def: def, done: make(chan struct{}), row: Row{
		TaskID: id, Description: req.Description, SubagentType: def.Name, Prompt: req.Prompt,
		Status: StatusRunning, Turn: 1, Backgrounded: req.Background,
		ParentSessionID: r.cfg.SessionID, ToolUseID: req.ToolUseID,
		CreatedAt: now, UpdatedAt: now, Notified: !req.Background,
		Transcript: r.transcriptPath(id),
	}}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return Row{}, ErrShutdown
	}
	if req.Background && r.runningBackgroundLocked() >= r.cfg.MaxBackground {
		r.mu.Unlock()
		return Row{}, fmt.Errorf("%w: %d background agents are already running", ErrNoSlot, r.cfg.MaxBackground)
	}
	r.entries[id] = e
	c := &controller{id: id, resident: req.Background && def.Resident()}
	r.controllers[id] = c
	r.mu.Unlock()
	r.persist(e)

	tr, err := r.openTranscript(id, def)
	if err != nil {
		r.settleFailed(e, c, e.done, err)
		return e.snapshot(&r.mu), err
	}
	var wt *Worktree
	if def.Isolation == "worktree" {
		if wt, err = NewWorktree(ctx, r.cfg.CWD, r.worktreeDir(), id, 1); err != nil {
			if tr != nil {
				_ = tr.Close()
			}
			r.settleFailed(e, c, e.done, err)
			return e.snapshot(&r.mu), err
		}
	}
	root := ""
	if wt != nil {
		root = wt.Path
	}
	c.wt = wt
	rt := r.newRuntime(c, e, def, tr, nil, root)
	t := turn{n: 1, instruction: req.Prompt, toolUseID: req.ToolUseID, continuation: streamjson.ContinuationFresh, background: req.Background, done: e.done, caller: trace.SpanContextFrom(ctx)}
	// c is already visible to Resident, dispose and Shutdown: publish the runtime and
	// start the turn in one critical section with the closed check, so that a concurrent
	// Shutdown either waits for this turn or makes this launch fail.
	r.mu.Lock()
	if r.closed || c.disposed {
		r.mu.Unlock()
		rt.Close()
		if tr != nil {
			_ = tr.Close()
		}
		r.settleFailed(e, c, e.done, ErrShutdown)
		return e.snapshot(&r.mu), ErrShutdown
	}
	c.tr, c.rt = tr, rt
	if req.Background {
		r.startTurnLocked(c, e, t)
		r.mu.Unlock()
		return e.snapshot(&r.mu), nil
	}
	// Foreground: run in the caller's goroutine, cancelled by the caller's ctx, the
	// registry's, or task_stop.
	tctx, cancel := context.WithCancelCause(ctx)
	stop := context.AfterFunc(r.ctx, func() { cancel(context.Cause(r.ctx)) })
	defer func() { stop(); cancel(nil) }()
	c.cancel = cancel
	c.seq++
	t.seq = c.seq
	// A continuation sent while this turn finishes waits for it (see startTurnLocked).
	last := make(chan struct{})
	e.last = last
	defer close(last)
	r.wg.Add(1)
	r.mu.Unlock()
	r.runTurn(tctx, c, e, t)
	return e.snapshot(&r.mu), nil
}

// ErrBackgroundOff: run_in_background was passed while background agents are turned off.
var ErrBackgroundOff = errors.New("background agents are turned off in this run: run_in_background is not available; launch the task in the foreground")

func (r *Registry) transcriptPath(id TaskID) string {
	if r.cfg.Dir == "" {
		return ""
	}
	return filepath.Join(r.cfg.Dir, "agents", string(id)+".jsonl")
}

func (r *Registry) openTranscript(id TaskID, def Definition) (*Transcript, error) {
	path := r.transcriptPath(id)
	if path == "" {
		return nil, nil
	}
	tr, err := OpenTranscript(path, r.cfg.Now)
	if err != nil {
		return nil, err
	}
	if err := tr.Write(Record{Type: RecordMeta, TaskID: string(id), SubagentType: def.Name, System: def.SystemPrompt()}); err != nil {
		tr.Close()
		return nil, err
	}
	return tr, nil
}

func (r *Registry) newRuntime(c *controller, e *entry, def Definition, tr *Transcript, history []llm.Message, root string) *Runtime {
	model := r.cfg.ModelName
	if def.Model != "" && def.Model != "inherit" {
		model = def.Model
	}
	var store ChatStore
	if tr != nil {
		store = tr
	}
	r.mu.Lock()
	toolUseID, description := e.row.ToolUseID, e.row.Description
	r.mu.Unlock()
	keys := streamjson.AgentKeys{TaskID: string(c.id), AgentID: string(c.id), SubagentType: def.Name, TaskDescription: description}
	return r.cfg.NewRuntime(RuntimeConfig{
		Agent:     def.Name,
		System:    def.SystemPrompt(),
		Model:     r.cfg.Model,
		ModelName: model,
		Tools: func() *tools.Set {
			if r.cfg.SubagentTools == nil {
				return tools.NewSet()
			}
			return r.cfg.SubagentTools(def, root)
		},
		StopHook: func(ctx context.Context, final string, active bool) string {
			r.mu.Lock()
			in := r.hookInput(c, e)
			r.mu.Unlock()
			in.LastMessage, in.StopHookActive = final, active
			if out := r.runHooks(ctx, hooks.SubagentStop, def, in); out.Block {
				return out.Reason
			}
			return ""
		},
		MaxSteps: def.StepCap(r.cfg.MaxSteps), // the definition may lower the cap (maxTurns)
		Inbox:    &entryInbox{r: r, e: e, c: c},
		Store:    store,
		Emit:     r.cfg.Emit,
		Decorate: func(ev streamjson.Event) {
			switch ev := ev.(type) {
			case *streamjson.Assistant:
				ev.ParentToolUseID, ev.AgentKeys = &toolUseID, keys
			case *streamjson.User:
				ev.ParentToolUseID, ev.AgentKeys = &toolUseID, keys
			}
		},
		OnToolRound: func(s Stats) {
			p := streamjson.NewTaskProgress()
			p.TaskID, p.Description, p.SubagentType = string(c.id), description, def.Name
			r.mu.Lock()
			p.ToolUseID, p.Turn = c.turnToolUseID, e.row.Turn
			start := c.turnStart
			r.mu.Unlock()
			p.LastToolName = s.LastTool
			p.Usage = streamjson.TaskUsage{TotalTokens: s.Usage.Total(), ToolUses: s.ToolUses, DurationMS: r.cfg.Now().Sub(start).Milliseconds()}
			r.cfg.Emit(p)
		},
		History: history,
		Now:     r.cfg.Now,
		Tracer:  r.cfg.Tracer,
	})
}

// worktreeDir is where isolated agents' worktrees are made.
func (r *Registry) worktreeDir() string {
	if r.cfg.Dir != "" {
		return filepath.Join(r.cfg.Dir, "worktrees")
	}
	return filepath.Join(os.TempDir(), "stoke-worktrees")
}

// hookInput is the common part of a hook's input for c's current turn. Call with r.mu held.
func (r *Registry) hookInput(c *controller, e *entry) hooks.Input {
	in := hooks.Input{SessionID: r.cfg.SessionID, CWD: r.cfg.CWD, TaskID: string(c.id),
		SubagentType: e.row.SubagentType, Turn: e.row.Turn, TranscriptPath: e.row.Transcript}
	if c.cur != nil {
		in.Continuation = c.cur.continuation
	}
	return in
}

// runHooks runs the settings' and the definition's hooks for ev. Failures are logged, never
// fatal.
func (r *Registry) runHooks(ctx context.Context, ev hooks.Event, def Definition, in hooks.Input) hooks.Outcome {
	hs := append(r.cfg.Hooks.For(ev, def.Name), def.Hooks.For(ev, def.Name)...)
	if len(hs) == 0 || r.cfg.HookRunner == nil {
		return hooks.Outcome{}
	}
	out, err := r.cfg.HookRunner.Run(ctx, ev, hs, in)
	if err != nil {
		r.cfg.Logger.Warn("hooks", "event", ev, "task_id", in.TaskID, "err", err)
	}
	for _, f := range out.Failures {
		r.cfg.Logger.Warn("hook failed", "event", ev, "task_id", in.TaskID, "failure", f)
	}
	return out
}

// ReleaseResidents disposes every resident runtime of a task that is not running (the
// workspace changed under them). Their rows stay completed; a later send_message revives
// them from their transcripts.
func (r *Registry) ReleaseResidents() int {
	r.mu.Lock()
	var cs []*controller
	for id, c := range r.controllers {
		if e := r.entries[id]; e != nil && e.row.Status != StatusRunning && c.cur == nil {
			cs = append(cs, c)
			delete(r.controllers, id)
		}
	}
	r.mu.Unlock()
	for _, c := range cs {
		r.dispose(c)
	}
	return len(cs)
}

func (r *Registry) runningBackgroundLocked() int {
	n := 0
	for _, e := range r.entries {
		if e.row.Status == StatusRunning && (e.row.Backgrounded || e.row.Turn > 1) {
			n++
		}
	}
	return n
}

func (e *entry) snapshot(mu *sync.Mutex) Row {
	mu.Lock()
	defer mu.Unlock()
	return e.row
}

// Get returns the row of id.
func (r *Registry) Get(id TaskID) (Row, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[id]
	if !ok {
		return Row{}, false
	}
	return e.row, true
}

// List returns every row, oldest first.
func (r *Registry) List() []Row {
	r.mu.Lock()
	out := make([]Row, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e.row)
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].TaskID < out[j].TaskID
	})
	return out
}

// Running reports how many turns are running or scheduled.
func (r *Registry) Running() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.entries {
		if e.row.Status == StatusRunning {
			n++
		}
	}
	return n
}

// Unsettled reports how many tasks are running or have a notification not yet delivered.
func (r *Registry) Unsettled() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.entries {
		if e.row.Status == StatusRunning || !e.row.Notified {
			n++
		}
	}
	return n
}

// Resident reports whether id has a resident controller (tests and list_agents).
func (r *Registry) Resident(id TaskID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.controllers[id]
	return ok && c.rt != nil && !c.disposed
}

// Collect returns the recorded outcome of id's latest turn, waiting while it runs unless
// noWait is set (then running is reported at once). It never prompts the agent.
func (r *Registry) Collect(ctx context.Context, id TaskID, noWait bool) (Row, error) {
	r.mu.Lock()
	e, ok := r.entries[id]
	if !ok {
		r.mu.Unlock()
		return Row{}, fmt.Errorf("%w: %s", ErrUnknownTask, id)
	}
	row, done := e.row, e.done
	r.mu.Unlock()
	if noWait {
		return row, nil
	}
	// Wait until the turn has settled fully, not only until it stopped running: a
	// completed turn records its usage and emits its notification just after the
	// running→completed transition, and every collect must return the same record.
	select {
	case <-done:
	case <-ctx.Done():
		return e.snapshot(&r.mu), fmt.Errorf("collect interrupted: %w", context.Cause(ctx))
	}
	// The entry itself, not a lookup by id: the row may have been pruned meanwhile.
	return e.snapshot(&r.mu), nil
}

// SendResult says what send_message did.
type SendResult struct {
	Row          Row
	Continuation string // "queued", "resident" or "revived"
}

// Send delivers message to id: queued into a running turn, or a new turn of a completed task
// (on its resident runtime if there is one, else revived from its transcript).
func (r *Registry) Send(id TaskID, message, toolUseID string) (SendResult, error) {
	msg := llm.UserText(message)
	r.mu.Lock()
	e, ok := r.entries[id]
	if !ok {
		r.mu.Unlock()
		return SendResult{}, fmt.Errorf("%w: %s", ErrUnknownTask, id)
	}
	switch e.row.Status {
	case StatusRunning:
		e.queue = append(e.queue, llm.UserText("Message from the parent agent while you were working:\n"+message))
		row := e.row
		r.mu.Unlock()
		return SendResult{Row: row, Continuation: "queued"}, nil
	case StatusFailed, StatusCancelled:
		st := e.row.Status
		r.mu.Unlock()
		return SendResult{}, fmt.Errorf("%w: task %s is %s and cannot be continued; launch a new task", ErrNotContinuable, id, st)
	}
	if e.row.BlockedReason != "" {
		reason := e.row.BlockedReason
		r.mu.Unlock()
		return SendResult{}, fmt.Errorf("%w: %s", ErrNotContinuable, reason)
	}
	if r.closed {
		r.mu.Unlock()
		return SendResult{}, ErrShutdown
	}
	if r.runningBackgroundLocked() >= r.cfg.MaxBackground {
		r.mu.Unlock()
		return SendResult{}, fmt.Errorf("%w: %d background agents are already running; wait for one to finish, then send again", ErrNoSlot, r.cfg.MaxBackground)
	}
	c := r.controllers[id]
	kind := streamjson.ContinuationResident
	if c == nil || !c.resident || c.rt == nil || c.disposed {
		kind = streamjson.ContinuationRevived
		c = &controller{id: id, resident: e.def.Resident()}
		r.controllers[id] = c
	}
	now := r.cfg.Now().UTC()
	e.row.Status, e.row.Turn, e.row.UpdatedAt = StatusRunning, e.row.Turn+1, now
	e.row.Notified, e.row.Interrupted, e.row.ToolUseID = false, false, firstNonEmpty(e.row.ToolUseID, toolUseID)
	e.done = make(chan struct{})
	t := turn{n: e.row.Turn, instruction: message, msg: &msg, toolUseID: toolUseID, continuation: kind, background: true, done: e.done}
	row := e.row
	r.startTurnLocked(c, e, t)
	r.mu.Unlock()
	r.persist(e)
	return SendResult{Row: row, Continuation: kind}, nil
}

// persist writes e's row to its sidecar, unless a newer write already happened. Call
// without r.mu held, after the transition, before anything announces it.
func (r *Registry) persist(e *entry) {
	if r.cfg.Dir == "" {
		return
	}
	r.mu.Lock()
	e.rev++
	rev := e.rev
	sc := Sidecar{Row: e.row, CWD: r.cfg.CWD, Isolation: e.def.Isolation}
	r.mu.Unlock()
	e.wmu.Lock()
	defer e.wmu.Unlock()
	if rev <= e.written {
		return
	}
	if err := WriteSidecar(r.cfg.Dir, sc); err != nil {
		r.cfg.Logger.Warn("write sidecar", "task_id", sc.TaskID, "err", err)
		return
	}
	e.written = rev
}

// ErrNotContinuable: the task cannot take a new turn.
var ErrNotContinuable = errors.New("task cannot be continued")

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Stop cancels id's running turn; its partial findings are kept.
func (r *Registry) Stop(id TaskID) (Row, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[id]
	if !ok {
		return Row{}, fmt.Errorf("%w: %s", ErrUnknownTask, id)
	}
	if e.row.Status != StatusRunning {
		return e.row, fmt.Errorf("%w: task %s is %s, not running", ErrNotContinuable, id, e.row.Status)
	}
	if c := r.controllers[id]; c != nil {
		c.stopRequested = true
		if c.cancel != nil {
			c.cancel(ErrStopped)
		}
	}
	return e.row, nil
}

// Wait blocks until every turn has fully finished (its notification emitted), or ctx ends.
func (r *Registry) Wait(ctx context.Context) error {
	for {
		r.mu.Lock()
		var done chan struct{}
		for _, e := range r.entries {
			select {
			case <-e.done:
				continue
			default:
			}
			done = e.done
			break
		}
		r.mu.Unlock()
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

// CancelAll cancels every running turn with cause; their partial findings are kept.
func (r *Registry) CancelAll(cause error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.controllers {
		c.stopRequested = true
		if c.cancel != nil {
			c.cancel(cause)
		}
	}
}

// Shutdown cancels every running turn, waits for all turns to finish, and disposes every
// controller, completed ones included. Idempotent.
func (r *Registry) Shutdown() {
	r.mu.Lock()
	r.closed = true
	cancel := r.cancel
	r.mu.Unlock()
	r.CancelAll(ErrShutdown)
	cancel(ErrShutdown)
	r.wg.Wait()
	r.mu.Lock()
	cs := make([]*controller, 0, len(r.controllers))
	for id, c := range r.controllers {
		cs = append(cs, c)
		delete(r.controllers, id)
	}
	r.mu.Unlock()
	for _, c := range cs {
		r.dispose(c)
	}
}

// Reset shuts down like Shutdown and forgets every row.
func (r *Registry) Reset() {
	r.Shutdown()
	r.mu.Lock()
	r.entries = make(map[TaskID]*entry)
	if r.parent.Err() == nil { // the run goes on: the registry takes work again
		r.ctx, r.cancel = context.WithCancelCause(r.parent)
		r.closed = false
	}
	r.mu.Unlock()
}

// prune drops the oldest settled rows beyond MaxRetained (never one whose notification is
// still due), disposing their controllers. Call with r.mu held; returns controllers to dispose.
func (r *Registry) pruneLocked() []*controller {
	var settled []*entry
	for _, e := range r.entries {
		if e.row.Status.Terminal() && e.row.Status != StatusPaused {
			settled = append(settled, e)
		}
	}
	excess := len(settled) - r.cfg.MaxRetained
	if excess <= 0 {
		return nil
	}
	sort.Slice(settled, func(i, j int) bool { return settled[i].row.EndedAt.Before(settled[j].row.EndedAt) })
	var out []*controller
	for _, e := range settled {
		if excess == 0 {
			break
		}
		if !e.row.Notified {
			continue
		}
		delete(r.entries, e.row.TaskID)
		if c := r.controllers[e.row.TaskID]; c != nil {
			delete(r.controllers, e.row.TaskID)
			out = append(out, c)
		}
		excess--
	}
	return out
}
