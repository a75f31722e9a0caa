package agents

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

// A replay gives each launch the id it had when recorded (agents/llm/cassette): the id
// source sees the launch request, and every model call of a task's turns carries the task
// id in its context, fresh turns and continuations alike.
func TestTaskIDSourceAndCallContext(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string][]string{} // task id from ctx -> prompts its calls saw
	h := newHarness(t, func(ctx context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		mu.Lock()
		id := llm.TaskIDFrom(ctx)
		seen[id] = append(seen[id], req.Messages[len(req.Messages)-1].Text())
		mu.Unlock()
		answer(yield, "ok")
	}, func(c *RegistryConfig) {
		c.NewID = func(req LaunchRequest) TaskID {
			// a deterministic id per launching tool call
			return TaskID("a000000000000000" + req.ToolUseID[len(req.ToolUseID)-1:])
		}
	})
	a := h.launch(LaunchRequest{Prompt: "first", Background: true, ToolUseID: "call_1"}).TaskID
	b := h.launch(LaunchRequest{Prompt: "second", Background: true, ToolUseID: "call_2"}).TaskID
	if a != "a0000000000000001" || b != "a0000000000000002" {
		t.Fatalf("ids %s %s: the id source was not given the launch", a, b)
	}
	h.collect(a)
	h.collect(b)
	h.send(a, "again")
	h.collect(a)
	mu.Lock()
	defer mu.Unlock()
	if got := seen[string(a)]; !slices.Equal(got, []string{"first", "again"}) {
		t.Errorf("calls under task %s saw %q", a, got)
	}
	if got := seen[string(b)]; !slices.Equal(got, []string{"second"}) {
		t.Errorf("calls under task %s saw %q", b, got)
	}
	if len(seen) != 2 {
		t.Errorf("calls outside the two tasks: %q", seen)
	}
}
