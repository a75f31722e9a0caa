package runtime

import (
	"context"
	"sync"
)

// CallOrder says how one tool call of a reply is ordered among the reply's other calls.
// The calls of one reply run concurrently; a CallOrder orders what a call does against
// the others.
//
// A later kind can order the runs themselves — say, a call that runs alone, after every
// earlier call of its reply has returned and before any later one starts, so that
// consecutive read-only (Unordered) calls overlap and the others keep the order the model
// wrote — without the runtime learning a tool's name: the policy says it.
type CallOrder uint8

const (
	// Unordered: the call runs alongside the reply's other calls, and nothing orders it
	// (the default).
	Unordered CallOrder = iota
	// Admitted: the call runs alongside the others, but is admitted — takes its place in
	// a queue, through Admit — in the order the model wrote the reply's Admitted calls: it
	// is admitted once every earlier one has been admitted or has returned.
	Admitted
)

// ToolOrder is a runtime's ordered-tools policy: the CallOrder of a call of the tool
// named tool. It is asked once per call, before the calls of a reply start; nil makes
// every call Unordered. It must be safe for concurrent use.
type ToolOrder func(tool string) CallOrder

// callOrder makes the Admitted calls of one reply take their place in the queues in the
// order the model wrote them, although the calls run concurrently: the runtime gives
// each Admitted call a slot number (its rank among them), and a call is admitted only
// once every earlier one has been admitted or has returned. A call passes its slot when
// it is admitted (Admit), when it needs no place in a queue (SkipAdmission), or when it
// returns (the runtime), so no call waits for more than the admissions before it.
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

// Admit runs admit once every earlier Admitted call of the same reply has been admitted
// (or has returned), then passes the caller's slot. Called from a tool's Run with the
// call's context; outside a tool round, or for an Unordered call, it runs admit at once.
func Admit(ctx context.Context, admit func()) {
	s, ok := ctx.Value(callSlotKey{}).(callSlot)
	if !ok {
		admit()
		return
	}
	s.order.await(ctx, s.i)
	defer s.order.pass(s.i)
	admit()
}

// SkipAdmission passes the caller's slot: this call of an Admitted tool takes no place in
// a queue after all, and the calls after it need not wait for it.
func SkipAdmission(ctx context.Context) {
	if s, ok := ctx.Value(callSlotKey{}).(callSlot); ok {
		s.order.pass(s.i)
	}
}
