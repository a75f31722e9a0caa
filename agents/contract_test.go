package agents

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// toolSet is the parent's tool set over h's registry.
func (h *harness) tools() *tools.Set { return tools.NewSet(TaskTools(h.reg)...) }

// call runs one parent tool call.
func (h *harness) call(ctx context.Context, name string, input any) tools.Result {
	h.t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.tools().Run(ctx, tools.Call{ID: "call_" + name, Name: name, Input: raw})
}

// taskIDOf reads the task_id from the first line of a task tool result.
func taskIDOf(t *testing.T, res tools.Result) TaskID {
	t.Helper()
	first, _, _ := strings.Cut(res.Content, "\n")
	id, err := ParseTaskID(strings.TrimPrefix(first, "task_id: "))
	if err != nil {
		t.Fatalf("result has no task_id line: %q", res.Content)
	}
	return id
}

// Seed 003, issue 12: a parent runs at most MaxBackground background turns; over the cap
// launches and continuations wait in a FIFO queue (queued, with their position), and past
// MaxQueued they fail with ErrNoSlot, the task tool telling the model to collect or wait.
func TestBackgroundCap(t *testing.T) {
	t.Parallel()
	g := newGate("", "done")
	h := newHarness(t, func(ctx context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		if strings.HasPrefix(req.Messages[0].Text(), "quick") && len(req.Messages) == 1 {
			answer(yield, "quick done")
			return
		}
		g.gen(ctx, req, yield)
	}, func(c *RegistryConfig) { c.MaxQueued = 2 })
	// A completed task does not hold a slot.
	quick, quick2 := h.launchBG("quick"), h.launchBG("quick2")
	h.collect(quick)
	h.collect(quick2)
	for range 4 {
		h.launchBG("work")
		g.wait(t)
	}
	// Continuing a completed task needs a slot too: without one it waits in line.
	res := h.call(h.ctx(), ToolSendMessage, map[string]any{"task_id": string(quick), "message": "more"})
	if res.IsError || !strings.Contains(res.Content, "as turn 2; it waits for a background slot (position 1 in the queue)") {
		t.Fatalf("send_message over the cap = %+v", res)
	}
	if row, _ := h.reg.Get(quick); row.Status != StatusQueued || row.Turn != 2 {
		t.Fatalf("row of the queued continuation = %+v", row)
	}
	res = h.call(h.ctx(), ToolTask, map[string]any{"description": "d", "prompt": "fifth", "run_in_background": true})
	if res.IsError || !strings.Contains(res.Content, "queued: position 2 in the queue") {
		t.Fatalf("task tool result over the cap = %+v", res)
	}
	fifth := TaskID(strings.TrimPrefix(strings.SplitN(res.Content, "\n", 2)[0], "task_id: "))
	list := h.call(h.ctx(), ToolListAgents, map[string]any{}).Content
	for _, id := range []TaskID{quick, fifth} {
		if !strings.Contains(list, `"task_id":"`+string(id)+`","description":"`) || strings.Count(list, `"status":"queued"`) != 2 {
			t.Fatalf("list_agents does not show %s queued: %s", id, list)
		}
	}
	// The queue is full: the next launch fails, and a continuation leaves its row as it was.
	_, err := h.reg.Launch(h.ctx(), LaunchRequest{Prompt: "sixth", Background: true})
	if !errors.Is(err, ErrNoSlot) || !strings.Contains(err.Error(), "4 background agents are running and 2 are queued") {
		t.Fatalf("launch past the queue: err = %v, want ErrNoSlot", err)
	}
	res = h.call(h.ctx(), ToolTask, map[string]any{"description": "d", "prompt": "sixth", "run_in_background": true})
	if !res.IsError || !strings.Contains(res.Content, "Collect one first with task(task_id)") || !strings.Contains(res.Content, "wait") {
		t.Fatalf("task tool result past the queue = %+v", res)
	}
	res = h.call(h.ctx(), ToolSendMessage, map[string]any{"task_id": string(quick2), "message": "more"})
	if !res.IsError || !strings.Contains(res.Content, "no free background slot") || !strings.Contains(res.Content, "wait for one to finish") {
		t.Fatalf("send_message past the queue = %+v", res)
	}
	if row, _ := h.reg.Get(quick2); row.Status != StatusCompleted || row.Turn != 1 || !h.reg.Resident(quick2) {
		t.Fatalf("row after a refused send = %+v", row)
	}
	if n := len(h.reg.List()); n != 7 {
		t.Fatalf("%d rows, want 7", n)
	}
	if len(h.started(fifth)) != 0 || len(h.started(quick)) != 1 {
		t.Fatalf("a queued turn started before its slot: %v %v", h.started(fifth), h.started(quick))
	}
	close(g.release)
	if err := h.reg.Wait(h.ctx()); err != nil {
		t.Fatal(err)
	}
	// Queued turns ran in the order they were queued, each announced as it started.
	var order []string
	h.mu.Lock()
	for _, ev := range h.events {
		if s, ok := ev.(*streamjson.TaskStarted); ok && (s.TaskID == string(quick) && s.Turn == 2 || s.TaskID == string(fifth)) {
			order = append(order, s.TaskID)
		}
	}
	h.mu.Unlock()
	if len(order) != 2 || order[0] != string(quick) || order[1] != string(fifth) {
		t.Fatalf("queued turns started in order %v, want %s then %s", order, quick, fifth)
	}
	for _, id := range []TaskID{quick, fifth} {
		if row := h.collect(id); row.Status != StatusCompleted {
			t.Fatalf("queued task %s ended %+v", id, row)
		}
	}
	// A slot is free again.
	h.collect(h.launchBG("seventh"))
}

