package sdkhost

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/mcp"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// ErrInterrupted is the cancel cause of a parent turn the host interrupted (an interrupt
// control request, or a can_use_tool denial that asks for it).
var ErrInterrupted = errors.New("interrupted: the host sent an interrupt request")

// ErrPromptBlocked: a UserPromptSubmit callback blocked a user turn.
var ErrPromptBlocked = errors.New("prompt blocked by a UserPromptSubmit hook")

// hookTimeout bounds a hook callback whose matcher names no timeout.
const hookTimeout = 60 * time.Second

// Config is what a Host is built with.
type Config struct {
	Options Options
	// Control is the session's stream-json stdin (nil without stream-json input).
	Control *ControlPlane
	// SDKMode: the host speaks the control protocol (stream-json input and output).
	SDKMode bool
	// Mode is the approval mode the run was started with.
	Mode tools.Mode
	// Model is the parent's model (set_model switches the name it is asked for);
	// ModelName the configured name.
	Model     llm.Model
	ModelName string
	// Priced reports whether the run's price table prices a model: with
	// Options.MaxBudgetUSD, set_model refuses a model it does not (its calls would cost 0
	// and the budget would never fire). Nil prices every model.
	Priced    func(model string) bool
	SessionID string
	CWD       string
	// TranscriptPath is the parent's transcript ("" when nothing is stored).
	TranscriptPath string
	Version        string
	// Emit writes an event on the session's stream. Safe for concurrent use.
	Emit func(streamjson.Event)
	// Catalog returns the subagent types, for the initialize reply; it is called only
	// once the control plane is attached.
	Catalog func() catalog.Catalog
	// Tasks returns the run's tasks, for stop_task and get_task_output; nil when there
	// are none. Called only once the control plane is attached.
	Tasks func() Tasks
	// MCPServers returns the run's MCP servers, for mcp_status; nil when there are none.
	// Called only once the control plane is attached.
	MCPServers func() []mcp.Status
	Logger     *slog.Logger
}

// Tasks are the run's subagent tasks as control requests reach them (*agents.Registry).
// Both methods return at once.
type Tasks interface {
	// Stop cancels id's running turn; its partial findings are kept.
	Stop(id agents.TaskID) (agents.Row, error)
	// Collect returns id's row; with noWait it does not wait for a running turn.
	Collect(ctx context.Context, id agents.TaskID, noWait bool) (agents.Row, error)
}

// Host is the side of a run that serves a Claude Agent SDK host, or applies Claude Code's
// options: the control requests, the hook callbacks, the live permission mode and model,
// the session states. The run loop calls it at fixed points (see each method); a plain
// run has none. Its methods are safe for concurrent use unless they say otherwise.
type Host struct {
	cfg     Config
	opts    Options // Config.Options with what initialize asked for
	hooks   map[string][]hookMatcher
	model   *switchModel // the parent's model, switchable by set_model
	partial *partialStream

	mu          sync.Mutex
	mode        tools.Mode  // the live permission mode (set_permission_mode)
	noPrompt    bool        // the live mode never asks the host (dontAsk)
	turn        *turnHandle // the running parent turn; nil between turns
	state       string      // the last session state written ("" before any)
	initialized bool        // the initialize request has been answered
	closed      bool        // Close has begun: no more hook callbacks are fired

	hookWG  sync.WaitGroup // hook callbacks fired without waiting (SubagentStart/Stop)
	hookCtx context.Context
	hookEnd context.CancelFunc
}

// turnHandle is the running parent turn's cancel function; compared by pointer, so a late
// cleanup cannot clear a newer turn's handle.
type turnHandle struct {
	cancel context.CancelCauseFunc
}

// New returns the host of a run whose context is ctx. Close must be called at the end of
// the run.
func New(ctx context.Context, cfg Config) *Host {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Emit == nil {
		cfg.Emit = func(streamjson.Event) {}
	}
	hctx, hend := context.WithCancel(context.WithoutCancel(ctx))
	h := &Host{cfg: cfg, opts: cfg.Options, mode: cfg.Mode, noPrompt: cfg.Options.NoPrompt, hookCtx: hctx, hookEnd: hend}
	if cp := cfg.Control; cp != nil && cp.initErr == nil {
		h.opts = h.opts.with(cp.init)
		h.hooks = cp.init.hooks
	}
	if cfg.Model != nil {
		h.model = newSwitchModel(cfg.Model, cfg.ModelName)
		h.model.limit = h.opts.MaxSessionTurns
	}
	return h
}

// Agents are the subagent types the host defined (--agents, initialize).
func (h *Host) Agents() []catalog.Definition { return h.opts.Agents }

