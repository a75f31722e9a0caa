package agents

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/stoke-cli/stoke/agents/store"
)

// RosterOptions say which session a roster is loaded for.
type RosterOptions struct {
	SessionID string
	CWD       string
	// MaxCompleted keeps only the newest completed rows (0: no limit).
	MaxCompleted int
}

// LoadRoster reads the sidecars of session sess and returns the rows a resume restores:
// running and queued rows (they come back paused) and completed rows that were launched in the
// background, newest first up to MaxCompleted. Sidecars of another session, of foreground
// launches, failed or cancelled tasks are left out; corrupt ones are skipped with a
// warning. A row whose transcript is missing or belongs to another task, that was
// worktree-isolated, or whose cwd differs from the session's, comes back with a
// BlockedReason: listed, but not continuable.
func LoadRoster(sess *store.Session, o RosterOptions) (rows []Row, warnings []string, err error) {
	names, err := sess.SidecarNames()
	if err != nil {
		return nil, nil, err
	}
	var running, completed []Row
	for _, name := range names {
		s, err := ReadSidecar(sess, name)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("skipping the sidecar of %s: %v", name, err))
			continue
		}
		if s.ParentSessionID != o.SessionID {
			warnings = append(warnings, fmt.Sprintf("skipping the sidecar of %s: it belongs to session %q", name, s.ParentSessionID))
			continue
		}
		row := s.Row
		row.BlockedReason = blockedReason(s, o)
		switch {
		case s.Status.Active() || s.Status == StatusPaused:
			running = append(running, row)
		case s.Status == StatusCompleted && s.Backgrounded:
			completed = append(completed, row)
		}
	}
	sort.Slice(completed, func(i, j int) bool { return completed[i].EndedAt.After(completed[j].EndedAt) })
	if o.MaxCompleted > 0 && len(completed) > o.MaxCompleted {
		completed = completed[:o.MaxCompleted]
	}
	rows = append(running, completed...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].CreatedAt.Before(rows[j].CreatedAt) })
	return rows, warnings, nil
}

func blockedReason(s Sidecar, o RosterOptions) string {
	switch {
	case s.Isolation == "worktree":
		return "it ran in a temporary git worktree that no longer exists"
	case o.CWD != "" && s.CWD != "" && filepath.Clean(s.CWD) != filepath.Clean(o.CWD):
		return fmt.Sprintf("it ran in %s, not in this session's working directory %s", s.CWD, o.CWD)
	case s.Transcript == "":
		return "it has no transcript"
	}
	owner, err := store.TranscriptOwner(s.Transcript)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "its transcript is missing"
	case err != nil:
		return fmt.Sprintf("its transcript cannot be read: %v", err)
	case owner != string(s.TaskID):
		return fmt.Sprintf("its transcript belongs to task %q", owner)
	}
	return ""
}

// Restore adds the rows of a stored session to an empty or live registry. Completed rows
// come back completed and already notified; running rows come back paused. Restored rows
// have no resident runtime: their next turn is revived from the transcript. Restore is
// all-or-nothing: on error no row was added. Safe for concurrent use.
func (r *Registry) Restore(rows []Row) error {
	cs := make(map[TaskID]*controller, len(rows))
	for _, row := range rows {
		if _, err := ParseTaskID(string(row.TaskID)); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		if _, dup := cs[row.TaskID]; dup {
			return fmt.Errorf("restore: duplicate task %s", row.TaskID)
		}
		def, err := r.cfg.Catalog.Lookup(row.SubagentType)
		if err != nil {
			def = Definition{Name: row.SubagentType}
			if row.BlockedReason == "" {
				row.BlockedReason = err.Error()
			}
		}
		if row, err = row.restored(); err != nil {
			return err
		}
		cs[row.TaskID] = newController(r.env, def, row, def.Resident())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range cs {
		if _, ok := r.tasks[id]; ok {
			return fmt.Errorf("restore: task %s is already in the registry", id)
		}
	}
	for id, c := range cs {
		r.tasks[id] = c
	}
	return nil
}
