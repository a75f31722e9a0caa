package runtime

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
)

// The Admitted calls of one reply are admitted in the order the model wrote them, even
// when they reach Admit in the reverse order; an Unordered call between them neither
// waits nor holds them up, and a call that skips its admission lets the later ones pass.
func TestToolOrderAdmitsInCallOrder(t *testing.T) {
	t.Parallel()
	const n = 4
	var (
		mu       sync.Mutex
		admitted []string
	)
	arrived := make([]chan struct{}, n) // call i has reached Admit (or skipped it)
	for i := range arrived {
		arrived[i] = make(chan struct{})
	}
	free := make(chan struct{}) // the Unordered call ran
	queue := toolFunc("queue", func(ctx context.Context, c tools.Call) tools.Result {
		var i int
		fmt.Sscanf(c.ID, "q%d", &i)
		if i < n-1 {
			<-arrived[i+1] // the later calls arrive first
		}
		close(arrived[i])
		if i == 1 {
			SkipAdmission(ctx)
			return tools.Result{Content: "skipped"}
		}
		Admit(ctx, func() {
			mu.Lock()
			admitted = append(admitted, c.ID)
			mu.Unlock()
		})
		return tools.Result{Content: "admitted"}
	})
	other := toolFunc("other", func(context.Context, tools.Call) tools.Result {
		close(free)
		return tools.Result{Content: "free"}
	})
	var calls []llm.Block
	for i := range n {
		calls = append(calls, llm.Block{ID: fmt.Sprintf("q%d", i), Name: "queue"})
		if i == 0 {
			calls = append(calls, llm.Block{ID: "o", Name: "other"})
		}
	}
	m := modelFunc(func(_ context.Context, req *llm.Request, yield func(llm.Event, error) bool) {
		if len(req.Messages) == 1 {
			reply(yield, "", calls...)
			return
		}
		reply(yield, "done")
	})
	order := func(tool string) CallOrder {
		if tool == "queue" {
			return Admitted
		}
		return Unordered
	}
	rt := New(Config{Agent: "a", Model: m, Order: order, Tools: func() *tools.Set { return tools.NewSet(queue, other) }})
	res, err := rt.Execute(t.Context(), llm.UserText("go"))
	if err != nil || res.Reason != ReasonCompleted {
		t.Fatalf("result = %+v, %v", res, err)
	}
	<-free
	if want := []string{"q0", "q2", "q3"}; !slices.Equal(admitted, want) {
		t.Fatalf("admitted %v, want %v (call order)", admitted, want)
	}
}

// Without a policy every call is Unordered: Admit runs at once, whatever the order.
func TestNoToolOrderAdmitsAtOnce(t *testing.T) {
	t.Parallel()
	second := make(chan struct{})
	tool := toolFunc("queue", func(ctx context.Context, c tools.Call) tools.Result {
		if c.ID == "first" {
			<-second // admitted only after the later call was
		}
		Admit(ctx, func() {
			if c.ID == "second" {
				close(second)
			}
		})
		return tools.Result{Content: "ok"}
	})
	m := modelFunc(func(_ context.Context, req *llm.Request, yield func(llm.Event, error) bool) {
		if len(req.Messages) == 1 {
			reply(yield, "", llm.Block{ID: "first", Name: "queue"}, llm.Block{ID: "second", Name: "queue"})
			return
		}
		reply(yield, "done")
	})
	rt := New(Config{Agent: "a", Model: m, Tools: func() *tools.Set { return tools.NewSet(tool) }})
	if res, err := rt.Execute(t.Context(), llm.UserText("go")); err != nil || res.Reason != ReasonCompleted {
		t.Fatalf("result = %+v, %v", res, err)
	}
}