// Seed 003: a launch on an already-cancelled context fails and never prompts the model.
func TestLaunchOnCancelledContext(t *testing.T) {
	t.Parallel()
	for _, bg := range []bool{false, true} {
		h := newHarness(t, replyText("never"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := h.reg.Launch(ctx, LaunchRequest{Prompt: "p", Background: bg}); err == nil {
			t.Fatalf("background=%v: launch on a cancelled context succeeded", bg)
		}
		res := h.call(ctx, ToolTask, map[string]any{"description": "d", "prompt": "p", "run_in_background": bg})
		if !res.IsError || strings.Contains(res.Content, "task_id:") {
			t.Fatalf("background=%v: task tool result = %+v", bg, res)
		}
		if n := len(h.model.requests()); n != 0 {
			t.Fatalf("background=%v: model got %d requests", bg, n)
		}
		if n := h.runtimeCount(); n != 0 || len(h.reg.List()) != 0 {
			t.Fatalf("background=%v: %d runtimes, rows %+v", bg, n, h.reg.List())
		}
	}
}

// Seed 003: collect with run_in_background on a running task answers "still running" at once.
func TestCollectNoWaitOnRunningTask(t *testing.T) {
	t.Parallel()
	g := newGate("", "done")
	h := newHarness(t, g.gen)
	res := h.call(h.ctx(), ToolTask, map[string]any{"description": "d", "prompt": "p", "run_in_background": true})
	if res.IsError || !strings.Contains(res.Content, "running in the background") {
		t.Fatalf("launch result = %+v", res)
	}
	id := taskIDOf(t, res)
	g.wait(t)
	res = h.call(h.ctx(), ToolTask, map[string]any{"task_id": string(id), "run_in_background": true})
	if res.IsError || taskIDOf(t, res) != id || !strings.Contains(res.Content, "still running") {
		t.Fatalf("no-wait collect = %+v", res)
	}
	// A collect whose context ends while it waits reports the task as still running.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = h.call(ctx, ToolTask, map[string]any{"task_id": string(id)})
	if !res.IsError || !strings.Contains(res.Content, "still running") {
		t.Fatalf("interrupted collect = %+v", res)
	}
	close(g.release)
	res = h.call(h.ctx(), ToolTask, map[string]any{"task_id": string(id)})
	if res.IsError || !strings.Contains(res.Content, "<task_result>\ndone\n</task_result>") {
		t.Fatalf("collect = %+v", res)
	}
}

// Seed 003: repeated and parallel collects return the identical record, and the child
// model gets exactly one request. The parallel collects are all waiting on the running
// child (synctest.Wait: every other goroutine of the bubble is blocked) before it is let
// answer.
func TestRepeatedAndParallelCollects(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := newGate("", "CHILDRESULT")
		h := newHarness(t, g.gen)
		id := taskIDOf(t, h.call(h.ctx(), ToolTask, map[string]any{"description": "d", "prompt": "p", "run_in_background": true}))
		g.wait(t)

		const n = 8
		results := make([]tools.Result, n)
		var returned atomic.Int32
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				results[i] = h.call(h.ctx(), ToolTask, map[string]any{"task_id": string(id)})
				returned.Add(1)
			})
		}
		synctest.Wait() // all n collects block on the child's turn
		if k := returned.Load(); k != 0 {
			t.Fatalf("%d collects returned while the child was running", k)
		}
		close(g.release)
		wg.Wait()
		later := h.call(h.ctx(), ToolTask, map[string]any{"task_id": string(id), "prompt": "ignored", "description": "ignored"})
		for i, r := range append(results, later) {
			if r != later {
				t.Errorf("collect %d = %+v, differs from %+v", i, r, later)
			}
		}
		if later.IsError || !strings.Contains(later.Content, "CHILDRESULT") || !strings.HasPrefix(later.Content, "task_id: "+string(id)+"\n") {
			t.Fatalf("collect = %+v", later)
		}
		if got := len(h.model.requests()); got != 1 {
			t.Fatalf("child model got %d requests, want 1", got)
		}
		if got := len(h.started(id)); got != 1 {
			t.Fatalf("%d task_started events, want 1", got)
		}
	})
}

