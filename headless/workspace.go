package headless

import (
	"context"
	"slices"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/tools"
)

// definitions loads the subagent types: built-ins, then agent files (see docs/agents.md),
// then agents defined by an SDK host. Each definition learns whether it raises the approval
// mode above the parent's (such agents are never kept resident).
func (s *session) definitions() agents.Catalog {
	cat, warnings := agents.LoadDefinitions(agents.LoadOptions{ProjectDir: s.opts.CWD, UserStokeHome: s.opts.Home, Bare: s.opts.Bare})
	for _, w := range warnings {
		s.opts.Logger.Warn("agent definition skipped", "warning", w)
	}
	for _, d := range s.hostAgents() {
		cat[d.Name] = d
	}
	for name, d := range cat {
		cat[name] = d.WithParentMode(s.opts.ApprovalMode)
	}
	return cat
}

// newWorkspace is the workspace the parent's tools work in, under the run's approval mode
// (and, in an SDK session, the host's verdicts).
func (s *session) newWorkspace() (*tools.Workspace, []tools.Option, error) {
	mode, approver := s.workspaceApproval()
	opts := []tools.Option{tools.WithDenialHook(s.recordDenial)}
	if approver != nil {
		opts = append(opts, tools.WithApprover(approver))
	}
	ws, err := tools.NewWorkspace(s.opts.CWD, mode, opts...)
	return ws, opts, err
}

// subagentTools gives each new subagent runtime its tools: the workspace tools its
// definition allows, under its own approval mode when it sets one, rooted in its worktree
// when it is isolated. Subagents never get the task tools.
func (s *session) subagentTools(ws *tools.Workspace, opts []tools.Option) func(agents.Definition, string) *tools.Set {
	return func(def agents.Definition, root string) *tools.Set {
		w := ws
		if root != "" {
			wt, err := tools.NewWorkspace(root, ws.Mode(), opts...)
			if err != nil {
				s.opts.Logger.Warn("worktree workspace", "root", root, "err", err)
				return tools.NewSet()
			}
			w = wt
		}
		if def.ApprovalMode != "" {
			m, err := tools.ParseMode(def.ApprovalMode)
			if err == nil {
				w, err = w.WithMode(m)
			}
			if err != nil {
				s.opts.Logger.Warn("agent approval mode", "subagent_type", def.Name, "err", err)
				return tools.NewSet()
			}
		}
		ts, unknown := w.Tools(def.Tools)
		if len(unknown) > 0 {
			s.opts.Logger.Warn("agent tools not available", "subagent_type", def.Name, "tools", unknown)
		}
		allowed := ts[:0]
		for _, t := range ts {
			if !slices.ContainsFunc(def.DisallowedTools, func(n string) bool {
				c, _ := tools.CanonicalName(n)
				return c == t.Spec().Name || n == t.Spec().Name
			}) {
				allowed = append(allowed, t)
			}
		}
		return tools.NewSet(allowed...)
	}
}

// recordDenial keeps a refused tool call for the result's permission_denials.
func (s *session) recordDenial(d tools.Denial) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denials = append(s.denials, map[string]any{
		"tool_name": d.Call.Name, "tool_use_id": d.Call.ID, "tool_input": d.Call.Input,
	})
}

// hookRunner runs the command hooks of settings and agent definitions in the workspace.
func (s *session) hookRunner() *hooks.Runner {
	return &hooks.Runner{Dir: s.opts.CWD, Logger: s.opts.Logger}
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
