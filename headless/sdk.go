package headless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// SDKOptions are the Claude Code options stoke honours when a Claude Agent SDK host (an app
// that sets pathToClaudeCodeExecutable to stoke) or a script written for Claude Code drives
// it. cmd/claudeflags.go fills them from Claude Code's flags; the host's initialize request
// adds to them. The zero value changes nothing.
type SDKOptions struct {
	// PermissionPromptStdio (--permission-prompt-tool=stdio): a workspace tool call the
	// permission mode would refuse is put to the host as a can_use_tool control request.
	PermissionPromptStdio bool
	// AllowedTools are Claude Code permission rules that approve calls without asking:
	// "Write", "Bash", "Bash(git status)", "Bash(npm run:*)" (--allowedTools).
	AllowedTools []string
	// DisallowedTools are rules that refuse calls; a bare name also takes the tool away
	// from the model (--disallowedTools).
	DisallowedTools []string
	// Tools, when not nil, names the workspace tools offered (--tools); empty offers none.
	Tools []string
	// IncludePartialMessages writes stream_event lines with the parent's streamed reply
	// (--include-partial-messages).
	IncludePartialMessages bool
	// MaxBudgetUSD ends the run with error_max_budget_usd once its cost (total_cost_usd,
	// priced by Options.Prices) goes over it; 0 is no budget (--max-budget-usd).
	MaxBudgetUSD float64
	// SystemPrompt replaces stoke's built-in parent prompt when not empty;
	// AppendSystemPrompt is added to the prompt in use (--system-prompt,
	// --append-system-prompt, initialize's systemPrompt and appendSystemPrompt).
	SystemPrompt       string
	AppendSystemPrompt string
	// Agents are more subagent types for the task tool (--agents, initialize's agents).
	Agents []agents.Definition
	// SessionStates writes system/session_state_changed lines: running when a turn starts,
	// idle once nothing runs or waits (the SDK sets CLAUDE_CODE_SDK_READS_SESSION_STATE=1).
	SessionStates bool
	// NoPrompt (permission mode dontAsk) never asks the host, even with
	// PermissionPromptStdio: what the mode refuses is refused.
	NoPrompt bool
}

// resultErrorMaxBudget is the result subtype of a run that went over --max-budget-usd.
const resultErrorMaxBudget = "error_max_budget_usd"

// ErrMaxBudget: the run's cost went over --max-budget-usd (exit 1).
var ErrMaxBudget = errors.New("maximum budget reached")

// errHostInterrupt is the cancel cause of a turn the host interrupted.
var errHostInterrupt = errors.New("interrupted: the host sent an interrupt request")

// sdkMode reports whether the session speaks the control protocol: stream-json both ways.
func (o Options) sdkMode() bool {
	return o.InputFormat == InputStreamJSON && o.OutputFormat == OutputStreamJSON
}

// startControl starts the stdin reader of a stream-json session (nil otherwise) and, when
// the first line is an initialize request, applies it to opts before the session is
// built. An error is returned only when ctx ends first.
func startControl(ctx context.Context, opts *Options) (*controlPlane, error) {
	if opts.InputFormat != InputStreamJSON {
		return nil, nil
	}
	c := newControlPlane(opts.Stdin, opts.sdkMode(), opts.Logger)
	if !opts.sdkMode() {
		return c, nil
	}
	in, err := c.peek(ctx)
	if ctx.Err() != nil {
		c.close()
		return nil, err
	}
	if err != nil || in.Kind != streamjson.InputControlRequest || in.Subtype != "initialize" {
		return c, nil // the reader delivers it (EOF, a malformed line, a prompt) in order
	}
	c.initLine = in.Line
	hooks, err := applyInitialize(opts, in.Raw)
	if err != nil {
		// The session runs without it; the initialize reply says what was wrong.
		c.initErr = err
		return c, nil
	}
	c.hooks = hooks
	return c, nil
}

