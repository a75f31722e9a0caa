package headless

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/permission"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/agents/trace"
	"github.com/stoke-cli/stoke/headless/sdkhost"
	"github.com/stoke-cli/stoke/streamjson"
)

// errTimeout is the cancel cause of --timeout.
var errTimeout = errors.New("run timed out (--timeout)")

// errEndOfRun is the cancel cause of background agents cancelled by --background-on-exit cancel.
var errEndOfRun = errors.New("cancelled at the end of the run (--background-on-exit cancel)")

const parentSystemPrompt = "You are stoke, a headless coding agent run from a script or a CI pipeline. " +
	"Work on the user's request with the tools you have. " +
	"Use the task tool to hand work to subagents; background subagents report back with <task-notification> messages, " +
	"and send_message continues a finished subagent on the history it kept. " +
	"Finish with a concise answer: it is the run's result."

// Run runs one headless session: prompt in, parent turns, background agents, the final result.
// It returns nil on success, or an error the CLI maps to an exit code: ErrMaxTurns,
// ErrRunFailed, ErrUsage (all wrapped) or *InterruptedError.
func Run(ctx context.Context, opts Options) error {
	opts = withDefaults(opts)
	ctx, stopSignals := withSignals(ctx)
	defer stopSignals()
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, opts.Timeout, errTimeout)
		defer cancel()
	}
	var cp *sdkhost.ControlPlane // stream-json stdin, with an SDK host's initialize request
	if opts.InputFormat == InputStreamJSON {
		var err error
		if cp, err = sdkhost.Start(ctx, opts.Stdin, opts.sdkMode(), opts.SDK.Dialect, opts.Logger); err != nil {
			return endedBeforeStart(err)
		}
		defer cp.Close()
		if err := cp.InitError(); err != nil {
			// The host asked for what stoke cannot apply: say so, and end the run rather
			// than leave the host waiting on a session it did not ask for.
			cp.RefuseInitialize(opts.Stdout, opts.SessionID)
			return fmt.Errorf("%w: %w", ErrUsage, err)
		}
	}
	s, err := newSession(ctx, opts, cp)
	if err != nil {
		return err
	}
	defer s.close()
	err = s.run(ctx)
	if s.host != nil {
		s.host.Close()
	}
	return err
}

func withDefaults(o Options) Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Stdout == nil {
		o.Stdout = io.Discard
	}
	if o.OutputFormat == "" {
		o.OutputFormat = OutputText
	}
	if o.InputFormat == "" {
		o.InputFormat = InputText
	}
	if o.BackgroundOnExit == "" {
		o.BackgroundOnExit = BackgroundWait
	}
	if m, err := tools.ParseMode(string(o.ApprovalMode)); err == nil {
		o.ApprovalMode = m // "" is default; Claude Code's names are stoke's
	}
	if o.ModelName == "" && o.Model != nil {
		o.ModelName = o.Model.Name()
	}
	return o
}

// session is one run's state. opts is never changed once the session is built.
type session struct {
	opts Options
	// id is the session's id: Options.SessionID, or the resumed session's.
	id     string
	enc    *streamjson.Encoder // events (stdout with stream-json, else discarded)
	out    *streamjson.Encoder // the final result object with --output-format json
	reg    *agents.Registry
	parent *agents.Runtime
	// parentModel is the parent's model, which says what media it takes (llm.CheckInput).
	parentModel llm.Model
	mb          *mailbox
	meter       *meter                // the model of every agent, with the run's usage and cost
	cp          *sdkhost.ControlPlane // stream-json stdin (nil with a text prompt)
	host        host                  // the SDK host's side (nil for a plain run)
	chat        *store.Transcript     // the parent's transcript (nil without a home)
	start       time.Time
	// sess is the session directory (nil without a home); opened holds its lock and
	// session.json.
	sess   *store.Session
	opened *opened
	// reminder is added once to the next ordinary user prompt after a restore, with the
	// notifications the parent had not read before the previous run ended.
	reminder []llm.Block

	mu sync.Mutex
	// turnHandle cancels the running parent turn (the budget); nil between turns.
	turnHandle *turnHandle
	// denials are the refused tool calls, for the result's permission_denials.
	denials []streamjson.PermissionDenial
	// lastWorkspace is the workspace as the previous parent turn left it.
	lastWorkspace *workspaceState
	// rules are --allowedTools and --disallowedTools over the workspace (workspace.go).
	rules *permission.Rules

	// per-run accounting of the parent
	parentTurns int // prompts and notification turns, for trace spans
	// promptCalls counts the parent's model calls since the last user prompt, the turns
	// reading the notifications that followed it included: --max-turns caps them.
	promptCalls int
	numTurns    int
	apiTime     time.Duration
	lastText    string
	lastStop    string
	wroteFinal  bool

	mcp *mcpState // the MCP servers (mcp.go)
	// surface rewrites the events of an SDK session for its host (nil otherwise); set
	// before the first event.
	surface func(streamjson.Event) streamjson.Event
}

