package headless

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/mcp"
	"github.com/stoke-cli/stoke/agents/permission"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless/sdkhost"
	"github.com/stoke-cli/stoke/streamjson"
)

// loadCatalog loads the subagent types: built-ins, then agent files (see
// docs/agents.md), then the agents an SDK host defined. The run's approval mode is a
// ceiling for all of them: a definition that names a higher mode runs under the run's,
// with one warning.
func loadCatalog(o Options, hostAgents []catalog.Definition) catalog.Catalog {
	cat, warnings := catalog.LoadDefinitions(catalog.LoadOptions{
		ProjectDir: o.CWD, UserStokeHome: o.Home, Bare: o.Bare, TrustProject: o.TrustProject,
		ModelAliases: o.ModelAliases, Provider: o.Provider, ParentModel: o.ModelName,
	})
	for _, w := range warnings {
		o.Logger.Warn("agent definition", "warning", w)
	}
	for _, d := range hostAgents {
		model, problem := sdkhost.ResolveModel(d.Model, o.ModelAliases, o.Provider)
		if problem != "" {
			o.Logger.Warn("agent model: the parent's is used", "subagent_type", d.Name, "source", d.Source, "problem", problem)
		}
		d.Model = model
		cat[d.Name] = d
	}
	for _, name := range cat.Names() {
		d, raised := cat[name].CapMode(o.ApprovalMode)
		if raised {
			o.Logger.Warn("agent approval mode ignored: it is above the run's (--approval-mode is a ceiling)",
				"subagent_type", name, "approval_mode", cat[name].ApprovalMode, "run_mode", o.ApprovalMode, "source", d.Source)
		}
		cat[name] = d
	}
	return cat
}

// checkAgentPrices keeps --max-budget-usd honest for subagents: a subagent type on a
// model the price table does not know would cost 0 and run past the budget unseen, so
// with a budget the run is refused (ErrUsage), naming the model, the type, its source
// and the prices: setting, as the CLI refuses an unknown parent model. A type without a
// model of its own runs on the parent's, which the CLI has checked.
func checkAgentPrices(o Options, cat catalog.Catalog) error {
	if o.SDK.MaxBudgetUSD <= 0 {
		return nil
	}
	for _, name := range cat.Names() {
		if d := cat[name]; d.Model != "" && !o.Prices.Known(d.Model) {
			return fmt.Errorf("%w: --max-budget-usd needs a price for model %q of subagent type %q (%s): add it under prices: in settings.yaml (USD per million tokens, see docs/pricing.md)",
				ErrUsage, d.Model, name, d.Source)
		}
	}
	return nil
}

// workspace is the workspace the run's tools work in, under the run's approval mode
// (and, in an SDK session, the host's verdicts), the permission rules and the secrets
// policy; and the tool calls it refused, for the result's permission_denials.
type workspace struct {
	opts Options
	host host // nil for a plain run
	ws   *tools.Workspace
	// wtOpts are the options a worktree's workspace is built with.
	wtOpts []tools.Option
	// rules are --allowedTools and --disallowedTools over ws.
	rules *permission.Rules

	// shared are the tool sets of the subagent types, made in the session's working
	// directory without MCP tools (subagentTools).
	mu      sync.Mutex
	shared  map[string]*tools.Set
	denials []streamjson.PermissionDenial
}

// newWorkspace makes the parent's workspace.
func newWorkspace(o Options, h host) (*workspace, error) {
	w := &workspace{opts: o, host: h, shared: map[string]*tools.Set{}}
	mode, _ := w.approvalMode()
	w.wtOpts = []tools.Option{tools.WithDenialHook(w.recordDenial), tools.WithSecrets(o.Secrets)}
	wsOpts := w.wtOpts
	if o.Files != nil {
		wsOpts = append(slices.Clip(wsOpts), tools.WithFiles(o.Files)) // not a worktree's
	}
	if o.Terminal != nil {
		wsOpts = append(slices.Clip(wsOpts), tools.WithTerminal(o.Terminal))
	}
	ws, err := tools.NewWorkspace(o.CWD, mode, wsOpts...)
	if err != nil {
		return nil, err
	}
	w.rules = w.permissionRules(ws)
	w.ws = ws.With(w.approval(w.rules, "")...)
	return w, nil
}

