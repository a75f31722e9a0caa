package headless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/structured"
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
func Run(ctx context.Context, opts Options) (err error) {
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
	p, err := Assemble(ctx, opts, cp)
	if err != nil {
		notStoredAtStart(opts, err)
		return err
	}
	return Serve(ctx, p, inputs(ctx, p.opts, cp))
}

// Serve runs the loop of the session p over the user turns of in (closed after the
// last), then the end-of-run policy and the final result, and closes p. It returns what
// Run returns. The registry's turns live under the ctx p was assembled with; ctx ends
// the loop (a signal, --timeout). The run is one trace: its root span (stoke.run) is a
// child of the span in ctx (the pipeline's TRACEPARENT), and every parent turn hangs
// under it, and the background turns they start.
func Serve(ctx context.Context, p *Parts, in <-chan Input) (err error) {
	ctx, runSpan := p.startRun(ctx)
	defer func() { endRun(runSpan, err) }() // last: every turn has ended by then
	s := &session{Parts: p, reminder: append(p.reminder, p.sessionStart(ctx)...)}
	defer func() { err = s.writeReport(err) }() // after close: the session as stored
	defer p.Close()
	ctx, unbind := p.faults.bind(ctx) // a failed write of the session's state ends the loop
	defer unbind()
	err = s.run(ctx, in)
	p.events.flush(p.opts.Stdout)
	p.sessionEnd(ctx)
	if p.host != nil {
		p.host.Close()
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

// session is the loop of one run: it holds the run's parts (Assemble) and the loop's
// state, which only the loop's goroutine touches.
type session struct {
	*Parts
	// reminder is added once to the next ordinary user prompt (Parts.reminder).
	reminder []llm.Block
	// cancelTurn is the running input's Cancel (nil when it has none).
	cancelTurn <-chan struct{}

	// per-run accounting of the parent
	parentTurns int // prompts and notification turns, for trace spans
	// promptCalls counts the parent's model calls since the last user prompt, the turns
	// reading the notifications that followed it included: --max-turns caps them.
	promptCalls int
	numTurns    int
	apiTime     time.Duration
	lastText    string
	lastStop    string
	// lastStructured is the structured answer of the last completed parent turn (nil
	// unless the run asks for one).
	lastStructured json.RawMessage
	wroteFinal     bool
}

// run is the parent loop: user turns as they come, notification turns when idle, the
// end-of-run policy, and the final result.
func (s *session) run(ctx context.Context, prompts <-chan Input) error {
	streamIn := s.opts.InputFormat == InputStreamJSON || s.opts.Interactive
	// due fires when held notifications are due (mailbox.due).
	due := time.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	var usageErr error
	for prompts != nil || s.pendingBackground() {
		var p Input
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
			if s.opts.Interactive {
				continue // held for the next input (or the loop's condition changed)
			}
			if err := s.notified(ctx, due, streamIn); err != nil {
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
		if s.opts.Interactive {
			s.held(&p)
		}
		s.cancelTurn = p.Cancel
		err := s.userTurn(ctx, p.Msg, streamIn)
		s.cancelTurn = nil
		if err != nil && !s.turnFailed(ctx, err) {
			return s.fail(ctx, err)
		}
		if !streamIn {
			prompts = nil // one text prompt
		}
	}
	return s.end(ctx, usageErr, streamIn)
}

// notified acts on the mailbox's signal: a notification turn once the notifications
// held are due, or, when a turn settled whose notification the parent already read, the
// host told the run is idle.
func (s *session) notified(ctx context.Context, due *time.Timer, streamIn bool) error {
	if s.mb.empty() {
		// The run may be over (the loop's condition) or idle.
		s.idle()
		return nil
	}
	if wait := s.mb.due(); wait > 0 {
		// Other agents are still at work: theirs may come with these.
		due.Reset(wait)
		return nil
	}
	notes, ok := s.mb.take()
	if !ok {
		return nil
	}
	return s.turn(ctx, notes, streamIn)
}

// end ends the run once the input is over and no background work holds it: the
// background policy, the final result, the error to exit with.
func (s *session) end(ctx context.Context, usageErr error, streamIn bool) error {
	if usageErr != nil {
		// The input could not be read: the last line on stdout is an error result that
		// says so, after whatever the earlier turns and the background agents wrote.
		s.endBackground(ctx)
		s.writeResultAs(streamjson.ResultErrorDuringExecution, streamjson.TerminalSetupFailed, usageErr.Error())
		return fmt.Errorf("%w: %w", ErrUsage, usageErr)
	}
	s.endBackground(ctx)
	// Nothing is reported done that was not stored: the parent's transcript, session.json
	// and the session directory's names are made durable first, and a write of the
	// session's state that failed meanwhile (an agent's last sidecar) fails the run.
	if err := s.store(); err != nil {
		return s.report(ctx, err)
	}
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
func (s *session) checkInput(p Input) error {
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
	unread := !s.mb.empty() && !s.opts.Interactive // an interactive session's wait for an input
	if s.opts.BackgroundOnExit == BackgroundCancel {
		return unread
	}
	return s.reg.Unsettled() > 0 || unread
}

// held puts the notifications that arrived while an interactive session was idle before
// the input that starts its next turn: the parent reads them first, then the person.
func (s *session) held(p *Input) {
	if m, ok := s.mb.take(); ok {
		p.Msg.Content = append(m.Content, p.Msg.Content...)
	}
}

// turnFailed reports whether an interactive session goes on after its turn failed with
// err: a turn that reached --max-turns or whose model failed ends with its result, and the
// next input starts afresh. The run's own end (a signal, the budget) ends the session.
func (s *session) turnFailed(ctx context.Context, err error) bool {
	if !s.opts.Interactive || ctx.Err() != nil || errors.Is(err, ErrMaxBudget) {
		return false
	}
	if !errors.Is(err, ErrMaxTurns) && !errors.Is(err, ErrRunFailed) {
		return false
	}
	s.opts.Logger.Warn("turn failed; the session goes on", "session_id", s.id, "err", err)
	s.report(ctx, err)
	return true
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
			return fmt.Errorf("%w: %w (%d)", ErrMaxTurns, runtime.ErrMaxSteps, s.opts.MaxTurns)
		}
		s.parent.SetMaxSteps(left)
	}
	s.parentTurns++
	tctx, span := trace.StartTurn(tctx, s.opts.Tracer, trace.TurnInfo{SessionID: s.id, Agent: "parent", Turn: s.parentTurns, Parent: trace.RunFrom(tctx)})
	started := time.Now()
	res, err := s.parent.Execute(tctx, msg)
	trace.EndTurn(span, res.Reason, res.Reason == runtime.ReasonCancelled, err)
	s.recordTurn(started, res, err)
	// One fsync of the parent's transcript a turn: its messages and its record (the
	// runtime leaves the sync to the turn, turnStore; a failed sync is the turn's error,
	// as the runtime's would be). The names in the session directory (session.json, the
	// transcripts' files) become durable with it.
	if s.chat != nil {
		if serr := s.chat.Sync(); serr != nil && err == nil && res.Err == nil {
			res.Err = fmt.Errorf("sync transcript: %w", serr)
		}
	}
	if sess := s.opened.sess; sess != nil {
		_ = sess.Sync() // a failure is the session's (faults), checked next
	}
	if ferr := s.faults.failure(); ferr != nil {
		return ferr // the turn's end was not stored: not reported done
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
	s.lastText, s.lastStructured = res.FinalText, res.Structured
	switch res.Reason {
	case runtime.ReasonCompleted:
		s.lastStop = llm.StopEndTurn
		if perTurnResult {
			s.writeResult(streamjson.ResultSuccess, "")
			s.idle()
		}
		return nil
	case runtime.ReasonMaxTurns:
		if !errors.Is(res.Err, runtime.ErrStopLoop) {
			// The cap the user set, not what was left of it for this turn.
			return fmt.Errorf("%w: %w (%d)", ErrMaxTurns, runtime.ErrMaxSteps, s.opts.MaxTurns)
		}
		return fmt.Errorf("%w: %w", ErrMaxTurns, res.Err)
	case runtime.ReasonError:
		if errors.Is(res.Err, sdkhost.ErrMaxSessionTurns) {
			return fmt.Errorf("%w: %w", ErrMaxTurns, res.Err)
		}
		return fmt.Errorf("%w: %w", ErrRunFailed, res.Err)
	case runtime.ReasonCancelled:
		return res.Err
	case runtime.ReasonOutputRetries:
		return fmt.Errorf("%w: %w", ErrRunFailed, res.Err)
	default:
		return fmt.Errorf("%w: %w", ErrRunFailed, res.Err)
	}
}

// fail ends the run after an error: background agents are cancelled (keeping partial
// findings), the final result is written, and the error to exit with is returned.
func (s *session) fail(ctx context.Context, err error) error {
	s.reg.CancelAll(err)
	_ = s.reg.Wait(context.WithoutCancel(ctx))
	if ferr := s.faults.failure(); ferr != nil {
		// The state could not be stored: that is what ended the run, whatever the turn
		// it cut short failed with (an append, a cancellation).
		err = ferr
	}
	return s.report(ctx, err)
}

// store makes the session's state durable before the run reports it done: the parent's
// transcript synced, session.json written, the session directory's names synced. It
// returns the first write of the session's state that failed during the run or here.
func (s *session) store() error {
	if ferr := s.faults.failure(); ferr != nil {
		return ferr
	}
	if s.opened.sess == nil {
		return nil
	}
	if s.chat != nil {
		_ = s.chat.Sync()
	}
	_ = s.opened.writeInfo()
	_ = s.opened.sess.Sync()
	return s.faults.failure()
}

// report writes the result of a run (or, interactive, of a turn) that err ended, and
// returns the error to exit with.
func (s *session) report(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, sdkhost.ErrMaxSessionTurns):
		s.writeResult(streamjson.ResultErrorMaxTurns, fmt.Sprintf("Reached max session turns (%d)", s.opts.SDK.MaxSessionTurns))
		return err
	case errors.Is(err, runtime.ErrStopLoop):
		s.writeResult(streamjson.ResultErrorMaxTurns, "Stop hook loop: "+strings.TrimPrefix(err.Error(), ErrMaxTurns.Error()+": "))
		return err
	case errors.Is(err, ErrMaxTurns):
		s.writeResult(streamjson.ResultErrorMaxTurns, fmt.Sprintf("Reached maximum number of turns (%d)", s.opts.MaxTurns))
		return err
	case errors.Is(err, ErrMaxBudget):
		s.writeResult(resultErrorMaxBudget, err.Error())
		return err
	case errors.Is(err, store.ErrNotStored):
		s.writeResultAs(streamjson.ResultErrorDuringExecution, streamjson.TerminalAborted, strings.TrimPrefix(err.Error(), ErrRunFailed.Error()+": "))
		if !errors.Is(err, ErrRunFailed) {
			err = fmt.Errorf("%w: %w", ErrRunFailed, err)
		}
		return err
	case errors.Is(err, errTimeout):
		s.writeResultAs(streamjson.ResultErrorDuringExecution, streamjson.TerminalAborted, err.Error())
		return fmt.Errorf("%w: %w", ErrRunFailed, err)
	}
	if errors.Is(err, errPromptBlocked) || errors.Is(err, sdkhost.ErrPromptBlocked) {
		s.writeResultAs(streamjson.ResultErrorDuringExecution, streamjson.TerminalHookStopped, err.Error())
		return fmt.Errorf("%w: %w", ErrRunFailed, err)
	}
	if ae := (*structured.AttemptsError)(nil); errors.As(err, &ae) {
		s.writeResultAs(streamjson.ResultErrorMaxStructuredOutputRetries, streamjson.TerminalStructuredRetries, ae.Error())
		return err
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
	r.PermissionDenials = s.ws.refused()
	r.DurationMS = time.Since(s.start).Milliseconds()
	r.DurationAPIMS = s.apiTime.Milliseconds()
	r.NumTurns = s.numTurns
	r.Usage = streamjson.Usage(usage)
	r.ModelUsage = s.meter.models()
	r.TotalCostUSD = cost
	r.TerminalReason = terminal
	if subtype == streamjson.ResultSuccess {
		r.Result, r.StructuredOutput = s.lastText, s.lastStructured
		stop := s.lastStop
		r.StopReason = &stop
	} else {
		r.Errors = []string{errText}
	}
	s.wroteFinal = true
	switch s.opts.OutputFormat {
	case OutputStreamJSON:
		s.events.emit(r)
	case OutputJSON:
		_ = s.events.out.Encode(r)
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