func newSession(ctx context.Context, opts Options, cp *sdkhost.ControlPlane) (_ *session, err error) {
	st, err := openSession(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = st.lock.Unlock()
		}
	}()
	id, sess := st.id, st.sess
	s := &session{opts: opts, id: id, start: time.Now(), sess: sess, opened: st, cp: cp}
	evOut := io.Discard
	if opts.OutputFormat == OutputStreamJSON {
		evOut = opts.Stdout
	}
	s.enc = streamjson.NewEncoder(evOut, id, nil)
	s.out = streamjson.NewEncoder(opts.Stdout, id, nil)
	window := opts.NotifyWindow
	if window == 0 {
		window = DefaultNotifyWindow
	}
	s.mb = newMailbox(s.emit, window)
	var model llm.Model
	if opts.Model != nil {
		s.meter = &meter{Model: opts.Model, prices: opts.Prices, charged: s.charged}
		model = s.meter
	} else {
		s.meter = &meter{}
	}
	sdk := s.newHost(ctx, cp, model)
	var lifecycle agents.Lifecycle = agents.Lifecycles(s.mb, failureLog{logger: opts.Logger, secrets: opts.Secrets})
	if sdk != nil {
		s.host = sdk
		lifecycle = agents.Lifecycles(lifecycle, sdk)
		if opts.sdkMode() {
			s.surface = sdk.Surface
		}
	}

	history := st.history
	var taskStore agents.TaskStore
	if sess != nil {
		if err := st.writeInfo(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRunFailed, err)
		}
		tr, err := sess.OpenParent(st.info, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: open session: %w", ErrRunFailed, err)
		}
		s.chat, taskStore = tr, sess
	}
	ws, wsOpts, err := s.newWorkspace()
	if err != nil {
		if s.chat != nil {
			_ = s.chat.Close()
		}
		return nil, fmt.Errorf("%w: workspace: %w", ErrUsage, err)
	}
	catalog := s.definitions()
	if err := s.checkAgentPrices(catalog); err != nil {
		if s.chat != nil {
			_ = s.chat.Close()
		}
		return nil, err
	}
	s.reg = agents.NewRegistry(ctx, agents.RegistryConfig{
		SessionID:        id,
		Store:            taskStore,
		CWD:              opts.CWD,
		Model:            model,
		ModelName:        opts.ModelName,
		MaxBackground:    opts.MaxBackground,
		MaxQueued:        opts.MaxQueued,
		MaxForeground:    opts.MaxForeground,
		MaxRetained:      opts.MaxRetained,
		BackgroundAgents: opts.BackgroundAgents,
		MaxSteps:         agents.DefaultMaxSteps,
		SubagentTools:    s.subagentTools(ws, wsOpts),
		Hooks:            opts.Hooks,
		HookRunner:       s.hookRunner(),
		Tracer:           opts.Tracer,
		Catalog:          catalog,
		Emit:             s.emit,
		Notify:           s.mb.Push,
		Lifecycle:        lifecycle,
		Logger:           opts.Logger,
		NewID:            opts.NewTaskID,
	})
	s.mb.active = s.reg.Unsettled
	if len(st.roster) > 0 {
		if err := s.reg.Restore(st.roster); err != nil {
			s.reg.Shutdown()
			if s.chat != nil {
				_ = s.chat.Close()
			}
			return nil, fmt.Errorf("%w: restore agents: %w", ErrRunFailed, err)
		}
		if !opts.Bare {
			s.reminder = append(s.reminder, rosterReminder(len(st.roster)))
		}
	}
	// Results the parent never read (the previous run ended first) come with the first
	// prompt, --bare or not: nothing acknowledged is lost.
	for _, m := range st.unread {
		s.reminder = append(s.reminder, m.Content...)
	}
	s.mcp = s.newMCP(ctx, s.reg.Catalog())
	if cp != nil {
		// From here the host's lines are routed (its initialize request answered first):
		// the MCP servers that run in the host start through the control plane.
		var h sdkhost.ControlHandler
		if sdk != nil {
			h = sdk
		}
		cp.Attach(h, s.enc)
	}
	s.mcp.start()
	parentTools := s.parentTools(ws)
	var chat agents.ChatStore
	if s.chat != nil {
		chat = s.chat
	}
	parentCfg := agents.RuntimeConfig{
		Agent:     "parent",
		System:    parentSystemPrompt,
		Model:     model,
		ModelName: opts.ModelName,
		Tools:     func() *tools.Set { return parentTools },
		MaxSteps:  opts.MaxTurns,
		Inbox:     s.mb,
		Store:     chat,
		Emit:      s.emit,
		History:   history,
		StopHook:  s.parentStopHook(),
		Tracer:    opts.Tracer,
	}
	if s.host != nil {
		parentCfg = s.host.Parent(parentCfg)
	}
	s.parent = agents.NewRuntime(parentCfg)
	s.parentModel = parentCfg.Model

	init := streamjson.NewInit()
	init.CWD, init.Model, init.Tools = opts.CWD, opts.ModelName, parentTools.Names()
	init.Agents = s.reg.Catalog().Names()
	init.PermissionMode = opts.ApprovalMode.PermissionMode()
	init.MCPServers = s.mcpStatuses()
	init.StokeVersion = opts.Version
	init.ClaudeCodeVersion = opts.Version
	if sb := opts.Sandbox; sb != nil {
		st := sb.Status()
		init.Sandbox = &streamjson.SandboxStatus{Mode: string(st.Mode), Enforced: st.Enforced, Reason: st.Reason}
	}
	s.emit(init)
	return s, nil
}

