package agents

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/worktree"
)

// newWorktree makes the temporary git worktree the first turn of an isolated type runs in.
func (c *controller) newWorktree(ctx context.Context) (*worktree.Worktree, error) {
	var dir string
	var err error
	if st := c.env.cfg.Store; st != nil {
		dir, err = st.WorktreeDir()
	} else {
		dir, err = store.TempWorktreeDir()
	}
	if err != nil {
		return nil, err
	}
	return worktree.New(ctx, c.env.cfg.CWD, dir, string(c.id), 1)
}

// finalizeWorktree ends the isolated worktree of the turn that just ran, if it had one,
// and says what became of it, with its path when it was kept (it held changes, or it
// could not be finalized: it is still on disk).
func (c *controller) finalizeWorktree() (note, kept string) {
	c.mu.Lock()
	wt := c.wt
	c.wt = nil
	c.mu.Unlock()
	if wt == nil {
		return "", ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	note, err := wt.Finalize(ctx)
	if err != nil {
		c.env.cfg.Logger.Warn("finalize worktree", "task_id", c.id, "path", wt.Path, "err", err)
		return fmt.Sprintf("The worktree at %s could not be finalized: %v", wt.Path, err), wt.Path
	}
	if _, err := os.Stat(wt.Path); err == nil {
		return note, wt.Path
	}
	return note, ""
}
