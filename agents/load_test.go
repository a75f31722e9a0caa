package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// fanOut is a parent reply with n task calls: "job 0" … "job n-1".
func fanOut(n int, background bool) []llm.Block {
	calls := make([]llm.Block, n)
	for i := range calls {
		in, _ := json.Marshal(map[string]any{"description": fmt.Sprintf("job %d", i), "prompt": fmt.Sprintf("job %d", i), "run_in_background": background})
		calls[i] = llm.Block{Type: llm.BlockToolUse, ID: fmt.Sprintf("call_%d", i), Name: ToolTask, Input: in}
	}
	return calls
}

// parentOf returns a parent runtime over h's registry, its task tools and h's model.
func parentOf(h *harness) *runtime.Runtime {
	return runtime.New(runtime.Config{Agent: "parent", Model: h.model, Order: TaskToolOrder, Tools: func() *tools.Set { return tools.NewSet(TaskTools(h.reg)...) }})
}

// startedOrder returns the descriptions of the task_started events of turn 1, in order.
func (h *harness) startedOrder() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, ev := range h.events {
		if s, ok := ev.(*streamjson.TaskStarted); ok && s.Turn == 1 {
			out = append(out, s.Description)
		}
	}
	return out
}

func jobs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("job %d", i)
	}
	return out
}

// Issue 12: 100 background launches in one reply, under the default cap of 4, all run
// to completion, starting in the order the model wrote them; the calls over the cap are
// told their place in the queue.
func TestHundredBackgroundLaunchesQueueInOrder(t *testing.T) {
	t.Parallel()
	const n = 100
	var running, peak atomic.Int32
	launched := make(chan struct{}) // closed once the parent has every tool result
	h := newHarness(t, func(ctx context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		if req.Agent == "parent" {
			if len(req.Messages) == 1 {
				answer(yield, "", fanOut(n, true)...)
			} else {
				close(launched)
				answer(yield, "launched")
			}
			return
		}
		select {
		case <-launched:
		case <-ctx.Done():
			yield(llm.Event{}, context.Cause(ctx))
			return
		}
		now := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		answer(yield, "done "+req.Messages[0].Text())
	})
	parent := parentOf(h)
	res, err := parent.Execute(h.ctx(), llm.UserText("fan out"))
	if err != nil || res.Reason != runtime.ReasonCompleted {
		t.Fatalf("parent turn: %v %+v", err, res)
	}
	// The tool results: the first four run at once, the others are told their position.
	for i, b := range parent.Chat().Messages()[2].Content {
		want := "running in the background"
		if i >= DefaultMaxBackground {
			want = fmt.Sprintf("queued: position %d in the queue", i-DefaultMaxBackground+1)
		}
		if !strings.Contains(b.Content, want) {
			t.Fatalf("result %d = %q, want %q", i, b.Content, want)
		}
	}
	if err := h.reg.Wait(h.ctx()); err != nil {
		t.Fatal(err)
	}
	rows := h.reg.List()
	if len(rows) != n {
		t.Fatalf("%d rows, want %d", len(rows), n)
	}
	for _, r := range rows {
		if r.Status != StatusCompleted || r.LastOutcome.Text != "done "+r.Prompt {
			t.Fatalf("row %+v did not complete", r)
		}
	}
	if got := strings.Join(h.startedOrder(), ","); got != strings.Join(jobs(n), ",") {
		t.Fatalf("started in order %s", got)
	}
	if p := peak.Load(); p > DefaultMaxBackground {
		t.Fatalf("%d agents ran at once, over the cap of %d", p, DefaultMaxBackground)
	}
}

// Issue 12: foreground launches are capped (MaxForeground); the others wait their turn in
// the order of the calls, and every one completes.
func TestForegroundFanOutIsCapped(t *testing.T) {
	t.Parallel()
	const n, limit = 30, 3
	var running, peak atomic.Int32
	full := make(chan struct{}) // closed once limit agents ran at once: the cap is reached
	var fullOnce sync.Once
	h := newHarness(t, func(ctx context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		if req.Agent == "parent" {
			if len(req.Messages) == 1 {
				answer(yield, "", fanOut(n, false)...)
			} else {
				answer(yield, fmt.Sprintf("%d results", strings.Count(messagesText(req.Messages), "<task_result>")))
			}
			return
		}
		now := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		if now == limit {
			fullOnce.Do(func() { close(full) })
		}
		select {
		case <-full:
		case <-ctx.Done():
			yield(llm.Event{}, context.Cause(ctx))
			return
		}
		answer(yield, "done "+req.Messages[0].Text())
	}, func(c *RegistryConfig) { c.MaxForeground = limit })
	res, err := parentOf(h).Execute(h.ctx(), llm.UserText("fan out"))
	if err != nil || res.Reason != runtime.ReasonCompleted || res.FinalText != fmt.Sprintf("%d results", n) {
		t.Fatalf("parent turn: %v %+v", err, res)
	}
	if p := peak.Load(); p != limit {
		t.Fatalf("%d foreground agents ran at once, want %d", p, limit)
	}
	if got := strings.Join(h.startedOrder(), ","); got != strings.Join(jobs(n), ",") {
		t.Fatalf("started in order %s", got)
	}
}

