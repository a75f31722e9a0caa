package headless

import (
	"context"
	"errors"
	"fmt"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/mcp"
	"github.com/stoke-cli/stoke/agents/permission"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless/sdkhost"
	"github.com/stoke-cli/stoke/streamjson"
)

// host serves the Claude Agent SDK host that drives the run, or applies Claude Code's
// options (*sdkhost.Host); a plain run has none (nil). Assemble calls it while it builds
// the session's parts, then the loop at each parent turn, then Serve once at the end; all
// from the run's goroutine, except the Lifecycle, which the registry calls from its turns.
type host interface {
	// Parent adds the host's parts to the parent's runtime configuration (system prompt,
	// model, Stop callbacks, partial messages).
	Parent(runtime.Config) runtime.Config
	// Tools returns the parent's tool set: own (the task tools) and the workspace's tools
	// the host offers, wrapped in its tool callbacks.
	Tools(own []tools.Tool, ws *tools.Workspace) *tools.Set
	// Approval is the mode the workspace tools are built in, and whether an Approver
	// decides what that mode does not allow.
	Approval() (tools.Mode, bool)
	// Approver is the approver of a tool set: its permission rules, and a ceiling on the
	// live mode ("" for none: a subagent's own mode).
	Approver(rules *permission.Rules, ceiling tools.Mode) tools.Approver
	// Agents are more subagent types.
	Agents() []catalog.Definition
	// Lifecycle hears of the subagents' turns (the host's SubagentStart/Stop callbacks).
	agents.Lifecycle

	// SubmitPrompt starts a user turn: the message to run, or an error saying why the
	// host blocked it.
	SubmitPrompt(ctx context.Context, msg llm.Message) (llm.Message, error)
	// BeginTurn starts a parent turn: its context (an interrupt cancels it with
	// sdkhost.ErrInterrupted) and the func that ends it.
	BeginTurn(ctx context.Context) (context.Context, func())
	// Idle is told that, after a turn's result, nothing runs or waits in the run.
	Idle()

	// Close ends the host's side of the run, after every turn has settled.
	Close()
}

// newHost returns the host of a run that needs one: an SDK session (stream-json both
// ways), or a run given Claude Code's options. Nil otherwise. What it asks of the
// session later (the catalog, the tasks, the MCP servers) it asks of p once assembled.
func newHost(ctx context.Context, p *Parts) *sdkhost.Host {
	o := p.opts
	if !o.sdkMode() && o.SDK.IsZero() {
		return nil
	}
	transcript := ""
	if sess := p.opened.sess; sess != nil {
		transcript = sess.ParentTranscript()
	}
	return sdkhost.New(ctx, sdkhost.Config{
		Options: o.SDK, Control: p.cp, SDKMode: o.sdkMode(), Mode: o.knownApprovalMode(),
		Model: p.model(), ModelName: o.ModelName, Priced: o.Prices.Known,
		SessionID: p.id, CWD: o.CWD, TranscriptPath: transcript, Version: o.Version,
		Emit: p.events.emit, Catalog: func() catalog.Catalog { return p.reg.Catalog() },
		Tasks: func() sdkhost.Tasks { return p.reg }, MCPServers: func() []mcp.Status { return p.mcp.m.Statuses() },
		Logger: o.Logger,
	})
}

// beginTurn starts a parent turn: it returns the turn's context (cancelled by going over
// the budget, or by the host) and the func that ends the turn.
func (s *session) beginTurn(ctx context.Context) (context.Context, func()) {
	tctx, cancel := context.WithCancelCause(ctx)
	endBudget := s.budget.begin(cancel)
	endHost := func() {}
	if s.host != nil {
		tctx, endHost = s.host.BeginTurn(tctx)
	}
	endInput := watchCancel(s.cancelTurn, cancel)
	return tctx, func() {
		endInput()
		endHost()
		endBudget()
		cancel(nil)
	}
}

// watchCancel cancels a turn with ErrTurnCancelled when its input's Cancel is closed
// (nil: never), until the returned func ends the watch.
func watchCancel(c <-chan struct{}, cancel context.CancelCauseFunc) func() {
	if c == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-c:
			cancel(ErrTurnCancelled)
		case <-done:
		}
	}()
	return func() { close(done) }
}

// endedEarly handles a parent turn that the budget or the host ended (and not the run's
// own end). It reports whether it did, and the error the turn returns: ErrMaxBudget once
// the run's cost is over the budget, whatever the turn's outcome; nil after an interrupt
// (its result is written and the session goes on).
func (s *session) endedEarly(runCtx, turnCtx context.Context, reason string) (bool, error) {
	if runCtx.Err() != nil {
		return false, nil
	}
	if s.budget.over() {
		return true, fmt.Errorf("%w: the run cost $%.4f, over --max-budget-usd $%.4f", ErrMaxBudget, s.budget.cost(), s.opts.SDK.MaxBudgetUSD)
	}
	cause := context.Cause(turnCtx)
	if reason == runtime.ReasonCompleted || !errors.Is(cause, sdkhost.ErrInterrupted) && !errors.Is(cause, ErrTurnCancelled) {
		return false, nil
	}
	s.writeResultAs(streamjson.ResultErrorDuringExecution, streamjson.TerminalAborted, cause.Error())
	s.idle()
	return true, nil
}

// userTurn runs one user turn: the host may block it first, and the parent's model may
// not take its images or documents (an error result, and the session goes on).
func (s *session) userTurn(ctx context.Context, msg llm.Message, perTurnResult bool) error {
	if err := s.checkMedia(msg); err != nil {
		s.opts.Logger.Warn("user message refused", "err", err)
		s.writeResultAs(streamjson.ResultErrorDuringExecution, streamjson.TerminalImageError, err.Error())
		s.idle()
		return nil
	}
	if s.host != nil {
		var err error
		if msg, err = s.host.SubmitPrompt(ctx, msg); err != nil {
			s.writeResultAs(streamjson.ResultErrorDuringExecution, streamjson.TerminalHookStopped, err.Error())
			s.idle()
			return nil
		}
	}
	s.promptCalls = 0 // a new prompt: --max-turns counts afresh
	return s.turn(ctx, msg, perTurnResult)
}

// idle tells the host, after a result, when nothing runs or waits: no notification
// pending, no background agent unsettled.
func (s *session) idle() {
	if s.host == nil || !s.mb.empty() || s.reg.Unsettled() > 0 {
		return
	}
	s.host.Idle()
}

// endedBeforeStart is the error of a run whose context ended while it waited for the first
// stdin line: the signal's *InterruptedError, else a run failure.
func endedBeforeStart(cause error) error {
	var ie *InterruptedError
	if errors.As(cause, &ie) {
		return ie
	}
	return fmt.Errorf("%w: %w", ErrRunFailed, cause)
}

// checkMedia reports whether the parent's model takes every block of a user message.
func (s *session) checkMedia(msg llm.Message) error {
	if s.parentModel == nil {
		return nil
	}
	return llm.CheckInput(s.parentModel, msg)
}
