package agents

import (
	"context"
	"sync"
)

// callOrder makes the task tools' calls of one reply take their place in the queues in
// the order the model wrote them, although the calls run concurrently: the runtime gives
// each call of a task tool a slot number (its rank among them), and a call is admitted
// only once every earlier one has been admitted or has returned. A call passes its slot
// when it is admitted (inCallOrder), when it needs no place in a queue (skipCallOrder), or
// when it returns (the runtime), so no call waits for more than the admissions before it.
type callOrder struct {
	mu     sync.Mutex
	cond   *sync.Cond
	passed []bool
	next   int // every slot below next has passed
}

func newCallOrder(n int) *callOrder {
	o := &callOrder{passed: make([]bool, n)}
	o.cond = sync.NewCond(&o.mu)
	return o
}

// pass marks slot i as passed. Idempotent.
func (o *callOrder) pass(i int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.passed[i] = true
	for o.next < len(o.passed) && o.passed[o.next] {
		o.next++
	}
	o.cond.Broadcast()
}

// await blocks until every slot below i has passed, or ctx ends.
func (o *callOrder) await(ctx context.Context, i int) {
	stop := context.AfterFunc(ctx, func() {
		o.mu.Lock()
		o.cond.Broadcast()
		o.mu.Unlock()
	})
	defer stop()
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.next < i && ctx.Err() == nil {
		o.cond.Wait()
	}
}

type callSlotKey struct{}

type callSlot struct {
	order *callOrder
	i     int
}

func withCallSlot(ctx context.Context, o *callOrder, i int) context.Context {
	return context.WithValue(ctx, callSlotKey{}, callSlot{o, i})
}

// inCallOrder runs admit once every earlier task-tool call of the same reply has been
// admitted (or has returned), then passes the caller's slot. Outside a tool round it runs
// admit at once.
func inCallOrder(ctx context.Context, admit func()) {
	s, ok := ctx.Value(callSlotKey{}).(callSlot)
	if !ok {
		admit()
		return
	}
	s.order.await(ctx, s.i)
	defer s.order.pass(s.i)
	admit()
}

// skipCallOrder passes the caller's slot: the call takes no place in a queue (a collect).
func skipCallOrder(ctx context.Context) {
	if s, ok := ctx.Value(callSlotKey{}).(callSlot); ok {
		s.order.pass(s.i)
	}
}