// Issue 12: a queued task can be stopped (it never runs; its notification says stopped),
// takes send_message input (read once it runs), and CancelAll cancels the queue.
func TestQueuedTasksStopSendCancel(t *testing.T) {
	t.Parallel()
	g := newGate("", "held")
	var mu sync.Mutex
	var seen []string
	h := newHarness(t, func(ctx context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		text := messagesText(req.Messages)
		mu.Lock()
		seen = append(seen, req.Messages[0].Text())
		mu.Unlock()
		switch {
		case strings.HasPrefix(req.Messages[0].Text(), "hold"):
			g.gen(ctx, req, yield)
		case len(req.Messages) == 1:
			answer(yield, "", llm.Block{Type: llm.BlockToolUse, ID: "c1", Name: "nothing", Input: json.RawMessage(`{}`)})
		default:
			answer(yield, "saw: "+text)
		}
	}, func(c *RegistryConfig) { c.MaxBackground = 1 })
	holder := h.launchBG("hold")
	g.wait(t)
	stopped, messaged, last := h.launchBG("stop me"), h.launchBG("message me"), h.launchBG("last")
	for _, id := range []TaskID{stopped, messaged, last} {
		if row, _ := h.reg.Get(id); row.Status != StatusQueued {
			t.Fatalf("%s is %s, want queued", id, row.Status)
		}
	}
	if res := h.call(h.ctx(), ToolTaskStop, map[string]any{"task_id": string(stopped)}); res.IsError {
		t.Fatalf("task_stop of a queued task = %+v", res)
	}
	row := h.collect(stopped)
	if row.Status != StatusCancelled || !row.Interrupted {
		t.Fatalf("stopped queued task = %+v", row)
	}
	if n := h.notifications(stopped); len(n) != 1 || n[0].Status != streamjson.StatusStopped || len(h.started(stopped)) != 1 {
		t.Fatalf("stopped queued task: started %v, notifications %v", h.started(stopped), n)
	}
	if res := h.call(h.ctx(), ToolSendMessage, map[string]any{"task_id": string(messaged), "message": "the extra detail"}); res.IsError ||
		!strings.Contains(res.Content, "the agent waits for a slot; it reads your message once it runs") {
		t.Fatalf("send_message to a queued task = %+v", res)
	}
	close(g.release)
	h.collect(holder)
	if row := h.collect(messaged); row.Status != StatusCompleted || !strings.Contains(row.LastOutcome.Text, "the extra detail") {
		t.Fatalf("messaged queued task = %+v", row)
	}
	h.collect(last)
	mu.Lock()
	defer mu.Unlock()
	for _, p := range seen {
		if p == "stop me" {
			t.Fatalf("the stopped queued task reached the model: %v", seen)
		}
	}
}

// Issues 12 and 23: CancelAll (signals, --timeout, --background-on-exit cancel) ends
// queued turns without a model call, each with its notification; nothing promised is
// dropped: each is paused, its instruction kept, and a send_message runs it (a launch
// fresh, as its turn 1: its prompt first, then the message).
func TestCancelAllKeepsTheQueue(t *testing.T) {
	t.Parallel()
	g := newGate("", "held")
	h := newHarness(t, func(ctx context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		if last := req.Messages[len(req.Messages)-1].Text(); strings.HasPrefix(last, "later") {
			answer(yield, "did: "+last)
			return
		}
		g.gen(ctx, req, yield)
	}, func(c *RegistryConfig) { c.MaxBackground = 1 })
	h.launchBG("hold")
	g.wait(t)
	var queued []TaskID
	for i := range 5 {
		queued = append(queued, h.launchBG(fmt.Sprintf("later %d", i)))
	}
	if row, _ := h.reg.Get(queued[0]); row.Status != StatusQueued || !row.NotStarted || row.Pending != "later 0" {
		t.Fatalf("queued row = %+v", row)
	}
	h.reg.CancelAll(ErrShutdown)
	if err := h.reg.Wait(h.ctx()); err != nil {
		t.Fatal(err)
	}
	for i, id := range queued {
		row, _ := h.reg.Get(id)
		if row.Status != StatusPaused || !row.Interrupted || !row.NotStarted || row.Pending != fmt.Sprintf("later %d", i) || row.Turn != 1 || row.blocked() != "" {
			t.Fatalf("queued %s after CancelAll = %+v", id, row)
		}
		if n := h.notifications(id); len(n) != 1 || n[0].Status != streamjson.StatusStopped {
			t.Fatalf("notifications of %s = %+v", id, n)
		}
	}
	if n := len(h.model.requests()); n != 1 {
		t.Fatalf("%d model calls, want only the holder's", n)
	}
	res := h.call(h.ctx(), ToolTask, map[string]any{"task_id": string(queued[0])})
	if !strings.Contains(res.Content, "interrupted: true\nTask interrupted before it started: it was queued when the run ended (registry shut down)") {
		t.Fatalf("collect of a turn that never started = %q", res.Content)
	}
	close(g.release)
	sent := h.call(h.ctx(), ToolSendMessage, map[string]any{"task_id": string(queued[0]), "message": "now go"})
	if sent.IsError || !strings.Contains(sent.Content, "it runs now as turn 1, its prompt first, then your message") {
		t.Fatalf("send_message to a launch that never started = %+v", sent)
	}
	row := h.collect(queued[0])
	if row.Status != StatusCompleted || row.Turn != 1 || row.LastOutcome.Text != "did: later 0\n\nnow go" || row.NotStarted || row.Pending != "" {
		t.Fatalf("its turn = %+v", row)
	}
	if st := h.started(queued[0]); len(st) != 2 || st[1].Turn != 1 || st[1].Continuation != streamjson.ContinuationFresh {
		t.Fatalf("task_started of the fresh start = %+v", st)
	}
}

