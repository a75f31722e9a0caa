package agents

import "github.com/stoke-cli/stoke/agents/store"

// openTranscript creates the transcript of a fresh launch, opening with its meta record
// (nil when nothing is stored).
func (c *controller) openTranscript() (*store.Transcript, error) {
	st := c.env.cfg.Store
	if st == nil {
		return nil, nil
	}
	tr, err := st.OpenTranscript(st.TaskTranscript(string(c.id)), c.env.cfg.Now)
	if err != nil {
		return nil, err
	}
	if err := tr.Write(store.Record{Type: store.RecordMeta, TaskID: string(c.id), SubagentType: c.def.Name, System: c.def.SystemPrompt()}); err != nil {
		tr.Close()
		return nil, err
	}
	return tr, nil
}

// boundarySynced is a task's transcript as its runtime writes it: the runtime's own sync
// at the end of a turn is left out, for every turn ends at a boundary (Settle or finish)
// that syncs the transcript with the turn's end record in it.
type boundarySynced struct{ *store.Transcript }

func (boundarySynced) Sync() error { return nil }

// turnRecordLocked is the transcript record that ends turn n: its status and summary, and
// the row as its sidecar holds it (the durable copy of the sidecar). Call with c.mu held.
func (c *controller) turnRecordLocked(n int, summary string) store.Record {
	rec := store.Record{Type: store.RecordTurn, Turn: n, Status: string(c.row.Status), Summary: summary}
	if cur := c.cur; cur != nil && cur.n == n { // how the turn ran, for reports
		rec.Start, rec.Queued, rec.Continuation = cur.start.UTC(), cur.queued.UTC(), string(cur.continuation)
	}
	if st := c.env.cfg.Store; st != nil {
		if data, err := EncodeSidecar(Sidecar{Row: c.row, CWD: c.env.cfg.CWD, Isolation: c.def.Isolation}, st.Rel); err == nil {
			rec.Row = data
		}
	}
	return rec
}

// boundary makes the end of a turn durable, in two fsyncs: the transcript (the turn's
// history and its end record, row included), then — the sidecar replaced meanwhile — the
// directory that holds the sidecar's new name. A crash of the process loses nothing
// written; after a crash of the machine, the sidecar is what this boundary wrote, or is
// rebuilt from the row in the transcript (ReadSidecar).
func (c *controller) boundary(tr *store.Transcript) {
	if tr != nil {
		if err := tr.Sync(); err != nil {
			c.env.cfg.Logger.Warn("sync transcript", "task_id", c.id, "err", err)
		}
	}
	c.persist()
	if st := c.env.cfg.Store; st != nil {
		if err := st.SyncSidecars(); err != nil {
			c.env.cfg.Logger.Warn("sync sidecars", "task_id", c.id, "err", err)
		}
	}
}

// persist writes the row to its sidecar, unless a newer write already happened. Call
// without mu held, after the transition, before anything announces it.
func (c *controller) persist() { c.write(true) }

// flush writes the row to its sidecar if an earlier write failed.
func (c *controller) flush() { c.write(false) }

func (c *controller) write(changed bool) {
	st := c.env.cfg.Store
	if st == nil {
		return
	}
	c.mu.Lock()
	if changed {
		c.rev++
	}
	rev := c.rev
	sc := Sidecar{Row: c.row, CWD: c.env.cfg.CWD, Isolation: c.def.Isolation}
	c.mu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if rev <= c.written {
		return
	}
	data, err := EncodeSidecar(sc, st.Rel)
	if err == nil {
		err = st.WriteSidecar(string(sc.TaskID), data)
	}
	if err != nil {
		c.env.cfg.Logger.Warn("write sidecar", "task_id", sc.TaskID, "err", err)
		return
	}
	c.written = rev
}