// emit writes one event on the stream: in an SDK session, as the host's SDK reads it
// (sdkhost.Host.Surface).
func (s *session) emit(ev streamjson.Event) {
	out := ev
	if s.surface != nil {
		out = s.surface(ev)
	}
	if err := s.enc.Encode(out); err != nil {
		s.opts.Logger.Debug("write event", "err", err)
	}
	if s.opts.Observe != nil {
		s.opts.Observe(ev)
	}
}

func (s *session) close() {
	s.reg.Shutdown()
	s.mcp.close()
	if s.chat != nil {
		_ = s.chat.Close()
	}
	if err := s.opened.writeInfo(); err != nil {
		s.opts.Logger.Warn("write session info", "err", err)
	}
	if err := s.opened.lock.Unlock(); err != nil {
		s.opts.Logger.Warn("unlock session", "err", err)
	}
}

// prompts yields the user turns: the text prompt, or stream-json lines from stdin.
func (s *session) prompts(ctx context.Context) <-chan sdkhost.Prompt {
	if s.cp != nil {
		// The control plane's reader routes stdin by type: user lines come here.
		return s.cp.Prompts(ctx)
	}
	ch := make(chan sdkhost.Prompt)
	go func() {
		defer close(ch)
		select {
		case ch <- sdkhost.Prompt{Msg: llm.UserText(s.opts.Prompt)}:
		case <-ctx.Done():
		}
	}()
	return ch
}

// run is the parent loop: user turns as they come, notification turns when idle, the
// end-of-run policy, and the final result.
func (s *session) run(ctx context.Context) error {
	streamIn := s.opts.InputFormat == InputStreamJSON
	prompts := s.prompts(ctx)
	// due fires when held notifications are due (mailbox.due).
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	var usageErr error
	for prompts != nil || s.pendingBackground() {
		var p sdkhost.Prompt
		var ok bool
		select {
		case p, ok = <-prompts:
			if !ok && ctx.Err() != nil {
				// Closed because the run ended (a signal, --timeout), not at the end of input.
				return s.fail(ctx, context.Cause(ctx))
			}
			if !ok {
				prompts = nil
				continue
			}
		case <-due.C:
			s.mb.wake()
			continue
		case <-s.mb.ready:
			if s.mb.empty() {
				// A turn settled whose notification the parent already read: the run
				// may be over (the loop condition) or idle.
				s.idle()
				continue
			}
			if wait := s.mb.due(); wait > 0 {
				// Other agents are still at work: theirs may come with these.
				due.Reset(wait)
				continue
			}
			notes, ok := s.mb.take()
			if !ok {
				continue
			}
			if err := s.turn(ctx, notes, streamIn); err != nil {
				return s.fail(ctx, err)
			}
			continue
		case <-ctx.Done():
			return s.fail(ctx, context.Cause(ctx))
		}
		if p.Err == nil && streamIn {
			p.Err = s.checkInput(p)
		}
		if p.Err != nil {
			usageErr = p.Err
			prompts = nil
			break
		}
		if s.reminder != nil {
			p.Msg.Content = append(p.Msg.Content, s.reminder...)
			s.reminder = nil
		}
		if err := s.userTurn(ctx, p.Msg, streamIn); err != nil {
			return s.fail(ctx, err)
		}
		if !streamIn {
			prompts = nil // one text prompt
		}
	}
	if usageErr != nil {
		if s.numTurns == 0 {
			s.writeResultAs(streamjson.ResultErrorDuringExecution, streamjson.TerminalSetupFailed, usageErr.Error())
		}
		s.endBackground(ctx)
		return fmt.Errorf("%w: %w", ErrUsage, usageErr)
	}
	s.endBackground(ctx)
	if !streamIn || !s.wroteFinal {
		s.writeResult(streamjson.ResultSuccess, "")
	}
	if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
		return s.interrupted(err)
	}
	return nil
}

