package agents

import (
	"context"
	"fmt"
)

// Collect returns the recorded outcome of id's latest turn, waiting (under ctx) until it
// has settled unless noWait is set (then a running turn is reported at once). It never
// prompts the agent; repeated and parallel collects return the same record. When ctx
// ends while it waits, and what ended it stops the task too (the run's context, the
// registry's shutdown, a stop), it waits for the turn's end and returns that record —
// the partial findings — without error; otherwise it returns the row as it is with an
// error (the task goes on). It holds no lock while it waits.
func (r *Registry) Collect(ctx context.Context, id TaskID, noWait bool) (Row, error) {
	c, err := r.lookup(id)
	if err != nil {
		return Row{}, err
	}
	row, done := c.state()
	if noWait {
		return row, nil
	}
	// Wait until the turn has settled fully, not only until it stopped running: a
	// completed turn records its usage and emits its notification just after the
	// running→completed transition, and every collect must return the same record.
	select {
	case <-done:
	case <-ctx.Done():
		if !r.stopping(c) {
			// The task goes on (only the caller was cut short): it is still running.
			return c.snapshot(), fmt.Errorf("collect interrupted: %w", context.Cause(ctx))
		}
		// What cut the collect short stops the task too (the run is ending: a signal,
		// --timeout; or it was stopped): its turn ends at once, and the collect returns
		// what it recorded — its partial findings — as the synchronous path does.
		<-done
	}
	// The controller itself, not a lookup by id: the row may have been pruned meanwhile.
	return c.snapshot(), nil
}

// stopping reports whether c's turn is being stopped: the registry's lifetime (or the
// run's context it derives from) has ended, so every turn's context has or is about to;
// or the task was stopped (task_stop, CancelAll). A caller whose context derives from the
// run's context and ended with it sees this hold, whichever branch of the context tree
// the cancellation reached first.
func (r *Registry) stopping(c *controller) bool {
	r.mu.Lock()
	ended := r.closed || r.ctx.Err() != nil || r.parent.Err() != nil
	r.mu.Unlock()
	return ended || c.stopping()
}