// alwaysBlock is a lifecycle whose stop hook never lets the agent stop; it records the
// stop_hook_active flag of each call.
type alwaysBlock struct {
	NopLifecycle
	mu     sync.Mutex
	active []bool
}

func (a *alwaysBlock) TurnStopping(_ context.Context, _ TurnInfo, _ string, active bool) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.active = append(a.active, active)
	return "not yet"
}

// Issue 12: a SubagentStop hook that always blocks ends the turn after
// DefaultMaxStopBlocks blocks, with reason max_turns, told to the parent; the hook hears
// stop_hook_active from the second time on.
func TestSubagentStopHookThatAlwaysBlocks(t *testing.T) {
	t.Parallel()
	hook := &alwaysBlock{}
	h := newHarness(t, replyText("finished, I think"), func(c *RegistryConfig) { c.Lifecycle = hook })
	id := h.launchBG("work")
	row := h.collect(id)
	if row.Status != StatusFailed || row.LastOutcome.Reason != runtime.ReasonMaxTurns || !strings.Contains(row.LastOutcome.Error, "stop hook kept blocking") {
		t.Fatalf("row = %+v", row)
	}
	if n := len(h.model.requests()); n != runtime.DefaultMaxStopBlocks+1 {
		t.Fatalf("%d model calls, want %d", n, runtime.DefaultMaxStopBlocks+1)
	}
	hook.mu.Lock()
	defer hook.mu.Unlock()
	if len(hook.active) != runtime.DefaultMaxStopBlocks+1 || hook.active[0] || !hook.active[1] {
		t.Fatalf("stop_hook_active flags = %v", hook.active)
	}
	if n := h.notifications(id); len(n) != 1 || n[0].Status != streamjson.StatusFailed || n[0].Reason != runtime.ReasonMaxTurns {
		t.Fatalf("notifications = %+v", n)
	}
}

// Issue 12: notifications delivered together share a bounded result budget; a long
// result is cut at a character boundary with a pointer to the whole of it; one
// notification alone keeps its format (its note included) and up to NotifyResultBytes.
func TestNotificationsMessageIsBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", NotifyResultBytes) // 2 bytes each
	note := func(i int, text string) Notification {
		return Notification{Row: Row{TaskID: TaskID(fmt.Sprintf("a%016x", i)), Turn: 1, Description: "d", SubagentType: catalog.GeneralPurpose,
			Transcript: "/home/s/agents/x.jsonl", LastOutcome: Outcome{Text: text}}, ToolUseID: "call", Status: "completed"}
	}
	one := NotificationsMessage([]Notification{note(0, long)})
	if len(one.Content) != 1 || !strings.Contains(one.Content[0].Text, "<note>") || len(one.Content[0].Text) > NotifyResultBytes+2048 {
		t.Fatalf("one notification: %d blocks, %d bytes", len(one.Content), len(one.Content[0].Text))
	}
	if !strings.Contains(one.Content[0].Text, "[cut: "+fmt.Sprint(len(long)-NotifyResultBytes)+" more bytes; the whole result: task with task_id a0000000000000000, or the output file /home/s/agents/x.jsonl]") {
		t.Fatalf("no pointer to the whole result: %s", one.Content[0].Text[len(one.Content[0].Text)-300:])
	}
	var batch []Notification
	for i := range 100 {
		text := "short"
		if i%10 == 0 {
			text = long
		}
		batch = append(batch, note(i, text))
	}
	m := NotificationsMessage(batch)
	if len(m.Content) != 101 || !strings.Contains(m.Content[100].Text, "<note>") {
		t.Fatalf("%d blocks, want 100 and the note", len(m.Content))
	}
	size := 0
	for i, b := range m.Content[:100] {
		size += len(b.Text)
		if !utf8.ValidString(b.Text) || strings.Contains(b.Text, "<note>") {
			t.Fatalf("block %d is not a clean notification", i)
		}
		if i%10 != 0 && !strings.Contains(b.Text, "<result>short</result>") {
			t.Fatalf("a short result was cut: %s", b.Text)
		}
	}
	if size > 100*1024 {
		t.Fatalf("100 notifications take %d bytes", size)
	}
}