// checkInput refuses a stream-json user message holding a tool_result that answers no
// tool call the parent's conversation waits for: stored, it would make every later
// request fail at a provider that checks tool-call order. Nothing of the message is kept.
func (s *session) checkInput(p sdkhost.Prompt) error {
	history := s.opened.history
	if chat := s.parent.Chat(); chat != nil {
		history = chat.Messages()
	}
	open := map[string]bool{}
	if n := len(history); n > 0 && history[n-1].Role == llm.RoleAssistant {
		for _, u := range history[n-1].ToolUses() {
			open[u.ID] = true
		}
	}
	for _, b := range p.Msg.Content {
		if b.Type != llm.BlockToolResult {
			continue
		}
		if !open[b.ToolUseID] {
			return fmt.Errorf("stream-json input line %d: tool_result for unknown tool_use_id %q: no tool call of this conversation waits for it (the message was not stored)", p.Line, b.ToolUseID)
		}
		delete(open, b.ToolUseID) // a second result for the same call is unknown too
	}
	return nil
}

// pendingBackground reports whether the run must keep going for background work: a
// running agent whose notification the parent should read, or an unread notification.
func (s *session) pendingBackground() bool {
	if s.opts.BackgroundOnExit == BackgroundCancel {
		return !s.mb.empty()
	}
	return s.reg.Unsettled() > 0 || !s.mb.empty()
}

// endBackground applies --background-on-exit cancel to the agents still running, and waits
// for every turn to settle.
func (s *session) endBackground(ctx context.Context) {
	if s.opts.BackgroundOnExit == BackgroundCancel {
		s.reg.CancelAll(errEndOfRun)
	}
	_ = s.reg.Wait(context.WithoutCancel(ctx))
}

// turn runs one parent turn; with perTurnResult it writes that turn's result.
func (s *session) turn(ctx context.Context, msg llm.Message, perTurnResult bool) error {
	s.checkWorkspace()
	tctx, endTurn := s.beginTurn(ctx) // the budget and the host's interrupt cancel tctx
	defer endTurn()
	if s.opts.MaxTurns > 0 {
		// What the prompt's turns have left of --max-turns: a model that launches an agent
		// for every notification it reads stops there too.
		left := s.opts.MaxTurns - s.promptCalls
		if left <= 0 {
			return fmt.Errorf("%w: %w (%d)", ErrMaxTurns, agents.ErrMaxSteps, s.opts.MaxTurns)
		}
		s.parent.SetMaxSteps(left)
	}
	s.parentTurns++
	tctx, span := trace.StartTurn(tctx, s.opts.Tracer, trace.TurnInfo{SessionID: s.id, Agent: "parent", Turn: s.parentTurns})
	res, err := s.parent.Execute(tctx, msg)
	trace.EndTurn(span, res.Reason, err)
	// The parent's transcript is synced (Execute); the names in the session directory
	// (session.json, the transcripts' files) become durable with it.
	if s.sess != nil {
		if serr := s.sess.Sync(); serr != nil {
			s.opts.Logger.Warn("sync session directory", "err", serr)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRunFailed, err)
	}
	if handled, err := s.endedEarly(ctx, tctx, res.Reason); handled {
		return err
	}
	s.numTurns += res.Stats.ModelCalls
	s.promptCalls += res.Stats.ModelCalls
	s.apiTime += res.Stats.APIDuration
	s.lastText = res.FinalText
	switch res.Reason {
	case agents.ReasonCompleted:
		s.lastStop = llm.StopEndTurn
		if perTurnResult {
			s.writeResult(streamjson.ResultSuccess, "")
			s.idle()
		}
		return nil
	case agents.ReasonMaxTurns:
		if !errors.Is(res.Err, agents.ErrStopLoop) {
			// The cap the user set, not what was left of it for this turn.
			return fmt.Errorf("%w: %w (%d)", ErrMaxTurns, agents.ErrMaxSteps, s.opts.MaxTurns)
		}
		return fmt.Errorf("%w: %w", ErrMaxTurns, res.Err)
	case agents.ReasonError:
		if errors.Is(res.Err, sdkhost.ErrMaxSessionTurns) {
			return fmt.Errorf("%w: %w", ErrMaxTurns, res.Err)
		}
		return fmt.Errorf("%w: %w", ErrRunFailed, res.Err)
	case agents.ReasonCancelled:
		return res.Err
	default:
		return fmt.Errorf("%w: %w", ErrRunFailed, res.Err)
	}
}