// Seed 003: an errored child collected twice gives the same outcome without a re-prompt.
func TestErroredChildCollectedTwice(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ context.Context, _ llm.Request, yield func(llm.Event, error) bool) {
		yield(llm.Event{}, &llm.ProviderError{Provider: "fake", StatusCode: 500, Message: "boom"})
	})
	id := h.launchBG("p")
	first := h.call(h.ctx(), ToolTask, map[string]any{"task_id": string(id)})
	second := h.call(h.ctx(), ToolTask, map[string]any{"task_id": string(id)})
	if first != second {
		t.Fatalf("collects differ:\n%+v\n%+v", first, second)
	}
	if !first.IsError || !strings.Contains(first.Content, "status: failed") || !strings.Contains(first.Content, "boom") {
		t.Fatalf("collect = %+v", first)
	}
	if got := len(h.model.requests()); got != 1 {
		t.Fatalf("child model got %d requests, want 1", got)
	}
	row, _ := h.reg.Get(id)
	if row.Status != StatusFailed || row.LastOutcome.Reason != runtime.ReasonError || row.Interrupted {
		t.Fatalf("row = %+v", row)
	}
	n := h.notifications(id)
	if len(n) != 1 || n[0].Status != streamjson.StatusFailed || n[0].Reason != runtime.ReasonError {
		t.Fatalf("notifications = %+v", n)
	}
	if h.disposals(id) != 1 || h.reg.Resident(id) {
		t.Fatal("failed task's controller not disposed once")
	}
}

