package agents

import (
	"errors"
	"fmt"

	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/store"
)

// revive rebuilds the runtime from the task's transcript.
func (c *controller) revive() (*runtime.Runtime, *store.Transcript, error) {
	c.mu.Lock()
	path := c.row.Transcript
	c.mu.Unlock()
	st := c.env.cfg.Store
	if path == "" || st == nil {
		return nil, nil, fmt.Errorf("%w: task has no transcript to revive from", ErrNotContinuable)
	}
	loaded, err := st.ReadTranscript(path)
	if errors.Is(err, store.ErrOutside) {
		return nil, nil, fmt.Errorf("%w: its transcript path leaves its session directory: %w", ErrNotContinuable, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("revive %s: %w", c.id, err)
	}
	for _, w := range loaded.Warnings {
		c.env.cfg.Logger.Warn("transcript damaged", "task_id", c.id, "warning", w)
	}
	if loaded.Meta.TaskID != "" && loaded.Meta.TaskID != string(c.id) {
		return nil, nil, fmt.Errorf("%w: transcript %s belongs to task %s", ErrNotContinuable, path, loaded.Meta.TaskID)
	}
	history, rep := store.Repair(loaded.Messages)
	if len(history) == 0 {
		return nil, nil, fmt.Errorf("%w: its transcript %s holds no history", ErrNotContinuable, path)
	}
	if rep.Damaged() {
		c.env.cfg.Logger.Warn("transcript repaired", "task_id", c.id, "repairs", rep.String())
	}
	tr, err := st.OpenTranscript(path, c.env.cfg.Now)
	if err != nil {
		return nil, nil, fmt.Errorf("revive %s: %w", c.id, err)
	}
	rt := c.newRuntime(tr, history, "")
	c.mu.Lock()
	c.rt, c.tr = rt, tr
	c.mu.Unlock()
	return rt, tr, nil
}
