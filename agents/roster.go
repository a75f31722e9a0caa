package agents

import (
	"fmt"
)

// Restore adds the rows of a stored session to an empty or live registry. Completed rows
// come back completed and already notified; running rows come back paused. Restored rows
// have no resident runtime: their next turn is revived from the transcript. Restore is
// all-or-nothing: on error no row was added.
func (r *Registry) Restore(rows []Row) error {
	entries := make(map[TaskID]*entry, len(rows))
	for _, row := range rows {
		if _, err := ParseTaskID(string(row.TaskID)); err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		if _, dup := entries[row.TaskID]; dup {
			return fmt.Errorf("restore: duplicate task %s", row.TaskID)
		}
		def, err := r.cfg.Catalog.Lookup(row.SubagentType)
		if err != nil {
			def = Definition{Name: row.SubagentType}
			if row.BlockedReason == "" {
				row.BlockedReason = err.Error()
			}
		}
		switch row.Status {
		case StatusCompleted:
		case StatusRunning, StatusPaused:
			row.Status = StatusPaused
		default:
			return fmt.Errorf("restore: task %s is %s; only completed and running tasks are restored", row.TaskID, row.Status)
		}
		row.Notified = true
		done := make(chan struct{})
		close(done)
		entries[row.TaskID] = &entry{row: row, def: def, done: done}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id := range entries {
		if _, ok := r.entries[id]; ok {
			return fmt.Errorf("restore: task %s is already in the registry", id)
		}
	}
	for id, e := range entries {
		r.entries[id] = e
	}
	return nil
}
