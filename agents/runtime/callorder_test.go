package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

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

// Unordered calls are admitted at once, whatever the order they reach Admit in.
func TestUnorderedAdmitsAtOnce(t *testing.T) {
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
	unordered := func(string) CallOrder { return Unordered }
	rt := New(Config{Agent: "a", Model: m, Order: unordered, Tools: func() *tools.Set { return tools.NewSet(tool) }})
	if res, err := rt.Execute(t.Context(), llm.UserText("go")); err != nil || res.Reason != ReasonCompleted {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

// timeline records, for the calls of one reply, which other calls were running when each
// started, and whether each met the calls it waits for (meet).
type timeline struct {
	mu      sync.Mutex
	running map[string]bool
	beside  map[string][]string // the calls running when the call started
	started map[string]chan struct{}
}

func newTimeline(ids ...string) *timeline {
	tl := &timeline{running: map[string]bool{}, beside: map[string][]string{}, started: map[string]chan struct{}{}}
	for _, id := range ids {
		tl.started[id] = make(chan struct{})
	}
	return tl
}

func (tl *timeline) begin(id string) {
	tl.mu.Lock()
	for o := range tl.running {
		tl.beside[id] = append(tl.beside[id], o)
	}
	tl.running[id] = true
	tl.mu.Unlock()
	close(tl.started[id])
}

func (tl *timeline) end(id string) {
	tl.mu.Lock()
	delete(tl.running, id)
	tl.mu.Unlock()
}

// meet reports whether every call of others started while id was running: it waits for
// them, and gives up when nothing else can happen (the bubble's clock then jumps the hour:
// the calls it waits for cannot start while it runs).
func (tl *timeline) meet(id string, others ...string) bool {
	for _, o := range others {
		if o == id {
			continue
		}
		select {
		case <-tl.started[o]:
		case <-time.After(time.Hour):
			return false
		}
	}
	return true
}

// The calls of one reply run in groups, in call order: consecutive calls of read-only
// tools together (each sees the others start while it runs: overlap by construction, not
// by timing), every other call alone, after the calls before it have returned and before
// the ones after it start. A policy's Admitted calls overlap with their read-only
// neighbours; its ByTool leaves it to the tool; nil is ByTool.
func TestCallsRunInGroupsInCallOrder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		order  ToolOrder
		calls  []string // tool names: read (read-only), write, queue
		groups [][]int  // the calls that run together, by index
	}{
		{"reads overlap", nil, []string{"read", "read"}, [][]int{{0, 1}}},
		{"writes in order", nil, []string{"write", "write"}, [][]int{{0}, {1}}},
		{"write then reads", nil, []string{"write", "read", "read", "write", "read"}, [][]int{{0}, {1, 2}, {3}, {4}}},
		{"admitted overlap", func(n string) CallOrder {
			if n == "queue" {
				return Admitted
			}
			return ByTool
		}, []string{"queue", "read", "queue", "write"}, [][]int{{0, 1, 2}, {3}}},
		{"policy makes reads sequential", func(string) CallOrder { return Sequential }, []string{"read", "read"}, [][]int{{0}, {1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ids := make([]string, len(tt.calls))
				for i := range ids {
					ids[i] = fmt.Sprintf("c%d", i)
				}
				group := map[string][]string{} // id -> the ids of its group
				for _, g := range tt.groups {
					var members []string
					for _, i := range g {
						members = append(members, ids[i])
					}
					for _, id := range members {
						group[id] = members
					}
				}
				tl := newTimeline(ids...)
				met := map[string]bool{}
				var mu sync.Mutex
				run := func(_ context.Context, c tools.Call) tools.Result {
					tl.begin(c.ID)
					ok := tl.meet(c.ID, group[c.ID]...)
					// Stay until nothing else in the bubble can run: a call that could start
					// beside this one has started (the fake clock moves only then).
					time.Sleep(time.Minute)
					mu.Lock()
					met[c.ID] = ok
					mu.Unlock()
					tl.end(c.ID)
					return tools.Result{Content: "ran " + c.ID}
				}
				read := tools.Func{ToolSpec: llm.ToolSpec{Name: "read", Parameters: json.RawMessage(`{"type":"object"}`)}, Fn: run, Parallel: true}
				write := tools.Func{ToolSpec: llm.ToolSpec{Name: "write", Parameters: json.RawMessage(`{"type":"object"}`)}, Fn: run}
				queue := tools.Func{ToolSpec: llm.ToolSpec{Name: "queue", Parameters: json.RawMessage(`{"type":"object"}`)}, Fn: run}
				var calls []llm.Block
				for i, name := range tt.calls {
					calls = append(calls, llm.Block{ID: ids[i], Name: name})
				}
				var second []llm.Message
				m := modelFunc(func(_ context.Context, req *llm.Request, yield func(llm.Event, error) bool) {
					if len(req.Messages) == 1 {
						reply(yield, "", calls...)
						return
					}
					second = req.Messages
					reply(yield, "done")
				})
				rt := New(Config{Agent: "a", Model: m, Order: tt.order, Tools: func() *tools.Set { return tools.NewSet(read, write, queue) }})
				if res, err := rt.Execute(t.Context(), llm.UserText("go")); err != nil || res.Reason != ReasonCompleted {
					t.Fatalf("result = %+v, %v", res, err)
				}
				for i, id := range ids {
					if !met[id] {
						t.Errorf("%s (%s) never saw the rest of its group %v start while it ran", id, tt.calls[i], group[id])
					}
					// A call starts once every earlier group has returned, and before any
					// later one starts: only its own group's calls may run beside it.
					for _, o := range tl.beside[id] {
						if !slices.Contains(group[id], o) {
							t.Errorf("%s (%s) started while %s, of another group, ran", id, tt.calls[i], o)
						}
					}
				}
				// The results come back in call order.
				results := second[len(second)-1].Content
				for i, b := range results {
					if b.ToolUseID != ids[i] || b.Content != "ran "+ids[i] {
						t.Errorf("result %d = %s %q, want %s's", i, b.ToolUseID, b.Content, ids[i])
					}
				}
			})
		})
	}
}
