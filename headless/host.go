package headless

import (
	"context"
	"errors"
	"fmt"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/permission"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless/sdkhost"
	"github.com/stoke-cli/stoke/streamjson"
)

// host serves the Claude Agent SDK host that drives the run, or applies Claude Code's
// options (*sdkhost.Host); a plain run has none (nil). The session calls it while it
// builds the run, then the run loop at each parent turn, then once at the end; all from
// the run's goroutine, except the Lifecycle, which the registry calls from its turns.
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
// ways), or a run given Claude Code's options. Nil otherwise.
func (s *session) newHost(ctx context.Context, cp *sdkhost.ControlPlane, model llm.Model) *sdkhost.Host {
	o := s.opts
	if !o.sdkMode() && o.SDK.IsZero() {
		return nil
	}
	transcript := ""
	if s.sess != nil {
		transcript = s.sess.ParentTranscript()
	}
	return sdkhost.New(ctx, sdkhost.Config{
		Options: o.SDK, Control: cp, SDKMode: o.sdkMode(), Mode: o.knownApprovalMode(),
		Model: model, ModelName: o.ModelName, Priced: o.Prices.Known,
		SessionID: s.id, CWD: o.CWD, TranscriptPath: transcript, Version: o.Version,
		Emit: s.emit, Catalog: func() catalog.Catalog { return s.reg.Catalog() },
		Tasks: func() sdkhost.Tasks { return s.reg }, MCPServers: s.mcpServerStatuses,
		Logger: o.Logger,
	})
}

// hostAgents are the subagent types the host defined.
func (s *session) hostAgents() []catalog.Definition {
	if s.host == nil {
		return nil
	}
	return s.host.Agents()
}

// workspaceApproval returns the approval mode the workspace tools are built with, and
// whether the host approves what that mode does not allow; without a host, the configured
// mode as it is.
func (s *session) workspaceApproval() (tools.Mode, bool) {
	if s.host != nil {
		return s.host.Approval()
	}
	return s.opts.knownApprovalMode(), false
}

// parentTools is the parent's tool set: the task tools, the MCP tools and the workspace
// tools.
func (s *session) parentTools(ws *tools.Workspace) *tools.Set {
	own := append(agents.TaskTools(s.reg), s.parentMCPTools(ws)...)
	if s.host != nil {
		return s.host.Tools(own, ws)
	}
	wsTools, _ := ws.Tools(nil)
	return tools.NewSet(append(own, wsTools...)...)
}

// beginTurn starts a parent turn: it returns the turn's context (cancelled by going over
// the budget, or by the host) and the func that ends the turn.
func (s *session) beginTurn(ctx context.Context) (context.Context, func()) {
	tctx, cancel := context.WithCancelCause(ctx)
	h := &turnHandle{cancel: cancel}
	s.mu.Lock()
	s.turnHandle = h
	s.mu.Unlock()
	if s.overBudget() {
		cancel(ErrMaxBudget)
	}
	endHost := func() {}
	if s.host != nil {
		tctx, endHost = s.host.BeginTurn(tctx)
	}
	return tctx, func() {
		endHost()
		s.mu.Lock()
		if s.turnHandle == h {
			s.turnHandle = nil
		}
		s.mu.Unlock()
		cancel(nil)
	}
}

// turnHandle is the running parent turn's cancel function; compared by pointer, so a late
// cleanup cannot clear a newer turn's handle.
type turnHandle struct {
	cancel context.CancelCauseFunc
}

// charged is called after each model call that reported its usage: over the budget, the
// running parent turn is cancelled.
func (s *session) charged() {
	if !s.overBudget() {
		return
	}
	s.mu.Lock()
	h := s.turnHandle
	s.mu.Unlock()
	if h != nil {
		h.cancel(ErrMaxBudget)
	}
}

// overBudget reports whether the run's cost (subagents included) is over --max-budget-usd.
func (s *session) overBudget() bool {
	return s.opts.SDK.MaxBudgetUSD > 0 && s.costUSD() > s.opts.SDK.MaxBudgetUSD
}

func (s *session) costUSD() float64 {
	_, cost := s.meter.total()
	return cost
}

// endedEarly handles a parent turn that the budget or the host ended (and not the run's
// own end). It reports whether it did, and the error the turn returns: ErrMaxBudget once
// the run's cost is over the budget, whatever the turn's outcome; nil after an interrupt
// (its result is written and the session goes on).
func (s *session) endedEarly(runCtx, turnCtx context.Context, reason string) (bool, error) {
	if runCtx.Err() != nil {
		return false, nil
	}
	if s.overBudget() {
		return true, fmt.Errorf("%w: the run cost $%.4f, over --max-budget-usd $%.4f", ErrMaxBudget, s.costUSD(), s.opts.SDK.MaxBudgetUSD)
	}
	if reason == runtime.ReasonCompleted || !errors.Is(context.Cause(turnCtx), sdkhost.ErrInterrupted) {
		return false, nil
	}
	s.writeResultAs(streamjson.ResultErrorDuringExecution, streamjson.TerminalAborted, sdkhost.ErrInterrupted.Error())
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
