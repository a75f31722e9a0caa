package headless

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless/sdkhost"
	"github.com/stoke-cli/stoke/streamjson"
)

// Parts are what one session is made of: built once by Assemble, then held, never
// replaced, by the loop that runs them (Serve). One process may hold the parts of many
// sessions at once, each with its own Options (working directory, MCP servers, store
// binding, registry).
type Parts struct {
	opts Options
	// opened is the store binding: the session directory (nil without a home), its lock,
	// session.json, and what a resume brought back.
	opened *opened
	id     string // the session's id: Options.SessionID, or the resumed session's
	start  time.Time
	events *events // the event stream, and the final result object with json
	mb     *mailbox
	meter  *meter // the model of every agent, with the run's usage and cost
	budget *budget
	cp     *sdkhost.ControlPlane // stream-json stdin (nil with a text prompt)
	host   host                  // the SDK host's side (nil for a plain run)
	chat   *store.Transcript     // the parent's transcript (nil without a home)
	ws     *workspace
	reg    *agents.Registry
	mcp    *mcpState
	parent *runtime.Runtime
	tools  *tools.Set // the parent's tools
	// parentModel is the parent's model, which says what media it takes (llm.CheckInput).
	parentModel llm.Model
	// reminder is added once to the next ordinary user prompt after a restore, with the
	// notifications the parent had not read before the previous run ended.
	reminder []llm.Block
	// announcing orders announce and reannounce: init is the system/init the session
	// announced (reannounce copies it), set once; pendingModel is a model the SDK host
	// set before it was (announce names it next, in a system message of its own).
	announcing   sync.Mutex
	init         *streamjson.Init
	pendingModel string
	// faults ends the session at the first write of its state that fails; unbind
	// releases the context Assemble bound to it.
	faults *stateFaults
	unbind context.CancelFunc
}

// Assemble builds the parts of a session from opts, in the named steps below, and
// announces the session (system/init); it runs no turn and calls no model. cp is the
// stream-json control plane the session reads (nil for none: a text prompt, or an entry
// point that feeds Serve itself). On error nothing is left held: the session's lock is
// released and what was opened is closed.
func Assemble(ctx context.Context, opts Options, cp *sdkhost.ControlPlane) (_ *Parts, err error) {
	opts = withDefaults(opts)
	o, err := openSession(ctx, opts)
	if err != nil {
		return nil, err
	}
	p := &Parts{opts: opts, opened: o, id: o.id, start: time.Now(), cp: cp, faults: newStateFaults(o.sess)}
	// The session's turns, host and MCP servers stop at the first write of its state
	// that fails, as they would on a signal (faults.go).
	ctx, p.unbind = p.faults.bind(ctx)
	defer func() {
		if err != nil {
			p.release()
		}
	}()
	p.stream()
	p.sdkHost(ctx)
	if err := p.bindStore(); err != nil {
		return nil, err
	}
	if err := p.workspace(); err != nil {
		return nil, err
	}
	cat, err := p.catalog()
	if err != nil {
		return nil, err
	}
	p.registry(ctx, cat)
	if err := p.restore(); err != nil {
		return nil, err
	}
	p.mcpServers(ctx)
	p.parentRuntime()
	p.announce()
	return p, nil
}

// stream makes the event stream (with --output-format json --verbose, the messages kept
// for the array printed at the end), the mailbox and the meter.
func (p *Parts) stream() {
	o := p.opts
	evOut, resOut := io.Discard, o.Stdout
	var array *lineBuffer
	switch {
	case o.OutputFormat == OutputStreamJSON:
		evOut = o.Stdout
	case o.messageArray():
		array = &lineBuffer{}
		evOut, resOut = array, array // printed as one array at the end (events.flush)
	}
	p.events = &events{sink: o.Sink, enc: streamjson.NewEncoder(evOut, p.id, nil), out: streamjson.NewEncoder(resOut, p.id, nil),
		observe: o.Observe, logger: o.Logger, array: array}
	window := o.NotifyWindow
	if window == 0 {
		window = DefaultNotifyWindow
	}
	p.mb = newMailbox(p.events.emit, window)
	p.meter = &meter{}
	p.budget = &budget{max: o.SDK.MaxBudgetUSD, meter: p.meter}
	if o.Model != nil {
		p.meter = &meter{Model: o.Model, prices: o.Prices, charged: p.budget.charged}
		p.budget.meter = p.meter
	}
}