// fail ends the run after an error: background agents are cancelled (keeping partial
// findings), the final result is written, and the error to exit with is returned.
func (s *session) fail(ctx context.Context, err error) error {
	s.reg.CancelAll(err)
	_ = s.reg.Wait(context.WithoutCancel(ctx))
	switch {
	case errors.Is(err, sdkhost.ErrMaxSessionTurns):
		s.writeResult(streamjson.ResultErrorMaxTurns, fmt.Sprintf("Reached max session turns (%d)", s.opts.SDK.MaxSessionTurns))
		return err
	case errors.Is(err, agents.ErrStopLoop):
		s.writeResult(streamjson.ResultErrorMaxTurns, "Stop hook loop: "+strings.TrimPrefix(err.Error(), ErrMaxTurns.Error()+": "))
		return err
	case errors.Is(err, ErrMaxTurns):
		s.writeResult(streamjson.ResultErrorMaxTurns, fmt.Sprintf("Reached maximum number of turns (%d)", s.opts.MaxTurns))
		return err
	case errors.Is(err, ErrMaxBudget):
		s.writeResult(resultErrorMaxBudget, err.Error())
		return err
	case errors.Is(err, errTimeout):
		s.writeResultAs(streamjson.ResultErrorDuringExecution, streamjson.TerminalAborted, err.Error())
		return fmt.Errorf("%w: %w", ErrRunFailed, err)
	}
	var ie *InterruptedError
	if errors.As(err, &ie) || errors.As(context.Cause(ctx), &ie) {
		s.writeResultAs(streamjson.ResultErrorDuringExecution, streamjson.TerminalAborted, ie.Error())
		return ie
	}
	s.writeResult(streamjson.ResultErrorDuringExecution, err.Error())
	if errors.Is(err, ErrRunFailed) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrRunFailed, err)
}

func (s *session) interrupted(cause error) error {
	var ie *InterruptedError
	if errors.As(cause, &ie) {
		return ie
	}
	return fmt.Errorf("%w: %w", ErrRunFailed, cause)
}

// writeResult writes a result line: on the event stream with stream-json, as the single
// object with json, as plain text with text. Its terminal_reason follows the subtype; an
// error_during_execution result says a model error (writeResultAs names another).
func (s *session) writeResult(subtype, errText string) {
	terminal := streamjson.TerminalModelError
	switch subtype {
	case streamjson.ResultSuccess:
		terminal = streamjson.TerminalCompleted
	case streamjson.ResultErrorMaxTurns:
		terminal = streamjson.TerminalMaxTurns
	case resultErrorMaxBudget:
		terminal = streamjson.TerminalBudget
	}
	s.writeResultAs(subtype, terminal, errText)
}

// writeResultAs is writeResult with the terminal_reason given.
func (s *session) writeResultAs(subtype, terminal, errText string) {
	usage, cost := s.meter.total()
	r := streamjson.NewResult(subtype)
	s.mu.Lock()
	if len(s.denials) > 0 {
		r.PermissionDenials = append([]streamjson.PermissionDenial(nil), s.denials...)
	}
	s.mu.Unlock()
	r.DurationMS = time.Since(s.start).Milliseconds()
	r.DurationAPIMS = s.apiTime.Milliseconds()
	r.NumTurns = s.numTurns
	r.Usage = streamjson.Usage(usage)
	r.ModelUsage = s.meter.models()
	r.TotalCostUSD = cost
	r.TerminalReason = terminal
	if subtype == streamjson.ResultSuccess {
		r.Result = s.lastText
		stop := s.lastStop
		r.StopReason = &stop
	} else {
		r.Errors = []string{errText}
	}
	s.wroteFinal = true
	switch s.opts.OutputFormat {
	case OutputStreamJSON:
		s.emit(r)
	case OutputJSON:
		_ = s.out.Encode(r)
	default:
		if subtype == streamjson.ResultSuccess {
			text := s.lastText
			if len(text) == 0 || text[len(text)-1] != '\n' {
				text += "\n"
			}
			_, _ = io.WriteString(s.opts.Stdout, text)
		}
	}
}
