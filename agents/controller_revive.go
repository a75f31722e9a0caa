package agents

import (
	"errors"
	"fmt"
	"os"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/store"
)

// revive rebuilds the runtime from the task's transcript. fresh is a launch whose first
// turn never ran (it was queued when a run ended): it has no history to rebuild, and
// starts on the transcript its launch opened, with the meta record written now if the
// launch did not get to write it.
func (c *controller) revive(fresh bool) (*runtime.Runtime, *store.Transcript, error) {
	c.mu.Lock()
	path := c.row.Transcript
	c.mu.Unlock()
	st := c.env.cfg.Store
	if path == "" || st == nil {
		if fresh {
			return c.adopt(nil, nil), nil, nil
		}
		return nil, nil, fmt.Errorf("%w: task has no transcript to revive from", ErrNotContinuable)
	}
	loaded, err := st.ReadTranscript(path)
	switch {
	case errors.Is(err, store.ErrOutside):
		return nil, nil, fmt.Errorf("%w: its transcript path leaves its session directory: %w", ErrNotContinuable, err)
	case fresh && errors.Is(err, os.ErrNotExist):
		loaded = &store.Loaded{}
	case err != nil:
		return nil, nil, fmt.Errorf("revive %s: %w", c.id, err)
	}
	for _, w := range loaded.Warnings {
		c.env.cfg.Logger.Warn("transcript damaged", "task_id", c.id, "warning", w)
	}
	if loaded.Meta.TaskID != "" && loaded.Meta.TaskID != string(c.id) {
		return nil, nil, fmt.Errorf("%w: transcript %s belongs to task %s", ErrNotContinuable, path, loaded.Meta.TaskID)
	}
	history, rep := store.Repair(loaded.Messages)
	if len(history) == 0 && !fresh {
		return nil, nil, fmt.Errorf("%w: its transcript %s holds no history", ErrNotContinuable, path)
	}
	if rep.Damaged() {
		c.env.cfg.Logger.Warn("transcript repaired", "task_id", c.id, "repairs", rep.String())
	}
	tr, err := st.OpenTranscript(path, c.env.cfg.Now)
	if err != nil {
		return nil, nil, fmt.Errorf("revive %s: %w", c.id, err)
	}
	if loaded.Meta.TaskID == "" && fresh {
		if err := tr.Write(store.Record{Type: store.RecordMeta, TaskID: string(c.id), SubagentType: c.def.Name, System: c.def.SystemPrompt()}); err != nil {
			closeTranscript(tr)
			return nil, nil, fmt.Errorf("revive %s: %w", c.id, err)
		}
	}
	return c.adopt(tr, history), tr, nil
}

// adopt makes the runtime of the task's next turn on tr and history, and keeps it, with
// what the working directory has checked out now.
func (c *controller) adopt(tr *store.Transcript, history []llm.Message) *runtime.Runtime {
	head := c.env.head()
	rt := c.newRuntime(tr, history, "")
	c.mu.Lock()
	c.rt, c.tr, c.head = rt, tr, head
	c.mu.Unlock()
	return rt
}