// Parent returns the parent's runtime configuration with the host's parts: its system
// prompt, the model set_model switches, its Stop callbacks after the settings' Stop hooks,
// and the stream_event lines of --include-partial-messages. Call before the run starts.
func (h *Host) Parent(cfg runtime.Config) runtime.Config {
	base := cfg.System
	if h.opts.SystemPrompt != "" {
		base = h.opts.SystemPrompt
	}
	cfg.System = joinPrompt(base, h.opts.AppendSystemPrompt)
	if h.model != nil {
		cfg.Model = h.model
	}
	if h.hasHooks(hookStop) {
		cfg.StopHook = h.withStopCallbacks(cfg.StopHook)
	}
	if h.opts.IncludePartialMessages {
		name := h.cfg.ModelName
		if h.model != nil {
			name = ""
		}
		h.partial = newPartialStream(h.cfg.Emit, func() string {
			if name != "" {
				return name
			}
			return h.model.Name()
		})
		cfg.OnModelEvent = h.partial.event
	}
	return cfg
}

// BeginTurn starts a parent turn: it returns the turn's context, which an interrupt
// cancels with ErrInterrupted, and writes the running state. end must be called when the
// turn has ended. Called from the run loop.
func (h *Host) BeginTurn(ctx context.Context) (_ context.Context, end func()) {
	tctx, cancel := context.WithCancelCause(ctx)
	th := &turnHandle{cancel: cancel}
	h.mu.Lock()
	h.turn = th
	h.mu.Unlock()
	h.writeState("running")
	return tctx, func() {
		h.mu.Lock()
		if h.turn == th {
			h.turn = nil
		}
		h.mu.Unlock()
		cancel(nil)
		if h.partial != nil {
			h.partial.finish()
		}
	}
}

// interruptTurn cancels the running parent turn, if any, with ErrInterrupted.
func (h *Host) interruptTurn() bool {
	h.mu.Lock()
	th := h.turn
	h.mu.Unlock()
	if th == nil {
		return false
	}
	th.cancel(ErrInterrupted)
	return true
}

// sessionState is a system/session_state_changed line. It is meant for the SDK host's
// own bookkeeping (when to close stdin), so it says sdk_host_only and the SDK does not
// hand it to the app: the app's last message stays the result.
type sessionState struct {
	streamjson.Envelope
	State       string `json:"state"`
	SDKHostOnly bool   `json:"sdk_host_only"`
}

// writeState writes a session state line when it changes (with SessionStates).
func (h *Host) writeState(state string) {
	if !h.opts.SessionStates {
		return
	}
	h.mu.Lock()
	changed := h.state != state
	h.state = state
	h.mu.Unlock()
	if changed {
		h.cfg.Emit(&sessionState{Envelope: streamjson.Envelope{Type: "system", Subtype: "session_state_changed"}, State: state, SDKHostOnly: true})
	}
}

// Idle writes the idle state after a turn's result, unless a user turn is queued on
// stdin: the run loop calls it when nothing else runs or waits (no notification pending,
// no background agent unsettled). Nothing is written before the first turn.
func (h *Host) Idle() {
	if !h.opts.SessionStates {
		return
	}
	h.mu.Lock()
	running := h.state == "running"
	h.mu.Unlock()
	if !running || h.cfg.Control.waiting() {
		return
	}
	h.writeState("idle")
}

// Close ends the host's side of the run: the idle state if running was the last one, and
// the hook callbacks still in flight (cancelled, then waited for). Called once, after the
// registry's turns have settled.
func (h *Host) Close() {
	h.mu.Lock()
	running := h.state == "running"
	h.closed = true
	h.mu.Unlock()
	if running {
		h.writeState("idle")
	}
	h.hookEnd()
	h.hookWG.Wait()
}

// initializeReply answers initialize: what the SDK's initializationResult(),
// supportedCommands(), supportedModels(), supportedAgents() and accountInfo() return.
func (h *Host) initializeReply(line int) (any, error) {
	h.mu.Lock()
	again := h.initialized
	h.initialized = true
	h.mu.Unlock()
	cp := h.cfg.Control
	switch {
	case again || line != cp.initLine:
		return nil, &ControlError{Code: codeInitialize, Msg: "initialize must be the first line on stdin, and is accepted once: this session has already started"}
	case cp.initErr != nil:
		return nil, &ControlError{Code: codeInitialize, Msg: cp.initErr.Error()}
	}
	cat := h.cfg.Catalog()
	agentsInfo := make([]map[string]any, 0, len(cat))
	for _, name := range cat.Names() {
		d := cat[name]
		info := map[string]any{"name": d.Name, "description": d.Description}
		if d.Model != "" {
			info["model"] = d.Model
		}
		agentsInfo = append(agentsInfo, info)
	}
	name := h.model.Name()
	reply := map[string]any{
		"commands":                []any{},
		"agents":                  agentsInfo,
		"output_style":            "default",
		"available_output_styles": []string{"default"},
		"models": []map[string]any{{
			"value": name, "displayName": name, "description": "the model stoke is configured with",
		}},
		"account":             map[string]any{},
		"claude_code_version": h.cfg.Version,
		"stoke_version":       h.cfg.Version,
	}
	if len(h.hooks) > 0 {
		reply["hooks_applied"] = true
	}
	if cp.init.mcpApplied {
		reply["mcp_servers_applied"] = true
	}
	return reply, nil
}
