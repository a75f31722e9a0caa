package headless

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/streamjson"
)

// Issue 12 (the small version of the 1,000-agent benchmark): 200 background agents
// launched in one reply, finishing over a second, all complete, are stored completed, and
// reach the parent in a handful of turns: their notifications are coalesced, not one
// parent turn each.
func TestFanOutCoalescesNotifications(t *testing.T) {
	t.Parallel()
	const n = 200
	s, err := scripted.Parse("fan-out", scripted.FanOut{Agents: n, Spread: time.Second}.YAML())
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(s)
	var out bytes.Buffer
	o := opts(t, m, &out)
	o.Prompt, o.MaxBackground = "fan out", n
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := Run(ctx, o); err != nil {
		t.Fatalf("run: %v", err)
	}

	var parent []llm.Request
	for _, r := range m.Requests() {
		if r.Agent == "parent" {
			parent = append(parent, r)
		}
	}
	t.Logf("%d parent model calls", len(parent))
	if len(parent) > 10 {
		t.Errorf("the parent took %d model calls for %d notifications, want at most 10", len(parent), n)
	}
	last := parent[len(parent)-1]
	var seen strings.Builder
	for _, msg := range last.Messages {
		for _, b := range msg.Content {
			seen.WriteString(b.Text)
		}
	}
	for i := range n {
		if !strings.Contains(seen.String(), fmt.Sprintf("<result>done job %d</result>", i)) {
			t.Fatalf("the parent never read the notification of job %d", i)
		}
	}
	if c := strings.Count(seen.String(), "<task-notification>"); c != n {
		t.Errorf("the parent read %d notifications, want %d", c, n)
	}

	sidecars, warnings := agents.ReadSidecars(store.New(o.Home, o.CWD, o.SessionID))
	if len(warnings) > 0 || len(sidecars) != n {
		t.Fatalf("%d sidecars (warnings %v), want %d", len(sidecars), warnings, n)
	}
	for _, sc := range sidecars {
		if sc.Status != agents.StatusCompleted || !strings.HasPrefix(sc.LastOutcome.Text, "done job ") {
			t.Fatalf("stored row %+v", sc.Row)
		}
	}
	ls := lines(t, out.String())
	if r := ls[len(ls)-1]; r.Get("subtype").String() != "success" || r.Get("result").String() != "Noted." {
		t.Errorf("result line %s", r.Raw)
	}
}

// The mailbox holds notifications while other agents are at work, for at most the
// window from the oldest one; it delivers them at once when none is; a full batch is due
// at once, and a batch takes at most notifyBatch of them in one message. Under load the
// window doubles with each delivery (up to notifyWindows windows) and starts over once
// the agents pause.
func TestMailboxCoalescing(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	active := 3
	var emitted int
	mb := newMailbox(func(streamjson.Event) { emitted++ }, time.Second)
	mb.now = func() time.Time { return now }
	mb.active = func() int { return active }
	note := func(i int) agents.Notification {
		return agents.Notification{Row: agents.Row{TaskID: agents.TaskID(fmt.Sprintf("a%016x", i)), Turn: 1,
			LastOutcome: agents.Outcome{Text: fmt.Sprintf("result %d", i)}}, ToolUseID: "call", Status: "completed"}
	}
	if d := mb.due(); d != 0 {
		t.Fatalf("due with nothing pending = %v", d)
	}
	mb.Push(note(0))
	now = now.Add(300 * time.Millisecond)
	mb.Push(note(1))
	if d := mb.due(); d != 700*time.Millisecond {
		t.Fatalf("due = %v, want the rest of the oldest's window", d)
	}
	if got := mb.Settle("done"); got != nil {
		t.Fatalf("Settle took notifications that are not due: %v", got)
	}
	now = now.Add(700 * time.Millisecond)
	msgs := mb.Settle("done")
	if len(msgs) != 1 || len(msgs[0].Content) != 3 || !strings.Contains(msgs[0].Content[1].Text, "result 1") || emitted != 1 {
		t.Fatalf("Settle = %+v (emitted %d), want one message of two notifications and the note", msgs, emitted)
	}
	// Agents still at work: the next window is twice as long, then four times…
	for _, want := range []time.Duration{2, 4, 8, 8} {
		mb.Push(note(2))
		if d := mb.due(); d != want*time.Second {
			t.Fatalf("window under load = %v, want %v", d, want*time.Second)
		}
		now = now.Add(want * time.Second)
		if _, ok := mb.take(); !ok {
			t.Fatal("nothing to take")
		}
	}
	// …until the agents pause: it starts over.
	now = now.Add(time.Minute)
	mb.Push(note(3))
	if d := mb.due(); d != time.Second {
		t.Fatalf("window after a pause = %v, want 1s", d)
	}
	active = 0
	if d := mb.due(); d != 0 {
		t.Fatalf("due with no agent at work = %v", d)
	}
	mb.take()
	active = 3
	for i := range notifyBatch + 5 {
		mb.Push(note(i))
	}
	if d := mb.due(); d != 0 {
		t.Fatalf("due with a full batch = %v", d)
	}
	m, ok := mb.take()
	if !ok || len(m.Content) != notifyBatch+1 || mb.empty() {
		t.Fatalf("take of a batch: %d blocks, empty %v", len(m.Content), mb.empty())
	}
	if d := mb.due(); d <= 0 {
		t.Fatalf("the rest are due after a window of their own, got %v", d)
	}
}
