package agents

import (
	"context"
	"fmt"
	"sync"
)

// slots caps how many turns of one kind run at once (foreground, background): a turn
// takes a slot as it is admitted, or waits for one in a FIFO queue; a finishing turn
// hands its slot to the oldest waiter. Safe for concurrent use; mu is a leaf lock.
type slots struct {
	mu    sync.Mutex
	cond  *sync.Cond // signalled as turns start (inOrder)
	cap   int        // turns running at once
	limit int        // waiting turns at most (0: none may wait); unbounded: no bound
	busy  int        // slots taken
	queue []*slotTicket
	// grants numbers the slots given, in order; started counts the turns that have run
	// their start (inOrder) among them.
	grants, started uint64
}

// slotTicket is one admitted turn's claim on a slot.
type slotTicket struct {
	ready   chan struct{} // closed once the slot is the ticket's
	granted bool          // under slots.mu
	done    bool          // released or withdrawn (under slots.mu)
	seq     uint64        // the grant's number (under slots.mu, once granted)
	begun   bool          // its start has run (under slots.mu)
}

// unbounded is the limit of a queue with no bound (the foreground slots').
const unbounded = -1

func newSlots(cap, limit int) *slots {
	s := &slots{cap: cap, limit: limit}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// grantLocked gives t a slot. Call with s.mu held.
func (s *slots) grantLocked(t *slotTicket) {
	s.grants++
	t.granted, t.seq = true, s.grants
	close(t.ready)
}

// inOrder runs start for the turn of t once every turn granted a slot before it has run
// its own start, so the turns of one kind start (and say so) in the order they got their
// slots, which is the order they were admitted. A ticket that was never granted (its turn
// was stopped in the queue), or none, runs start at once.
func (s *slots) inOrder(t *slotTicket, start func()) {
	if s == nil || t == nil {
		start()
		return
	}
	s.mu.Lock()
	if !t.granted {
		s.mu.Unlock()
		start()
		return
	}
	for s.started < t.seq-1 {
		s.cond.Wait()
	}
	s.mu.Unlock()
	defer s.begin(t)
	start()
}

// begin records that t's start has run. Idempotent.
func (s *slots) begin(t *slotTicket) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !t.granted || t.begun {
		return
	}
	t.begun = true
	s.started++
	s.cond.Broadcast()
}

// errQueueFull says a launch was refused because the queue is at its bound.
type errQueueFull struct{ running, queued int }

func (e errQueueFull) Error() string {
	if e.queued == 0 {
		// No queue (--max-queued 0), as in seed 003: over the cap a launch fails at once.
		return fmt.Sprintf("%v: %d background agents are running, the most this run allows, and no launch waits for a slot", ErrNoSlot, e.running)
	}
	return fmt.Sprintf("%v: %d background agents are running and %d are queued, the most the queue holds", ErrNoSlot, e.running, e.queued)
}

func (e errQueueFull) Unwrap() error { return ErrNoSlot }

// admit returns a ticket that holds a slot at once (position 0), or waits at position
// 1, 2, … of the queue; past the queue's bound it fails (wrapping ErrNoSlot).
func (s *slots) admit() (*slotTicket, int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := &slotTicket{ready: make(chan struct{})}
	if s.busy < s.cap && len(s.queue) == 0 {
		s.busy++
		s.grantLocked(t)
		return t, 0, nil
	}
	if s.limit != unbounded && len(s.queue) >= s.limit {
		return nil, 0, errQueueFull{running: s.busy, queued: len(s.queue)}
	}
	s.queue = append(s.queue, t)
	return t, len(s.queue), nil
}

// wait blocks until t holds its slot (at once for a nil ticket), or ctx ends: then t leaves the queue (giving back
// a slot granted meanwhile) and the cause is returned.
func (s *slots) wait(ctx context.Context, t *slotTicket) error {
	if t == nil {
		return nil
	}
	select {
	case <-t.ready:
	case <-ctx.Done():
	}
	if ctx.Err() == nil {
		return nil
	}
	// Cancelled before the turn started (granted or not as ctx ended): it never runs, and
	// a slot it was given goes to the next in line.
	s.release(t)
	return context.Cause(ctx)
}

// release gives up t: a slot it holds goes to the oldest waiter; a ticket still waiting
// leaves the queue. Idempotent; nil does nothing.
func (s *slots) release(t *slotTicket) {
	if s == nil || t == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t.done {
		return
	}
	t.done = true
	if t.granted && !t.begun {
		// Its turn never started (a launch that failed, or was shut down, after its
		// admission): the turns after it need not wait for its start.
		t.begun = true
		s.started++
		s.cond.Broadcast()
	}
	if !t.granted {
		for i, q := range s.queue {
			if q == t {
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				break
			}
		}
		return
	}
	if len(s.queue) == 0 {
		s.busy--
		return
	}
	next := s.queue[0]
	s.queue[0] = nil
	s.queue = s.queue[1:]
	s.grantLocked(next)
}