// Approvals decides for an entry point the tool calls the approval mode does not allow by
// itself, in place of refusing them (the ACP client's session/request_permission). The
// workspace tools are then built in the default mode, and the approvers apply the mode
// in force (they report it as tools' modeReporter does) and ask whoever decides.
type Approvals interface {
	// Approver returns the approver of a tool set: rules are the permission rules over
	// its workspace (the run's, plus an agent's disallowedTools); ceiling, when set, caps
	// the mode it applies (a subagent's own). Called while the session is assembled and
	// as subagents start; the approver is then called as tools.Approver says.
	Approver(rules *permission.Rules, ceiling tools.Mode) tools.Approver
}

// approvalMode returns the approval mode the workspace tools are built with, and whether
// the host (or the entry point's Approvals) approves what that mode does not allow;
// without either, the configured mode as it is.
func (w *workspace) approvalMode() (tools.Mode, bool) {
	switch {
	case w.host != nil:
		return w.host.Approval()
	case w.opts.Approvals != nil:
		return tools.ModeDefault, true
	}
	return w.opts.knownApprovalMode(), false
}

// approval is what gates a tool set over a workspace: its deny rules and, when the host
// (or the entry point's Approvals) approves what the mode does not allow, its approver
// with those rules, under the ceiling when one is given.
func (w *workspace) approval(rules *permission.Rules, ceiling tools.Mode) []tools.Option {
	opts := []tools.Option{tools.WithDenier(rules)}
	if _, ok := w.approvalMode(); ok {
		var a tools.Approver
		if w.host != nil {
			a = w.host.Approver(rules, ceiling)
		} else {
			a = w.opts.Approvals.Approver(rules, ceiling)
		}
		opts = append(opts, tools.WithApprover(a))
	}
	return opts
}

// permissionRules are --allowedTools and --disallowedTools over the workspace ws.
func (w *workspace) permissionRules(ws *tools.Workspace) *permission.Rules {
	return permission.New(ws, w.opts.SDK.AllowedTools, w.opts.SDK.DisallowedTools)
}

// subagentTools gives a new subagent runtime its tools: the workspace tools its
// definition allows (none for tools: []), under its own approval mode when it sets one
// (CapMode has kept it at or below the run's), with its disallowedTools as deny rules,
// rooted in its worktree when it is isolated, and the MCP tools it may use (mcp.go).
// Subagents never get the task tools.
//
// The set made for a type in the session's working directory, when it has no MCP tools,
// is kept and shared by that type's runtimes (a Set is immutable and its tools are
// stateless): a thousand agents of one type share one set of declarations.
func (w *workspace) subagentTools(def catalog.Definition, root string, servers *mcpState) *tools.Set {
	if root == "" {
		w.mu.Lock()
		set := w.shared[def.Name]
		w.mu.Unlock()
		if set != nil {
			return set
		}
	}
	ws, ok := w.agentWorkspace(def, root)
	if !ok {
		return tools.NewSet()
	}
	if def.Tools != nil && len(def.Tools) == 0 {
		return tools.NewSet() // tools: []
	}
	ts, unknown := ws.Tools(def.Tools)
	mcpTools := servers.tools(def, ws)
	ts = append(ts, mcpTools...)
	unknown = slices.DeleteFunc(unknown, func(n string) bool { return strings.HasPrefix(n, mcp.Prefix) })
	if len(unknown) > 0 {
		w.opts.Logger.Warn("agent tools not available", "subagent_type", def.Name, "tools", unknown)
	}
	taken := map[string]bool{} // the tools a bare disallowedTools name takes away
	for _, r := range def.DisallowedTools {
		if rule := permission.ParseRule(r); rule.Whole() {
			taken[rule.Tool] = true
		}
	}
	ts = slices.DeleteFunc(ts, func(t tools.Tool) bool { return taken[t.Spec().Name] })
	set := tools.NewSet(ts...)
	if root == "" && len(mcpTools) == 0 {
		w.mu.Lock()
		w.shared[def.Name] = set
		w.mu.Unlock()
	}
	return set
}

