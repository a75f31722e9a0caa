package agents

import "sort"

// ReleaseResidents disposes every resident runtime of a task that is not running,
// because of reason (logged): the workspace changed under them — the session now works
// in another directory (an entry point that loads a session elsewhere calls it), a
// branch switch (CheckWorkspace). Their rows stay completed; a later send_message revives
// them from their transcripts. It returns how many it released. A task running, queued
// (its turn waits for a slot), or with a turn still finishing, keeps its runtime; the
// runtimes are taken under the registry's lock (so a concurrent Send revives) and closed
// outside it.
func (r *Registry) ReleaseResidents(reason string) int {
	return r.release(reason, func(string) bool { return true })
}

// CheckWorkspace releases the resident runtimes made under another head than what the
// working directory has checked out now (RegistryConfig.Head): a branch switch since,
// such as a shell tool's git checkout. Send makes the same check for the task it
// continues, so a continuation never runs resident across a branch switch; the run loop
// calls this at each parent turn to free the others early. It returns how many it
// released.
func (r *Registry) CheckWorkspace() int {
	head := r.env.head()
	return r.release("the branch changed (HEAD is now "+head+")", func(h string) bool { return h != head })
}

// release disposes the idle resident runtimes whose head stale says is out of date.
func (r *Registry) release(reason string, stale func(head string) bool) int {
	type release struct {
		c   *controller
		rel released
	}
	var out []release
	r.mu.Lock()
	for _, c := range r.tasks {
		if rel, ok := c.releaseIdle(stale); ok {
			out = append(out, release{c, rel})
		}
	}
	r.mu.Unlock()
	for _, x := range out {
		x.c.dispose(x.rel)
	}
	if len(out) > 0 {
		r.cfg.Logger.Info("released resident agents", "count", len(out), "reason", reason)
	}
	return len(out)
}

// prune drops the oldest settled rows beyond MaxRetained, disposing their controllers;
// settling turns call it. Rows that do not count (running, queued, paused) are never
// dropped, and neither is one whose notification the parent has not been handed yet
// (Notification.Delivered): the parent may still collect or continue it. A row kept for
// that reason is dropped at a later settlement, once it is delivered.
func (r *Registry) prune() {
	r.mu.Lock()
	type settled struct {
		c         *controller
		row       Row
		evictable bool
	}
	var all []settled
	for _, c := range r.tasks {
		if row, counted, evictable := c.retention(); counted {
			all = append(all, settled{c, row, evictable})
		}
	}
	excess := len(all) - r.cfg.MaxRetained
	var evicted []*controller
	if excess > 0 {
		sort.Slice(all, func(i, j int) bool {
			if !all[i].row.EndedAt.Equal(all[j].row.EndedAt) {
				return all[i].row.EndedAt.Before(all[j].row.EndedAt)
			}
			return all[i].row.TaskID < all[j].row.TaskID
		})
		for _, s := range all {
			if excess == 0 {
				break
			}
			if s.evictable {
				delete(r.tasks, s.row.TaskID)
				evicted = append(evicted, s.c)
				excess--
			}
		}
	}
	r.mu.Unlock()
	for _, c := range evicted {
		c.close()
	}
}

// Resident reports whether id has a runtime kept between turns (tests and list_agents).
// Safe for concurrent use.
func (r *Registry) Resident(id TaskID) bool {
	c, err := r.lookup(id)
	return err == nil && c.isResident()
}