// initRequest is the part of an initialize request stoke applies.
type initRequest struct {
	SystemPrompt       json.RawMessage          `json:"systemPrompt"`
	AppendSystemPrompt string                   `json:"appendSystemPrompt"`
	Agents             map[string]sdkAgent      `json:"agents"`
	Hooks              map[string][]hookMatcher `json:"hooks"`
	JSONSchema         json.RawMessage          `json:"jsonSchema"`
	SDKMCPServers      []string                 `json:"sdkMcpServers"`
}

// sdkAgent is an agent definition as the SDK sends it (AgentDefinition).
type sdkAgent struct {
	Description     string   `json:"description"`
	Prompt          string   `json:"prompt"`
	Tools           []string `json:"tools"`
	DisallowedTools []string `json:"disallowedTools"`
	Model           string   `json:"model"`
}

// applyInitialize folds an initialize request into opts (the system prompt, the appended
// prompt, the SDK-defined agents as subagent types) and returns its hook callbacks. On an
// error nothing is applied.
func applyInitialize(opts *Options, raw json.RawMessage) (map[string][]hookMatcher, error) {
	var req initRequest
	if err := json.Unmarshal([]byte(gjson.GetBytes(raw, "request").Raw), &req); err != nil {
		return nil, fmt.Errorf("decode initialize: %w", err)
	}
	defs, err := agentDefinitions(req.Agents)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if sp, ok := systemPromptText(req.SystemPrompt); ok {
		opts.SDK.SystemPrompt = sp
	}
	opts.SDK.AppendSystemPrompt = joinPrompt(opts.SDK.AppendSystemPrompt, req.AppendSystemPrompt)
	opts.SDK.Agents = append(opts.SDK.Agents, defs...)
	for name, ms := range req.Hooks {
		if !hookEventSupported(name) {
			opts.Logger.Warn("SDK hook event not supported: its callbacks are never invoked", "event", name)
		}
		for _, m := range ms {
			if err := m.valid(); err != nil {
				opts.Logger.Warn("SDK hook matcher is not a regular expression: it matches nothing", "event", name, "matcher", m.Matcher, "err", err)
			}
		}
	}
	if len(req.JSONSchema) > 0 && string(req.JSONSchema) != "null" {
		opts.Logger.Warn("initialize: jsonSchema ignored: stoke has no structured output")
	}
	if len(req.SDKMCPServers) > 0 {
		opts.Logger.Warn("initialize: in-process MCP servers ignored: stoke has no MCP client", "servers", strings.Join(req.SDKMCPServers, ","))
	}
	return req.Hooks, nil
}

// systemPromptText reads initialize's systemPrompt: absent (the preset) and [""] (the
// SDK's default) keep stoke's built-in prompt; a string or a list of strings replaces it.
func systemPromptText(raw json.RawMessage) (string, bool) {
	r := gjson.ParseBytes(raw)
	var parts []string
	switch {
	case r.Type == gjson.String:
		parts = []string{r.Str}
	case r.IsArray():
		for _, p := range r.Array() {
			if p.Type == gjson.String {
				parts = append(parts, p.Str)
			}
		}
	}
	text := strings.TrimSpace(strings.Join(parts, "\n\n"))
	return text, text != ""
}