// agentWorkspace is the workspace of an agent of type def: rooted in root (its worktree)
// when given, under the agent's own approval mode when it sets one, gated by the run's
// rules and the agent's disallowedTools. With an approving host the tools stay in the
// default mode and the approver applies the lower of the live mode and the agent's own.
// False (after a warning) when it cannot be made: the agent then gets no tools.
func (w *workspace) agentWorkspace(def catalog.Definition, root string) (*tools.Workspace, bool) {
	_, approves := w.approvalMode()
	ws, rules := w.ws, w.rules
	if root != "" {
		wt, err := tools.NewWorkspace(root, w.ws.Mode(), w.wtOpts...)
		if err != nil {
			w.opts.Logger.Warn("worktree workspace", "root", root, "err", err)
			return nil, false
		}
		ws, rules = wt, w.permissionRules(wt)
	}
	rules = rules.WithDeny(def.DisallowedTools)
	var ceiling tools.Mode
	if def.ApprovalMode != "" {
		m, err := tools.ParseMode(string(def.ApprovalMode))
		if err != nil {
			w.opts.Logger.Warn("agent approval mode", "subagent_type", def.Name, "err", err)
			return nil, false
		}
		ceiling = m
		if !approves {
			ws, _ = ws.WithMode(m)
		}
	}
	return ws.With(w.approval(rules, ceiling)...), true
}

// recordDenial keeps a refused tool call for the result's permission_denials.
func (w *workspace) recordDenial(d tools.Denial) {
	w.mu.Lock()
	defer w.mu.Unlock()
	input := json.RawMessage(d.Call.Input)
	if !json.Valid(input) || !gjson.ParseBytes(input).IsObject() {
		input = json.RawMessage(`{}`)
	}
	w.denials = append(w.denials, streamjson.PermissionDenial{ToolName: d.Call.Name, ToolUseID: d.Call.ID, ToolInput: input})
}

// refused returns the tool calls refused so far (nil when none).
func (w *workspace) refused() []streamjson.PermissionDenial {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.denials) == 0 {
		return nil
	}
	return append([]streamjson.PermissionDenial(nil), w.denials...)
}

// hookRunner runs the command hooks of settings and agent definitions in the workspace.
func hookRunner(o Options) *hooks.Runner {
	return &hooks.Runner{Dir: o.CWD, Logger: o.Logger, Secrets: o.Secrets}
}

// checkWorkspace releases resident runtimes made before a branch switch (e.g. a shell
// tool ran git checkout): their rows stay completed and a later send_message revives
// them on the new branch. The registry makes the same check before each continuation;
// this, at each parent turn, frees the others early.
func (s *session) checkWorkspace() { s.reg.CheckWorkspace() }

// parentStopHook runs the settings' Stop hooks when the parent is about to stop; a hook
// that blocks makes it go on with the hook's reason as the next instruction.
func parentStopHook(o Options, sessionID string) func(context.Context, string, bool) string {
	hs := o.Hooks.For(hooks.Stop, "")
	if len(hs) == 0 {
		return nil
	}
	runner := hookRunner(o)
	return func(ctx context.Context, final string, active bool) string {
		out, err := runner.Run(ctx, hooks.Stop, hs, hooks.Input{
			SessionID: sessionID, CWD: o.CWD, LastMessage: final, StopHookActive: active,
		})
		if err != nil {
			o.Logger.Warn("stop hook", "err", err)
		}
		for _, f := range out.Failures {
			o.Logger.Warn("hook failed", "event", hooks.Stop, "failure", f)
		}
		if out.Block {
			return out.Reason
		}
		return ""
	}
}
