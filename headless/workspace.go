package headless

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/mcp"
	"github.com/stoke-cli/stoke/agents/permission"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless/sdkhost"
	"github.com/stoke-cli/stoke/streamjson"
)

// definitions loads the subagent types: built-ins, then agent files (see docs/agents.md),
// then agents defined by an SDK host. The run's approval mode is a ceiling for all of
// them: a definition that names a higher mode runs under the run's, with one warning.
func (s *session) definitions() agents.Catalog {
	cat, warnings := agents.LoadDefinitions(agents.LoadOptions{
		ProjectDir: s.opts.CWD, UserStokeHome: s.opts.Home, Bare: s.opts.Bare, TrustProject: s.opts.TrustProject,
		ModelAliases: s.opts.ModelAliases, Provider: s.opts.Provider, ParentModel: s.opts.ModelName,
	})
	for _, w := range warnings {
		s.opts.Logger.Warn("agent definition", "warning", w)
	}
	for _, d := range s.hostAgents() {
		model, problem := sdkhost.ResolveModel(d.Model, s.opts.ModelAliases, s.opts.Provider)
		if problem != "" {
			s.opts.Logger.Warn("agent model: the parent's is used", "subagent_type", d.Name, "source", d.Source, "problem", problem)
		}
		d.Model = model
		cat[d.Name] = d
	}
	for _, name := range cat.Names() {
		d, raised := cat[name].CapMode(s.opts.ApprovalMode)
		if raised {
			s.opts.Logger.Warn("agent approval mode ignored: it is above the run's (--approval-mode is a ceiling)",
				"subagent_type", name, "approval_mode", cat[name].ApprovalMode, "run_mode", s.opts.ApprovalMode, "source", d.Source)
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
func (s *session) checkAgentPrices(cat agents.Catalog) error {
	if s.opts.SDK.MaxBudgetUSD <= 0 {
		return nil
	}
	for _, name := range cat.Names() {
		if d := cat[name]; d.Model != "" && !s.opts.Prices.Known(d.Model) {
			return fmt.Errorf("%w: --max-budget-usd needs a price for model %q of subagent type %q (%s): add it under prices: in settings.yaml (USD per million tokens, see docs/pricing.md)",
				ErrUsage, d.Model, name, d.Source)
		}
	}
	return nil
}

// newWorkspace is the workspace the parent's tools work in, under the run's approval mode
// (and, in an SDK session, the host's verdicts), the permission rules and the secrets
// policy. It returns the options a worktree's workspace is built with.
func (s *session) newWorkspace() (*tools.Workspace, []tools.Option, error) {
	mode, _ := s.workspaceApproval()
	opts := []tools.Option{tools.WithDenialHook(s.recordDenial), tools.WithSecrets(s.opts.Secrets)}
	if sb := s.opts.Sandbox; sb.Confines() {
		opts = append(opts, tools.WithSandbox(sb))
	}
	ws, err := tools.NewWorkspace(s.opts.CWD, mode, opts...)
	if err != nil {
		return nil, nil, err
	}
	s.rules = s.permissionRules(ws)
	return ws.With(s.approval(s.rules, "")...), opts, nil
}

// approval is what gates a tool set over a workspace: its deny rules and, when the host
// approves what the mode does not allow, the host's approver with those rules, under the
// ceiling when one is given.
func (s *session) approval(rules *permission.Rules, ceiling tools.Mode) []tools.Option {
	opts := []tools.Option{tools.WithDenier(rules)}
	if _, ok := s.workspaceApproval(); ok {
		opts = append(opts, tools.WithApprover(s.host.Approver(rules, ceiling)))
	}
	return opts
}

// permissionRules are --allowedTools and --disallowedTools over the workspace w.
func (s *session) permissionRules(w *tools.Workspace) *permission.Rules {
	return permission.New(w, s.opts.SDK.AllowedTools, s.opts.SDK.DisallowedTools)
}

// subagentTools gives each new subagent runtime its tools: the workspace tools its
// definition allows (none for tools: []), under its own approval mode when it sets one
// (CapMode has kept it at or below the run's), with its disallowedTools as deny rules,
// rooted in its worktree when it is isolated. Subagents never get the task tools.
//
// The set made for a type in the session's working directory, when it has no MCP tools,
// is kept and shared by that type's runtimes (a Set is immutable and its tools are
// stateless): a thousand agents of one type share one set of declarations.
func (s *session) subagentTools(ws *tools.Workspace, opts []tools.Option) func(agents.Definition, string) *tools.Set {
	_, approves := s.workspaceApproval()
	var mu sync.Mutex
	shared := map[string]*tools.Set{}
	return func(def agents.Definition, root string) *tools.Set {
		if root == "" {
			mu.Lock()
			set := shared[def.Name]
			mu.Unlock()
			if set != nil {
				return set
			}
		}
		w, rules := ws, s.rules
		if root != "" {
			wt, err := tools.NewWorkspace(root, ws.Mode(), opts...)
			if err != nil {
				s.opts.Logger.Warn("worktree workspace", "root", root, "err", err)
				return tools.NewSet()
			}
			w, rules = wt, s.permissionRules(wt)
		}
		rules = rules.WithDeny(def.DisallowedTools)
		var ceiling tools.Mode
		if def.ApprovalMode != "" {
			m, err := tools.ParseMode(string(def.ApprovalMode))
			if err != nil {
				s.opts.Logger.Warn("agent approval mode", "subagent_type", def.Name, "err", err)
				return tools.NewSet()
			}
			ceiling = m
			if !approves {
				w, _ = w.WithMode(m)
			}
		}
		// With an approving host the tools stay in the default mode and the approver
		// applies the lower of the live mode and the agent's own.
		w = w.With(s.approval(rules, ceiling)...)
		if def.Tools != nil && len(def.Tools) == 0 {
			return tools.NewSet() // tools: []
		}
		ts, unknown := w.Tools(def.Tools)
		mcpTools := s.mcpTools(def, w) // MCP tools (mcp.go)
		ts = append(ts, mcpTools...)
		unknown = slices.DeleteFunc(unknown, func(n string) bool { return strings.HasPrefix(n, mcp.Prefix) })
		if len(unknown) > 0 {
			s.opts.Logger.Warn("agent tools not available", "subagent_type", def.Name, "tools", unknown)
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
			mu.Lock()
			shared[def.Name] = set
			mu.Unlock()
		}
		return set
	}
}

// recordDenial keeps a refused tool call for the result's permission_denials.
func (s *session) recordDenial(d tools.Denial) {
	s.mu.Lock()
	defer s.mu.Unlock()
	input := json.RawMessage(d.Call.Input)
	if !json.Valid(input) || !gjson.ParseBytes(input).IsObject() {
		input = json.RawMessage(`{}`)
	}
	s.denials = append(s.denials, streamjson.PermissionDenial{ToolName: d.Call.Name, ToolUseID: d.Call.ID, ToolInput: input})
}

// hookRunner runs the command hooks of settings and agent definitions in the workspace.
func (s *session) hookRunner() *hooks.Runner {
	return &hooks.Runner{Dir: s.opts.CWD, Logger: s.opts.Logger, Secrets: s.opts.Secrets}
}

// workspaceState is what, when it changes between parent turns, releases resident
// runtimes: the working directory and the checked-out git ref.
type workspaceState struct{ cwd, head string }

func (s *session) workspaceState() workspaceState {
	return workspaceState{cwd: s.opts.CWD, head: agents.GitHead(s.opts.CWD)}
}

// checkWorkspace releases resident runtimes when the workspace changed since the last
// parent turn (e.g. a shell tool ran git checkout): their rows stay completed and a later
// send_message revives them on the new workspace.
func (s *session) checkWorkspace() {
	now := s.workspaceState()
	if s.lastWorkspace != nil && *s.lastWorkspace != now {
		if n := s.reg.ReleaseResidents(); n > 0 {
			s.opts.Logger.Info("workspace changed: released resident agents", "count", n, "head", now.head)
		}
	}
	s.lastWorkspace = &now
}

// parentStopHook runs the settings' Stop hooks when the parent is about to stop; a hook
// that blocks makes it go on with the hook's reason as the next instruction.
func (s *session) parentStopHook() func(context.Context, string, bool) string {
	hs := s.opts.Hooks.For(hooks.Stop, "")
	if len(hs) == 0 {
		return nil
	}
	runner := s.hookRunner()
	return func(ctx context.Context, final string, active bool) string {
		out, err := runner.Run(ctx, hooks.Stop, hs, hooks.Input{
			SessionID: s.id, CWD: s.opts.CWD, LastMessage: final, StopHookActive: active,
		})
		if err != nil {
			s.opts.Logger.Warn("stop hook", "err", err)
		}
		for _, f := range out.Failures {
			s.opts.Logger.Warn("hook failed", "event", hooks.Stop, "failure", f)
		}
		if out.Block {
			return out.Reason
		}
		return ""
	}
}
