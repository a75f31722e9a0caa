package runtime

import (
	"context"
	"sync"
)

// CallOrder says how one tool call of a reply is ordered among the reply's other calls.
// The calls of one reply run in the order the model wrote them, in groups: a maximal run
// of consecutive calls that may overlap (Unordered and Admitted ones) runs together, and
// each Sequential call runs alone, after every earlier call of its reply has returned and
// before any later one starts. Results are returned in call order either way.
//
// The zero value, ByTool, lets the tool decide, so that the runtime never learns a tool's
// name: a tool that declares itself read-only and safe in parallel (tools.ReadOnly:
// read_file, glob, grep, an MCP tool annotated readOnlyHint) is Unordered, any other is
// Sequential. A policy (ToolOrder) names the exceptions: the task tools' launches, which
// overlap but take their places in the queues in call order (Admitted).
type CallOrder uint8

const (
	// ByTool: the tool's declaration decides (the default): Unordered for a read-only
	// tool (tools.ReadOnly), Sequential for any other.
	ByTool CallOrder = iota
	// Unordered: the call runs together with the consecutive calls of its reply that
	// may overlap, and nothing orders what it does.
	Unordered
	// Admitted: the call runs together with its overlapping neighbours, as Unordered,
	// but is admitted — takes its place in a queue, through Admit — in the order the
	// model wrote the reply's Admitted calls: it is admitted once every earlier one has
	// been admitted or has returned.
	Admitted
	// Sequential: the call runs alone: after every earlier call of its reply has
	// returned, and before any later one starts.
	Sequential
)

// overlaps reports whether a call of this order may run together with its neighbours.
func (o CallOrder) overlaps() bool { return o == Unordered || o == Admitted }

// ToolOrder is a runtime's ordered-tools policy: the CallOrder of a call of the tool
// named tool, ByTool to let the tool's declaration decide. It is asked once per call,
// before the calls of a reply start; nil is ByTool for every call. It must be safe for
// concurrent use.
type ToolOrder func(tool string) CallOrder

// orderOf is the CallOrder a call of the tool named name runs with, under policy and the
// tool set's declarations.
func orderOf(policy ToolOrder, set interface{ ReadOnly(string) bool }, name string) CallOrder {
	o := ByTool
	if policy != nil {
		o = policy(name)
	}
	if o != ByTool {
		return o
	}
	if set.ReadOnly(name) {
		return Unordered
	}
	return Sequential
}

// groups splits the calls of one reply, by their orders, into the runs of consecutive
// calls that run together: [start, end) each, in call order.
func groups(orders []CallOrder) [][2]int {
	var out [][2]int
	for start := 0; start < len(orders); {
		end := start + 1
		if orders[start].overlaps() {
			for end < len(orders) && orders[end].overlaps() {
				end++
			}
		}
		out = append(out, [2]int{start, end})
		start = end
	}
	return out
}

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