// model is the model every agent calls: the metered one (nil without a model).
func (p *Parts) model() llm.Model {
	if p.meter.Model == nil {
		return nil
	}
	return p.meter
}

// sdkHost makes the host of a run that needs one (host.go); an SDK session's events are
// surfaced as the host's SDK reads them from here on.
func (p *Parts) sdkHost(ctx context.Context) {
	sdk := newHost(ctx, p)
	if sdk == nil {
		return
	}
	p.host = sdk
	if p.opts.sdkMode() {
		p.events.surface = sdk.Surface
	}
}

// bindStore records the session in session.json and opens the parent's transcript
// (nothing without a home).
func (p *Parts) bindStore() error {
	o := p.opened
	if o.sess == nil {
		return nil
	}
	if err := o.writeInfo(); err != nil {
		return fmt.Errorf("%w: %w", ErrRunFailed, err)
	}
	tr, err := o.sess.OpenParent(o.info, nil)
	if err != nil {
		return fmt.Errorf("%w: open session: %w", ErrRunFailed, err)
	}
	p.chat = tr
	return nil
}

// workspace makes the workspace the parent's tools work in (workspace.go).
func (p *Parts) workspace() error {
	ws, err := newWorkspace(p.opts, p.host)
	if err != nil {
		return fmt.Errorf("%w: workspace: %w", ErrUsage, err)
	}
	p.ws = ws
	return nil
}

// catalog loads the subagent types and checks that the budget can price them.
func (p *Parts) catalog() (catalog.Catalog, error) {
	var hostAgents []catalog.Definition
	if p.host != nil {
		hostAgents = p.host.Agents()
	}
	cat := loadCatalog(p.opts, hostAgents)
	if err := checkAgentPrices(p.opts, cat); err != nil {
		return nil, err
	}
	return cat, nil
}

// registry makes the registry of the session's tasks: their turns live under ctx, and
// the mailbox, the failure log and the host hear of them.
func (p *Parts) registry(ctx context.Context, cat catalog.Catalog) {
	o := p.opts
	lifecycle := agents.Lifecycles(p.mb, failureLog{logger: o.Logger, secrets: o.Secrets})
	if p.host != nil {
		lifecycle = agents.Lifecycles(lifecycle, p.host)
	}
	if o.Lifecycle != nil {
		lifecycle = agents.Lifecycles(lifecycle, o.Lifecycle)
	}
	var taskStore agents.TaskStore
	if p.opened.sess != nil {
		taskStore = p.opened.sess
	}
	p.reg = agents.NewRegistry(ctx, agents.RegistryConfig{
		SessionID:        p.id,
		Store:            taskStore,
		CWD:              o.CWD,
		Model:            p.model(),
		ModelName:        o.ModelName,
		MaxBackground:    o.MaxBackground,
		MaxQueued:        o.MaxQueued,
		MaxForeground:    o.MaxForeground,
		MaxRetained:      o.MaxRetained,
		BackgroundAgents: o.BackgroundAgents,
		MaxSteps:         agents.DefaultMaxSteps,
		SubagentTools:    p.subagentTools,
		Hooks:            o.Hooks,
		HookRunner:       hookRunner(o),
		Tracer:           o.Tracer,
		Catalog:          cat,
		Emit:             p.events.emit,
		Notify:           p.mb.Push,
		Lifecycle:        lifecycle,
		Logger:           o.Logger,
		NewID:            o.NewTaskID,
		OutputAttempts:   o.OutputAttempts,
		OnDispose:        o.OnDispose,
	})
	p.mb.active = p.reg.Unsettled
}

