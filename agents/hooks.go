package agents

import (
	"context"

	"github.com/stoke-cli/stoke/agents/hooks"
)

// taskEnv is what the controllers of one registry share. NewRegistry sets it and nothing
// changes it afterwards; its funcs are safe for concurrent use.
type taskEnv struct {
	cfg *RegistryConfig
	// settled is called by a turn's goroutine once the turn's outcome is recorded and its
	// notification delivered (the registry prunes its settled rows).
	settled func()
}

// hookInputLocked is the common part of a hook's input for the current turn. Call with
// c.mu held.
func (c *controller) hookInputLocked() hooks.Input {
	in := hooks.Input{SessionID: c.env.cfg.SessionID, CWD: c.env.cfg.CWD, TaskID: string(c.id),
		SubagentType: c.row.SubagentType, Turn: c.row.Turn, TranscriptPath: c.row.Transcript}
	if c.cur != nil {
		in.Continuation = c.cur.continuation
	}
	return in
}

// runHooks runs the settings' and the definition's hooks for ev. Failures are logged, never
// fatal.
func (e *taskEnv) runHooks(ctx context.Context, ev hooks.Event, def Definition, in hooks.Input) hooks.Outcome {
	cfg := e.cfg
	hs := append(cfg.Hooks.For(ev, def.Name), def.Hooks.For(ev, def.Name)...)
	if len(hs) == 0 || cfg.HookRunner == nil {
		return hooks.Outcome{}
	}
	out, err := cfg.HookRunner.Run(ctx, ev, hs, in)
	if err != nil {
		cfg.Logger.Warn("hooks", "event", ev, "task_id", in.TaskID, "err", err)
	}
	for _, f := range out.Failures {
		cfg.Logger.Warn("hook failed", "event", ev, "task_id", in.TaskID, "failure", f)
	}
	return out
}