// Seed 003: a cancelled child keeps its partial findings: status cancelled, interrupted,
// the streamed text kept, a "stopped" notification; a later collect returns the same.
func TestPartialFindingsAfterCancellation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		cancel func(h *harness, id TaskID)
		status Status
	}{
		{"task_stop", func(h *harness, id TaskID) {
			if res := h.call(h.ctx(), ToolTaskStop, map[string]any{"task_id": string(id)}); res.IsError {
				h.t.Fatalf("task_stop = %+v", res)
			}
		}, StatusCancelled},
		// The end of the run pauses it instead: it can be continued.
		{"cancel all", func(h *harness, _ TaskID) { h.reg.CancelAll(errors.New("end of run")) }, StatusPaused},
		{"the run's context", func(h *harness, _ TaskID) { h.cancelRun() }, StatusPaused},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGate("PARTIAL-FINDINGS so far", "never")
			h := newHarness(t, g.gen)
			id := h.launchBG("investigate")
			g.wait(t)
			tc.cancel(h, id)
			res := h.call(h.ctx(), ToolTask, map[string]any{"task_id": string(id)})
			row, _ := h.reg.Get(id)
			if row.Status != tc.status || !row.Interrupted || row.LastOutcome.Text != "PARTIAL-FINDINGS so far" || row.LastOutcome.Reason != runtime.ReasonCancelled {
				t.Fatalf("row = %+v", row)
			}
			if !strings.Contains(res.Content, "partial findings") || !strings.Contains(res.Content, "PARTIAL-FINDINGS so far") {
				t.Fatalf("collect = %+v", res)
			}
			n := h.notifications(id)
			if len(n) != 1 || n[0].Status != streamjson.StatusStopped || n[0].Reason != "cancelled" || !n[0].Interrupted || n[0].Summary != "PARTIAL-FINDINGS so far" {
				t.Fatalf("notifications = %+v", n)
			}
			h.mu.Lock()
			note := h.notes[len(h.notes)-1].Text()
			h.mu.Unlock()
			if !strings.Contains(note, "<status>stopped</status>") || !strings.Contains(note, "PARTIAL-FINDINGS so far") {
				t.Fatalf("parent notification = %q", note)
			}
			if again := h.call(h.ctx(), ToolTask, map[string]any{"task_id": string(id)}); again != res {
				t.Fatalf("later collect differs:\n%+v\n%+v", again, res)
			}
			if got := len(h.model.requests()); got != 1 {
				t.Fatalf("child model got %d requests, want 1", got)
			}
		})
	}
}

// Seed 003: with background agents off, the schema has no run_in_background and passing it
// is a clear error.
func TestBackgroundAgentsOff(t *testing.T) {
	t.Parallel()
	h := newHarness(t, replyText("fg result"), func(c *RegistryConfig) { c.BackgroundAgents = false })
	var spec llm.ToolSpec
	for _, s := range h.tools().Specs() {
		if s.Name == ToolTask {
			spec = s
		}
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
	}
	if err := json.Unmarshal(spec.Parameters, &schema); err != nil {
		t.Fatal(err)
	}
	if _, ok := schema.Properties["run_in_background"]; ok {
		t.Fatal("schema offers run_in_background with background agents off")
	}
	if strings.Contains(spec.Description, "run_in_background") {
		t.Fatal("description mentions run_in_background with background agents off")
	}
	for _, bg := range []bool{true, false} {
		res := h.call(h.ctx(), ToolTask, map[string]any{"description": "d", "prompt": "p", "run_in_background": bg})
		if !res.IsError || !strings.Contains(res.Content, "run_in_background is not available") {
			t.Fatalf("run_in_background=%v: result = %+v", bg, res)
		}
	}
	if _, err := h.reg.Launch(h.ctx(), LaunchRequest{Prompt: "p", Background: true}); !errors.Is(err, ErrBackgroundOff) {
		t.Fatalf("Launch: err = %v", err)
	}
	if n := len(h.model.requests()); n != 0 {
		t.Fatalf("model got %d requests", n)
	}
	// The foreground launch still works.
	res := h.call(h.ctx(), ToolTask, map[string]any{"description": "d", "prompt": "p"})
	if res.IsError || !strings.Contains(res.Content, "<task_result>\nfg result\n</task_result>") {
		t.Fatalf("foreground = %+v", res)
	}

	on := newHarness(t, replyText("x"))
	for _, s := range on.tools().Specs() {
		if s.Name == ToolTask && !strings.Contains(string(s.Parameters), `"run_in_background"`) {
			t.Fatal("schema lacks run_in_background with background agents on")
		}
	}
}