// restore brings back the agent roster of a resumed session, and the reminder of the
// first prompt: that the agents are back, and the notifications the parent never read.
func (p *Parts) restore() error {
	o := p.opened
	if len(o.roster) > 0 {
		if err := p.reg.Restore(o.roster); err != nil {
			return fmt.Errorf("%w: restore agents: %w", ErrRunFailed, err)
		}
		if !p.opts.Bare {
			p.reminder = append(p.reminder, rosterReminder(len(o.roster)))
		}
	}
	// Results the parent never read (the previous run ended first) come with the first
	// prompt, --bare or not: nothing acknowledged is lost.
	for _, m := range o.unread {
		p.reminder = append(p.reminder, m.Content...)
	}
	return nil
}

// mcpServers registers the MCP servers (mcp.go), attaches the control plane (from here
// the host's lines are routed, its initialize request answered first: the MCP servers
// that run in the host start through it), and starts the configured servers.
func (p *Parts) mcpServers(ctx context.Context) {
	p.mcp = newMCP(ctx, p.opts, p.host, p.reg.Catalog())
	if p.cp != nil {
		var h sdkhost.ControlHandler
		if sdk, ok := p.host.(*sdkhost.Host); ok {
			h = sdk
		}
		p.cp.Attach(h, p.events.enc)
	}
	p.mcp.start()
}

// parentRuntime makes the parent agent: its tools (the task tools, the MCP tools and the
// workspace tools), the task tools' call order, the mailbox as its inbox, the Stop hooks,
// and what the host adds.
func (p *Parts) parentRuntime() {
	o := p.opts
	p.tools = p.parentTools()
	parentTools := p.tools
	var chat runtime.ChatStore
	if p.chat != nil {
		chat = turnStore{p.chat}
	}
	cfg := runtime.Config{
		Agent:     "parent",
		System:    parentSystemPrompt,
		Model:     p.model(),
		ModelName: o.ModelName,
		Tools:     func() *tools.Set { return parentTools },
		Order:     agents.TaskToolOrder,
		MaxSteps:  o.MaxTurns,
		Inbox:     p.mb,
		Store:     chat,
		Emit:      p.events.emit,
		History:   p.opened.history,
		StopHook:  parentStopHook(o, p.id),
		Tracer:    o.Tracer,
		Output:    o.OutputSchema,
		// The parent's answers that may fail the schema: its own cap.
		OutputAttempts: o.OutputAttempts,
	}
	if ms, ok := o.Sink.(ModelSink); ok {
		cfg.OnModelEvent = ms.ParentModelEvent
	}
	if p.host != nil {
		cfg = p.host.Parent(cfg)
	}
	p.parent = runtime.New(cfg)
	p.parentModel = cfg.Model
}

// parentTools is the parent's tool set: the task tools, the MCP tools and the workspace
// tools, through the host when there is one, each call between the settings' PreToolUse
// and PostToolUse hooks.
func (p *Parts) parentTools() *tools.Set {
	own := append(agents.TaskTools(p.reg), p.mcp.parentTools(p.opts.SDK.DisallowedTools, p.ws.ws)...)
	hooked := toolHooks(p.opts, p.id, nil)
	if p.host != nil {
		return hooked.Wrap(p.host.Tools(own, p.ws.ws))
	}
	wsTools, _ := p.ws.ws.Tools(nil)
	return hooked.Wrap(tools.NewSet(append(own, wsTools...)...))
}

// subagentTools gives each new subagent runtime its tools (workspace.go), with the MCP
// tools its type may use, each call between the PreToolUse and PostToolUse hooks of the
// settings and of its definition.
func (p *Parts) subagentTools(def catalog.Definition, root string) *tools.Set {
	return p.ws.subagentTools(def, root, p.mcp, toolHooks(p.opts, p.id, &def))
}

