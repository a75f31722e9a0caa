package headless

import (
	"context"
	"fmt"
	"time"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm"
)

// The command hooks of a session that are not about subagents (those run in the
// registry's lifecycle, agents.CommandHooks): the tool events around every agent's tool
// calls, UserPromptSubmit before each user prompt, SessionStart and SessionEnd around the
// session, the parent's Stop (parentStopHook, workspace.go). They come from the settings
// (Options.Hooks, trusted scope only) and, for an agent's own tool calls, from its
// definition.

// sessionEndTimeout bounds the SessionEnd hooks, which run after the run's context may
// have ended.
const sessionEndTimeout = 30 * time.Second

// toolHooks are the PreToolUse and PostToolUse hooks of an agent's tool calls: the
// settings', then, for a subagent (def not nil), its definition's.
func toolHooks(o Options, sessionID string, def *catalog.Definition) hooks.ToolHooks {
	cfg := o.Hooks
	in := hooks.Input{SessionID: sessionID, CWD: o.CWD, PermissionMode: o.knownApprovalMode().PermissionMode()}
	if def != nil {
		cfg = cfg.Merge(def.Hooks)
		in.SubagentType = def.Name
	}
	return hooks.ToolHooks{Config: cfg, Runner: hookRunner(o), Input: in, Logger: o.Logger}
}

// runHooks runs the settings' hooks of ev (ignoring matchers: these events have no
// target) with in, and logs their failures.
func runHooks(ctx context.Context, o Options, ev hooks.Event, in hooks.Input) hooks.Outcome {
	hs := o.Hooks.For(ev, "")
	if len(hs) == 0 {
		return hooks.Outcome{}
	}
	out, err := hookRunner(o).Run(ctx, ev, hs, in)
	if err != nil {
		o.Logger.Warn("hooks", "event", ev, "err", err)
	}
	for _, f := range out.Failures {
		o.Logger.Warn("hook failed", "event", ev, "failure", f)
	}
	return out
}

// hookInput is the input of the session's own hooks.
func (p *Parts) hookInput() hooks.Input {
	in := hooks.Input{SessionID: p.id, CWD: p.opts.CWD, PermissionMode: p.opts.knownApprovalMode().PermissionMode()}
	if sess := p.opened.sess; sess != nil {
		in.TranscriptPath = sess.ParentTranscript()
	}
	return in
}

// sessionStart runs the SessionStart hooks as the session starts (source startup, or
// resume for --resume and --continue): what they give as context comes with the first
// prompt.
func (p *Parts) sessionStart(ctx context.Context) []llm.Block {
	in := p.hookInput()
	in.Source = "startup"
	if p.opts.Resume != "" || p.opts.Continue {
		in.Source = "resume"
	}
	out := runHooks(ctx, p.opts, hooks.SessionStart, in)
	if out.AdditionalContext == "" {
		return nil
	}
	return []llm.Block{llm.TextBlock(fmt.Sprintf("<session-start-hook>%s</session-start-hook>", out.AdditionalContext))}
}

// sessionEnd runs the SessionEnd hooks once the session is over.
func (p *Parts) sessionEnd(ctx context.Context) {
	if len(p.opts.Hooks[hooks.SessionEnd]) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sessionEndTimeout)
	defer cancel()
	in := p.hookInput()
	in.Reason = "other"
	runHooks(ctx, p.opts, hooks.SessionEnd, in)
}

// submitPrompt runs the UserPromptSubmit hooks before a user prompt reaches the parent: a
// hook that blocks refuses it (an error wrapping errPromptBlocked, with the hook's
// reason); what they give as context is added to the prompt.
func (s *session) submitPrompt(ctx context.Context, msg llm.Message) (llm.Message, error) {
	in := s.hookInput()
	in.Prompt = msg.Text()
	out := runHooks(ctx, s.opts, hooks.UserPromptSubmit, in)
	if out.Block {
		s.opts.Logger.Warn("user prompt blocked by a UserPromptSubmit hook", "reason", out.Reason)
		return msg, fmt.Errorf("%w: %s", errPromptBlocked, out.Reason)
	}
	if out.AdditionalContext != "" {
		msg.Content = append(msg.Content, llm.TextBlock(fmt.Sprintf("<user-prompt-submit-hook>%s</user-prompt-submit-hook>", out.AdditionalContext)))
	}
	return msg, nil
}