// Seed 003: an unknown subagent_type is an error that lists the available types.
func TestUnknownSubagentType(t *testing.T) {
	t.Parallel()
	h := newHarness(t, replyText("x"), func(c *RegistryConfig) {
		c.Catalog = catalog.New(append(catalog.BuiltinDefinitions(), catalog.Definition{Name: "reviewer"})...)
	})
	res := h.call(h.ctx(), ToolTask, map[string]any{"description": "d", "prompt": "p", "subagent_type": "nope", "run_in_background": true})
	if !res.IsError || !strings.Contains(res.Content, `unknown subagent_type "nope"`) || !strings.Contains(res.Content, "general-purpose, reviewer") {
		t.Fatalf("result = %+v", res)
	}
	if n := h.runtimeCount(); n != 0 || len(h.reg.List()) != 0 {
		t.Fatal("an unknown type constructed a runtime or a row")
	}
}

func TestParseTaskID(t *testing.T) {
	t.Parallel()
	good := NewTaskID()
	tests := []struct {
		in string
		ok bool
	}{
		{string(good), true},
		{"a0123456789abcdef", true},
		{"../x", false},
		{"a0123456789abcde/", false},
		{"a0123456789abcde", false},
		{"a0123456789abcdef0", false},
		{"a0123456789ABCDEF", false},
		{"A0123456789abcdef", false},
		{"b0123456789abcdef", false},
		{"a../../../../etc/", false},
		{"", false},
	}
	for _, tc := range tests {
		id, err := ParseTaskID(tc.in)
		if tc.ok != (err == nil) {
			t.Errorf("ParseTaskID(%q) = %q, %v", tc.in, id, err)
		}
		if err != nil && !errors.Is(err, ErrBadTaskID) {
			t.Errorf("ParseTaskID(%q): error %v does not wrap ErrBadTaskID", tc.in, err)
		}
	}
	for _, name := range []string{ToolSendMessage, ToolTaskStop} {
		h := newHarness(t, replyText("x"))
		res := h.call(h.ctx(), name, map[string]any{"task_id": "../x", "message": "m"})
		if !res.IsError || !strings.Contains(res.Content, "malformed task id") {
			t.Errorf("%s with a bad id = %+v", name, res)
		}
	}
}

// A message queued into a turn that is then cancelled is not lost silently: the outcome and
// the parent's notification say it was not delivered.
func TestQueuedMessageOfCancelledTurnReported(t *testing.T) {
	t.Parallel()
	g := newGate("partial", "never")
	h := newHarness(t, g.gen)
	id := h.launchBG("investigate")
	g.wait(t)
	if res := h.send(id, "also look at X"); res.Continuation != "queued" {
		t.Fatalf("send = %+v", res)
	}
	if _, err := h.reg.Stop(id); err != nil {
		t.Fatal(err)
	}
	row := h.collect(id)
	if row.LastOutcome.Undelivered != 1 {
		t.Fatalf("undelivered = %d, want 1", row.LastOutcome.Undelivered)
	}
	h.mu.Lock()
	note := h.notes[len(h.notes)-1].Text()
	h.mu.Unlock()
	if !strings.Contains(note, "1 message(s) sent to it with send_message were not delivered") {
		t.Errorf("notification = %q", note)
	}
	if res := formatOutcome(row); !strings.Contains(res.Content, "not delivered") {
		t.Errorf("collect = %q", res.Content)
	}
}