// announce emits system/init: the session as the model and its host will see it.
func (p *Parts) announce() {
	o := p.opts
	init := streamjson.NewInit()
	init.CWD, init.Model, init.Tools = o.CWD, o.ModelName, p.tools.Names()
	init.Agents = p.reg.Catalog().Names()
	init.PermissionMode = o.ApprovalMode.PermissionMode()
	init.MCPServers = p.mcp.statuses()
	init.StokeVersion = o.Version
	init.ClaudeCodeVersion = o.Version
	if sb := o.Sandbox; sb != nil {
		st := sb.Status()
		init.Sandbox = &streamjson.SandboxStatus{Mode: string(st.Mode), Enforced: st.Enforced, Reason: st.Reason}
	}
	p.publish(init)
}

// publish emits init, the session's first system/init, and keeps a copy for reannounce;
// a model the SDK host set before it is named next.
func (p *Parts) publish(init *streamjson.Init) {
	announced := *init
	p.announcing.Lock()
	defer p.announcing.Unlock()
	p.init = &announced
	p.events.emit(init)
	if m := p.pendingModel; m != "" {
		p.emitModel(m)
	}
}

// reannounce emits system/init again with model as the parent's: the SDK host changed
// it (set_model), and a system message names the model from here on. Safe for
// concurrent use; a set_model that comes before the first system/init is named right
// after it.
func (p *Parts) reannounce(model string) {
	p.announcing.Lock()
	defer p.announcing.Unlock()
	if p.init == nil {
		p.pendingModel = model // a set_model racing the start
		return
	}
	p.emitModel(model)
}

// emitModel emits a copy of the announced system/init with model as the parent's.
// Call with announcing held, once init is set.
func (p *Parts) emitModel(model string) {
	init := *p.init // a copy: its own uuid, the model set
	init.UUID, init.Model = "", model
	p.events.emit(&init)
}

// Close ends the session's hold on its parts: the registry is shut down (every turn
// waited for), the MCP servers stopped, the parent's transcript closed, session.json
// written and the session's lock released. Serve calls it; an entry point that assembled
// parts it does not serve calls it itself.
func (p *Parts) Close() {
	p.reg.Shutdown()
	p.mcp.close()
	if p.chat != nil {
		_ = p.chat.Close()
	}
	if err := p.opened.writeInfo(); err != nil {
		p.opts.Logger.Warn("write session info", "err", err)
	}
	if err := p.opened.lock.Unlock(); err != nil {
		p.opts.Logger.Warn("unlock session", "err", err)
	}
	p.unbind()
}

// release undoes a failed Assemble: what was made is shut down and closed, the lock
// released.
func (p *Parts) release() {
	if p.reg != nil {
		p.reg.Shutdown()
	}
	p.mcp.close()
	if p.chat != nil {
		_ = p.chat.Close()
	}
	_ = p.opened.lock.Unlock()
	p.unbind()
}

// ID returns the session's id: Options.SessionID, or the resumed session's.
func (p *Parts) ID() string { return p.id }

// History returns the parent's conversation: as the session was opened (a resume's
// history), or as its turns have made it. Call it only while no turn runs (an
// interactive session between its inputs); the caller must not modify it.
func (p *Parts) History() []llm.Message {
	if chat := p.parent.Chat(); chat != nil {
		return chat.Messages()
	}
	return p.opened.history
}

// ReleaseResidents disposes the resident runtimes of the session's tasks that are not
// running (agents.Registry.ReleaseResidents), for reason (logged): their rows stay, and
// the next send_message revives them from their transcripts. It returns how many it
// released. Safe for concurrent use.
func (p *Parts) ReleaseResidents(reason string) int { return p.reg.ReleaseResidents(reason) }

// CancelAgents cancels the session's running and queued background turns with cause
// (their partial findings kept); it does not wait. Safe for concurrent use.
func (p *Parts) CancelAgents(cause error) { p.reg.CancelAll(cause) }
