package agents

import (
	"context"
	"log/slog"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/streamjson"
)

// TurnInfo says which turn of which task a lifecycle call is about.
type TurnInfo struct {
	TaskID TaskID
	// Definition is the task's subagent type.
	Definition   catalog.Definition
	Turn         int
	Continuation streamjson.Continuation // fresh, resident or revived
	Background   bool
	// ToolUseID is the task or send_message call that started the turn.
	ToolUseID string
	// Transcript is the task's transcript ("" when nothing is stored).
	Transcript string
}

// Lifecycle is told about the turns of a registry's subagents. It is the one source of
// the subagent lifecycle for everything that reacts to it: the command hooks of settings
// and agent files (CommandHooks), an SDK host's callbacks, the run loop.
//
// For one turn the calls come in this order, on the goroutine running the turn:
// TurnStarted, then TurnStopping each time the agent would stop, then TurnSettled. Calls
// for different tasks come concurrently, so implementations must be safe for concurrent
// use. A call holds up its turn while it runs (never the registry).
type Lifecycle interface {
	// TurnStarted is called as a turn starts, before task_started and the first model
	// call. ctx is the turn's.
	TurnStarted(ctx context.Context, t TurnInfo)
	// TurnStopping is asked when the agent answered without tool calls and would end the
	// turn: a non-empty answer is given to the agent as its next instruction and the turn
	// goes on. active tells whether an answer already made this turn go on.
	TurnStopping(ctx context.Context, t TurnInfo, final string, active bool) (goOn string)
	// TurnSettled is called once the turn's outcome is recorded and its notification
	// delivered, before anyone waiting for the turn (Collect, Wait) returns. row is the
	// row as the turn left it.
	TurnSettled(t TurnInfo, row Row)
}

// NopLifecycle does nothing; embed it to implement only some of Lifecycle.
type NopLifecycle struct{}

func (NopLifecycle) TurnStarted(context.Context, TurnInfo)                       {}
func (NopLifecycle) TurnStopping(context.Context, TurnInfo, string, bool) string { return "" }
func (NopLifecycle) TurnSettled(TurnInfo, Row)                                   {}

// Lifecycles returns a Lifecycle that calls each of ls in order (nil ones skipped). The
// first non-empty TurnStopping answer wins; the later ones are not asked.
func Lifecycles(ls ...Lifecycle) Lifecycle {
	var out lifecycles
	for _, l := range ls {
		if l != nil {
			out = append(out, l)
		}
	}
	return out
}

type lifecycles []Lifecycle

func (ls lifecycles) TurnStarted(ctx context.Context, t TurnInfo) {
	for _, l := range ls {
		l.TurnStarted(ctx, t)
	}
}

func (ls lifecycles) TurnStopping(ctx context.Context, t TurnInfo, final string, active bool) string {
	for _, l := range ls {
		if goOn := l.TurnStopping(ctx, t, final, active); goOn != "" {
			return goOn
		}
	}
	return ""
}

func (ls lifecycles) TurnSettled(t TurnInfo, row Row) {
	for _, l := range ls {
		l.TurnSettled(t, row)
	}
}

// CommandHooks runs command hooks at subagent turns: the SubagentStart hooks as a turn
// starts, the SubagentStop hooks when the agent would stop (a hook that blocks makes it go
// on). The hooks are those of Config (settings) and of the task's definition. Failures
// are logged, never fatal.
type CommandHooks struct {
	NopLifecycle
	SessionID string
	CWD       string
	Config    hooks.Config
	// Runner runs the hooks; nil runs none.
	Runner *hooks.Runner
	Logger *slog.Logger
}

func (h CommandHooks) TurnStarted(ctx context.Context, t TurnInfo) {
	h.run(ctx, hooks.SubagentStart, t, h.input(t))
}

func (h CommandHooks) TurnStopping(ctx context.Context, t TurnInfo, final string, active bool) string {
	in := h.input(t)
	in.LastMessage, in.StopHookActive = final, active
	if out := h.run(ctx, hooks.SubagentStop, t, in); out.Block {
		return out.Reason
	}
	return ""
}

func (h CommandHooks) input(t TurnInfo) hooks.Input {
	return hooks.Input{SessionID: h.SessionID, CWD: h.CWD, TaskID: string(t.TaskID),
		SubagentType: t.Definition.Name, Turn: t.Turn, TranscriptPath: t.Transcript, Continuation: string(t.Continuation)}
}

func (h CommandHooks) run(ctx context.Context, ev hooks.Event, t TurnInfo, in hooks.Input) hooks.Outcome {
	def := t.Definition
	hs := append(h.Config.For(ev, def.Name), def.Hooks.For(ev, def.Name)...)
	if len(hs) == 0 || h.Runner == nil {
		return hooks.Outcome{}
	}
	out, err := h.Runner.Run(ctx, ev, hs, in)
	logger := h.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err != nil {
		logger.Warn("hooks", "event", ev, "task_id", in.TaskID, "err", err)
	}
	for _, f := range out.Failures {
		logger.Warn("hook failed", "event", ev, "task_id", in.TaskID, "failure", f)
	}
	return out
}
