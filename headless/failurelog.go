package headless

import (
	"log/slog"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/secrets"
)

// failureLog says on stderr that a subagent's turn failed. Only the parent model hears of
// it otherwise (in its tool result or notification), and a run whose parent carries on
// exits 0: someone reading a CI log would never learn that an agent's model answered
// 404.
type failureLog struct {
	agents.NopLifecycle
	logger  *slog.Logger
	secrets *secrets.Policy
}

// TurnSettled implements agents.Lifecycle.
func (f failureLog) TurnSettled(t agents.TurnInfo, row agents.Row) {
	if row.Status != agents.StatusFailed || f.logger == nil {
		return
	}
	f.logger.Warn("agent turn failed", "task_id", string(t.TaskID), "subagent_type", t.Definition.Name,
		"turn", t.Turn, "err", f.secrets.Redact(row.LastOutcome.Error))
}
