package agents

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/streamjson"
)

// The finishing window under load: many background agents, each sent messages from other
// goroutines right as a model call answers (just before or just after the turn settles).
// Every message is consumed exactly once (queued into the running turn, or as a new turn),
// turns of one agent are numbered 1, 2, 3, ... in order, every turn notifies exactly once,
// and Shutdown leaves no goroutine behind (goleak in TestMain).
func TestFinishingWindowStress(t *testing.T) {
	t.Parallel()
	const (
		agents  = 200
		rounds  = 3
		senders = 2 // concurrent send_message calls per round
	)
	// answering[i] receives once per model call of agent i, just before the call answers.
	answering := make([]chan struct{}, agents)
	for i := range answering {
		answering[i] = make(chan struct{}, 1+rounds*senders)
	}
	h := newHarness(t, func(_ context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		var i int
		if _, err := fmt.Sscanf(req.Messages[0].Text(), "agent-%d start", &i); err != nil {
			yield(llm.Event{}, err)
			return
		}
		answering[i] <- struct{}{}
		answer(yield, "ack")
	}, func(c *RegistryConfig) {
		c.MaxBackground = 1000
		c.MaxRetained = 1000
		c.Store = nil // no transcripts: the resident runtime never needs one
	})

	ids := make([]TaskID, agents)
	for i := range agents {
		ids[i] = h.launchBG(fmt.Sprintf("agent-%d start", i))
	}
	var (
		mu    sync.Mutex
		kinds = map[streamjson.Continuation]int{}
		wg    sync.WaitGroup
	)
	for i := range agents {
		wg.Go(func() {
			for r := range rounds {
				select {
				case <-answering[i]:
				case <-time.After(testTimeout):
					t.Errorf("agent %d: no model call for round %d", i, r)
					return
				}
				var sw sync.WaitGroup
				for s := range senders {
					sw.Go(func() {
						res, err := h.reg.Send(context.Background(), ids[i], token(i, r, s), "call_send")
						if err != nil {
							t.Errorf("agent %d: Send: %v", i, err)
							return
						}
						mu.Lock()
						kinds[res.Continuation]++
						mu.Unlock()
					})
				}
				sw.Wait()
			}
		})
	}
	wg.Wait()
	if err := h.reg.Wait(h.ctx()); err != nil {
		t.Fatal(err)
	}
	h.reg.Shutdown()
	if t.Failed() {
		return
	}
	t.Logf("continuations: %v", kinds)

	// The last request of each agent holds every message it was sent, exactly once.
	last := make([]llm.Request, agents)
	calls := make([]int, agents)
	for _, req := range h.model.requests() {
		var i int
		if _, err := fmt.Sscanf(req.Messages[0].Text(), "agent-%d start", &i); err != nil {
			t.Fatal(err)
		}
		last[i] = req
		calls[i]++
	}
	if n := h.runtimeCount(); n != agents {
		t.Errorf("constructed %d runtimes, want %d", n, agents)
	}
	for i, id := range ids {
		text := messagesText(last[i].Messages)
		for r := range rounds {
			for s := range senders {
				if c := strings.Count(text, token(i, r, s)); c != 1 {
					t.Errorf("agent %d: message %s seen %d times by the final request, want 1", i, token(i, r, s), c)
				}
			}
		}
		row, _ := h.reg.Get(id)
		st, ns := h.started(id), h.notifications(id)
		if row.Status != StatusCompleted || row.Turn != len(st) {
			t.Errorf("agent %d: row %s turn %d, %d turns started", i, row.Status, row.Turn, len(st))
		}
		if len(st) != len(ns) {
			t.Errorf("agent %d: %d turns started, %d notified", i, len(st), len(ns))
		}
		if calls[i] < len(st) || calls[i] > 1+rounds*senders {
			t.Errorf("agent %d: %d model calls for %d turns", i, calls[i], len(st))
		}
		for k, s := range st {
			want := streamjson.ContinuationResident
			if k == 0 {
				want = streamjson.ContinuationFresh
			}
			if s.Turn != k+1 || s.Continuation != want {
				t.Errorf("agent %d: task_started #%d has turn %d (%s)", i, k, s.Turn, s.Continuation)
			}
		}
		for k, n := range ns {
			if n.Turn != k+1 || n.Status != streamjson.StatusCompleted {
				t.Errorf("agent %d: task_notification #%d has turn %d (%s)", i, k, n.Turn, n.Status)
			}
		}
		if d := h.disposals(id); d != 1 {
			t.Errorf("agent %d: disposed %d times", i, d)
		}
	}
	if t.Failed() {
		return
	}
	if got := kinds[streamjson.ContinuationQueued] + kinds[streamjson.ContinuationResident]; got != agents*rounds*senders || kinds[streamjson.ContinuationRevived] != 0 {
		t.Errorf("continuations = %v", kinds)
	}
	// The window was hit from both sides: messages that the running turn claimed (queued
	// into it, just before it settled) and messages that found it settled (a resident
	// continuation, just after). A run that took one path only proved nothing about the
	// other.
	if kinds[streamjson.ContinuationQueued] == 0 || kinds[streamjson.ContinuationResident] == 0 {
		t.Errorf("continuations = %v: want both the queued and the resident path taken", kinds)
	}
}

func token(agent, round, sender int) string {
	return fmt.Sprintf("<agent-%d-msg-%d-%d>", agent, round, sender)
}