func joinPrompt(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// agentDefinitions converts SDK agent definitions (initialize's agents, --agents) to
// subagent types, sorted by name. Claude model aliases ("sonnet", "opus", "haiku",
// "inherit") and claude-* ids mean the parent's model; another model name is kept.
func agentDefinitions(in map[string]sdkAgent) ([]agents.Definition, error) {
	out := make([]agents.Definition, 0, len(in))
	for name, a := range in {
		if strings.TrimSpace(name) == "" {
			return nil, errors.New("agent with an empty name")
		}
		if strings.TrimSpace(a.Prompt) == "" {
			return nil, fmt.Errorf("agent %q has no prompt", name)
		}
		d := agents.Definition{
			Name:            name,
			Description:     a.Description,
			Prompt:          a.Prompt,
			Tools:           canonicalTools(a.Tools),
			DisallowedTools: canonicalTools(a.DisallowedTools),
			Source:          "sdk",
		}
		if m := a.Model; m != "" && !claudeModelAlias(m) {
			d.Model = m
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b agents.Definition) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ParseAgentsJSON reads Claude Code's --agents value: {"name": {description, prompt, tools?, model?}}.
func ParseAgentsJSON(data string) ([]agents.Definition, error) {
	var in map[string]sdkAgent
	if err := json.Unmarshal([]byte(data), &in); err != nil {
		return nil, fmt.Errorf("--agents: %w", err)
	}
	return agentDefinitions(in)
}

func claudeModelAlias(m string) bool {
	switch strings.ToLower(m) {
	case "inherit", "sonnet", "opus", "haiku", "fable", "default":
		return true
	}
	return strings.HasPrefix(strings.ToLower(m), "claude-")
}

// canonicalTools maps Claude Code's workspace tool names to stoke's; others are kept.
func canonicalTools(names []string) []string {
	if names == nil {
		return nil
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if c, ok := tools.CanonicalName(n); ok {
			n = c
		}
		out = append(out, n)
	}
	return out
}

// sdkState is the part of a session that serves an SDK host: the control plane, the live
// permission mode and model, the running turn (for interrupt), session states, hooks and
// the budget. Its methods are safe for concurrent use unless they say otherwise.
type sdkState struct {
	cp      *controlPlane // nil without stream-json input
	opts    SDKOptions
	hooks   map[string][]hookMatcher
	model   *switchModel // the parent's model, switchable by set_model
	partial *partialStream

	mu          sync.Mutex
	mode        tools.Mode  // the live permission mode (set_permission_mode)
	turn        *turnHandle // the running parent turn; nil between turns
	state       string      // the last session state written ("" before any)
	initialized bool        // the initialize request has been answered
	// taskTypes maps task ids to subagent types, for SubagentStop (with such hooks only).
	taskTypes map[string]string

	hookWG  sync.WaitGroup // hook callbacks fired without waiting (SubagentStart/Stop)
	hookCtx context.Context
	hookEnd context.CancelFunc
}

// turnHandle is the running parent turn's cancel function; compared by pointer, so a late
// cleanup cannot clear a newer turn's handle.
type turnHandle struct {
	cancel context.CancelCauseFunc
}

func newSDKState(ctx context.Context, cp *controlPlane, opts Options) *sdkState {
	mode, err := tools.ParseMode(opts.ApprovalMode)
	if err != nil {
		mode = tools.ModeDefault
	}
	hctx, hend := context.WithCancel(context.WithoutCancel(ctx))
	st := &sdkState{cp: cp, opts: opts.SDK, mode: mode, hookCtx: hctx, hookEnd: hend, taskTypes: map[string]string{}}
	if cp != nil {
		st.hooks = cp.hooks
	}
	if opts.Model != nil {
		st.model = newSwitchModel(opts.Model, opts.ModelName)
	}
	return st
}

// systemPrompt is the parent's system prompt: stoke's, or the host's, plus the appended text.
func (st *sdkState) systemPrompt(builtin string) string {
	base := builtin
	if st.opts.SystemPrompt != "" {
		base = st.opts.SystemPrompt
	}
	return joinPrompt(base, st.opts.AppendSystemPrompt)
}

// hostAgents are the subagent types the host defined (--agents, initialize).
func (st *sdkState) hostAgents() []agents.Definition { return st.opts.Agents }

// beginTurn starts a parent turn: it returns the turn's context (cancelled by an interrupt
// or by going over the budget) and writes the running state. end must be called when the
// turn has ended.
func (s *session) beginTurn(ctx context.Context) (context.Context, func()) {
	st := s.sdk
	tctx, cancel := context.WithCancelCause(ctx)
	h := &turnHandle{cancel: cancel}
	st.mu.Lock()
	st.turn = h
	st.mu.Unlock()
	if s.overBudget() {
		cancel(ErrMaxBudget)
	}
	s.writeState("running")
	return tctx, func() {
		st.mu.Lock()
		if st.turn == h {
			st.turn = nil
		}
		st.mu.Unlock()
		cancel(nil)
		if st.partial != nil {
			st.partial.finish()
		}
	}
}

// interruptTurn cancels the running parent turn, if any, with errHostInterrupt.
func (st *sdkState) interruptTurn() bool {
	st.mu.Lock()
	h := st.turn
	st.mu.Unlock()
	if h == nil {
		return false
	}
	h.cancel(errHostInterrupt)
	return true
}

// hostTurnEnd handles a parent turn that the host or the budget ended (and not the run's
// own end). It reports whether it did, and the error the turn returns: ErrMaxBudget once
// the run's cost is over the budget, whatever the turn's outcome; nil after an interrupt
// (its result is written and the session goes on).
func (s *session) hostTurnEnd(runCtx, turnCtx context.Context, reason string) (bool, error) {
	if runCtx.Err() != nil {
		return false, nil
	}
	if s.overBudget() {
		return true, fmt.Errorf("%w: the run cost $%.4f, over --max-budget-usd $%.4f", ErrMaxBudget, s.costUSD(), s.sdk.opts.MaxBudgetUSD)
	}
	if reason == agents.ReasonCompleted || !errors.Is(context.Cause(turnCtx), errHostInterrupt) {
		return false, nil
	}
	s.writeResult(streamjson.ResultErrorDuringExecution, errHostInterrupt.Error())
	s.maybeIdle()
	return true, nil
}

// observe looks at every event the session writes: assistant usage counts toward the
// budget; task events fire the SubagentStart/SubagentStop hook callbacks.
func (s *session) observe(ev streamjson.Event) {
	st := s.sdk
	if st == nil {
		return
	}
	switch e := ev.(type) {
	case *streamjson.Assistant:
		if !s.overBudget() {
			return
		}
		st.mu.Lock()
		h := st.turn
		st.mu.Unlock()
		if h != nil {
			h.cancel(ErrMaxBudget)
		}
	case *streamjson.TaskStarted:
		if !st.hasHooks(hookSubagentStart) && !st.hasHooks(hookSubagentStop) {
			return
		}
		st.mu.Lock()
		st.taskTypes[e.TaskID] = e.SubagentType
		st.mu.Unlock()
		s.fireHook(hookSubagentStart, e.SubagentType, map[string]any{
			"agent_id": e.TaskID, "agent_type": e.SubagentType,
		})
	case *streamjson.TaskNotification:
		st.mu.Lock()
		typ := st.taskTypes[e.TaskID]
		st.mu.Unlock()
		s.fireHook(hookSubagentStop, typ, map[string]any{
			"agent_id": e.TaskID, "agent_type": typ, "agent_transcript_path": e.OutputFile,
			"stop_hook_active": false, "last_assistant_message": e.Summary,
		})
	}
}

// overBudget reports whether the run's cost (subagents included) is over --max-budget-usd.
func (s *session) overBudget() bool {
	return s.sdk.opts.MaxBudgetUSD > 0 && s.costUSD() > s.sdk.opts.MaxBudgetUSD
}

func (s *session) costUSD() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cost
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
func (s *session) writeState(state string) {
	st := s.sdk
	if !st.opts.SessionStates {
		return
	}
	st.mu.Lock()
	changed := st.state != state
	st.state = state
	st.mu.Unlock()
	if changed {
		s.emit(&sessionState{Envelope: streamjson.Envelope{Type: "system", Subtype: "session_state_changed"}, State: state, SDKHostOnly: true})
	}
}

// maybeIdle writes the idle state after a turn's result when nothing else runs or waits:
// no user turn queued, no notification pending, no background agent unsettled.
func (s *session) maybeIdle() {
	if !s.sdk.opts.SessionStates {
		return
	}
	s.sdk.mu.Lock()
	running := s.sdk.state == "running"
	s.sdk.mu.Unlock()
	if !running || s.sdk.cp.waiting() || !s.mb.empty() || s.reg.Unsettled() > 0 {
		return
	}
	s.writeState("idle")
}

// endSDK ends the SDK side of the run: the idle state if running was the last one, and the
// hook callbacks still in flight (cancelled, then waited for).
func (s *session) endSDK() {
	if s.sdk == nil {
		return
	}
	s.sdk.mu.Lock()
	running := s.sdk.state == "running"
	s.sdk.mu.Unlock()
	if running {
		s.writeState("idle")
	}
	s.sdk.hookEnd()
	s.sdk.hookWG.Wait()
}

// handleControl answers the host's control requests (controlHandler).
func (s *session) handleControl(in streamjson.Input) (any, error) {
	req := gjson.GetBytes(in.Raw, "request")
	switch in.Subtype {
	case "initialize":
		return s.initializeReply(in.Line)
	case "interrupt":
		if !s.sdk.interruptTurn() {
			s.opts.Logger.Debug("interrupt: no turn is running")
		}
		return map[string]any{}, nil
	case "set_model":
		name := req.Get("model").String()
		s.sdk.model.set(name)
		s.opts.Logger.Info("model changed by the host", "model", s.sdk.model.Name())
		return map[string]any{}, nil
	case "set_permission_mode":
		m, err := tools.ParseMode(req.Get("mode").String())
		if err != nil {
			return nil, fmt.Errorf("set_permission_mode: %w", err)
		}
		s.sdk.mu.Lock()
		s.sdk.mode = m
		s.sdk.mu.Unlock()
		return map[string]any{"mode": streamjson.PermissionMode(string(m))}, nil
	default:
		return nil, &unsupportedError{subtype: in.Subtype}
	}
}

// initializeReply answers initialize: what the SDK's initializationResult(),
// supportedCommands(), supportedModels(), supportedAgents() and accountInfo() return.
func (s *session) initializeReply(line int) (any, error) {
	s.sdk.mu.Lock()
	again := s.sdk.initialized
	s.sdk.initialized = true
	s.sdk.mu.Unlock()
	cp := s.sdk.cp
	switch {
	case again || line != cp.initLine:
		return nil, errors.New("initialize must be the first line on stdin, and is accepted once: this session has already started")
	case cp.initErr != nil:
		return nil, cp.initErr
	}
	cat := s.reg.Catalog()
	agentsInfo := make([]map[string]any, 0, len(cat))
	for _, name := range cat.Names() {
		d := cat[name]
		info := map[string]any{"name": d.Name, "description": d.Description}
		if d.Model != "" {
			info["model"] = d.Model
		}
		agentsInfo = append(agentsInfo, info)
	}
	name := s.sdk.model.Name()
	reply := map[string]any{
		"commands":                []any{},
		"agents":                  agentsInfo,
		"output_style":            "default",
		"available_output_styles": []string{"default"},
		"models": []map[string]any{{
			"value": name, "displayName": name, "description": "the model stoke is configured with",
		}},
		"account":             map[string]any{},
		"claude_code_version": s.opts.Version,
		"stoke_version":       s.opts.Version,
	}
	if len(s.sdk.hooks) > 0 {
		reply["hooks_applied"] = true
	}
	return reply, nil
}

// hookTimeout bounds a hook callback whose matcher names no timeout.
const hookTimeout = 60 * time.Second

// endedBeforeStart is the error of a run whose context ended while it waited for the first
// stdin line: the signal's *InterruptedError, else a run failure.
func endedBeforeStart(cause error) error {
	var ie *InterruptedError
	if errors.As(cause, &ie) {
		return ie
	}
	return fmt.Errorf("%w: %w", ErrRunFailed, cause)
}

// sdkParent adds the SDK host's parts to the parent's runtime configuration: the model
// set_model switches, the host's Stop callbacks after the settings' Stop hooks, and the
// stream_event lines of --include-partial-messages.
func (s *session) sdkParent(cfg agents.RuntimeConfig) agents.RuntimeConfig {
	st := s.sdk
	if st.model != nil {
		cfg.Model = st.model
	}
	if st.hasHooks(hookStop) {
		cfg.StopHook = s.withStopCallbacks(cfg.StopHook)
	}
	if st.opts.IncludePartialMessages {
		name := s.opts.ModelName
		if st.model != nil {
			name = ""
		}
		st.partial = newPartialStream(s.emit, func() string {
			if name != "" {
				return name
			}
			return st.model.Name()
		})
		cfg.OnModelEvent = st.partial.event
	}
	return cfg
}
