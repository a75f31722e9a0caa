package agents

import "sort"

// ReleaseResidents disposes every resident runtime of a task that is not running (the
// workspace changed under them). Their rows stay completed; a later send_message revives
// them from their transcripts. It returns how many it released. A task running, queued
// (its turn waits for a slot), or with a turn still finishing, keeps its runtime; the
// runtimes are taken under the registry's lock (so a concurrent Send revives) and closed
// outside it.
func (r *Registry) ReleaseResidents() int {
	type release struct {
		c   *controller
		rel released
	}
	var out []release
	r.mu.Lock()
	for _, c := range r.tasks {
		if rel, ok := c.releaseIdle(); ok {
			out = append(out, release{c, rel})
		}
	}
	r.mu.Unlock()
	for _, x := range out {
		x.c.dispose(x.rel)
	}
	return len(out)
}

// prune drops the oldest settled rows beyond MaxRetained (never one whose notification is
// still due or that is paused), disposing their controllers. Settling turns call it.
func (r *Registry) prune() {
	r.mu.Lock()
	type settled struct {
		c   *controller
		row Row
	}
	var all []settled
	for _, c := range r.tasks {
		if row := c.snapshot(); row.Status.Terminal() && row.Status != StatusPaused {
			all = append(all, settled{c, row})
		}
	}
	excess := len(all) - r.cfg.MaxRetained
	var evicted []*controller
	if excess > 0 {
		sort.Slice(all, func(i, j int) bool { return all[i].row.EndedAt.Before(all[j].row.EndedAt) })
		for _, s := range all {
			if excess == 0 {
				break
			}
			if s.row.Notified {
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
