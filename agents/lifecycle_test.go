package agents

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/streamjson"
)

// lifecycleRecorder records every lifecycle call, and what the registry says about the
// task while TurnSettled runs.
type lifecycleRecorder struct {
	reg    func() *Registry
	goOn   string // TurnStopping's answer, given once
	mu     sync.Mutex
	calls  []string
	issues []string
}

func (l *lifecycleRecorder) add(s string) {
	l.mu.Lock()
	l.calls = append(l.calls, s)
	l.mu.Unlock()
}

func (l *lifecycleRecorder) TurnStarted(_ context.Context, t TurnInfo) string {
	l.add(fmt.Sprintf("started %d %s", t.Turn, t.Continuation))
	return ""
}

func (l *lifecycleRecorder) TurnStopping(_ context.Context, t TurnInfo, final string, active bool) string {
	l.add(fmt.Sprintf("stopping %d %q active=%v", t.Turn, final, active))
	if !active && l.goOn != "" && t.Turn == 1 {
		return l.goOn
	}
	return ""
}

func (l *lifecycleRecorder) TurnSettled(t TurnInfo, row Row) {
	l.add(fmt.Sprintf("settled %d %s notified=%v", t.Turn, row.Status, row.Notified))
	reg := l.reg()
	// The notification is delivered: nothing is unsettled any more, so a run loop woken
	// now sees the end of the background work.
	if n := reg.Unsettled(); n != 0 {
		l.issue("Unsettled() = %d during TurnSettled", n)
	}
	// But the turn does not count as settled before TurnSettled returns.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := reg.Wait(ctx); err == nil {
		l.issue("Wait returned during TurnSettled of turn %d", t.Turn)
	}
}

func (l *lifecycleRecorder) issue(format string, args ...any) {
	l.mu.Lock()
	l.issues = append(l.issues, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *lifecycleRecorder) snapshot() ([]string, []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.calls...), append([]string(nil), l.issues...)
}

// One lifecycle hears of every turn, in order, and TurnSettled comes after the
// notification and before the turn counts as settled. A TurnStopping answer makes the
// agent go on with it.
func TestLifecycleOfTurns(t *testing.T) {
	t.Parallel()
	rec := &lifecycleRecorder{goOn: "check again"}
	h := newHarness(t, func(_ context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		last := req.Messages[len(req.Messages)-1].Text()
		answer(yield, "answer to "+last)
	}, func(c *RegistryConfig) { c.Lifecycle = rec })
	rec.reg = func() *Registry { return h.reg }
	id := h.launchBG("one")
	if row := h.collect(id); row.LastOutcome.Text != "answer to check again" {
		t.Fatalf("turn 1 outcome = %q, want the answer after the lifecycle's instruction", row.LastOutcome.Text)
	}
	if calls, _ := rec.snapshot(); len(calls) != 4 {
		t.Fatalf("after turn 1 (collected): %q", calls)
	}
	h.send(id, "two")
	h.collect(id)
	calls, issues := rec.snapshot()
	want := []string{
		"started 1 fresh",
		`stopping 1 "answer to one" active=false`,
		`stopping 1 "answer to check again" active=true`,
		"settled 1 completed notified=true",
		"started 2 resident",
		`stopping 2 "answer to two" active=false`,
		"settled 2 completed notified=true",
	}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	for _, s := range issues {
		t.Error(s)
	}
	if n := h.notifications(id); len(n) != 2 || n[1].Status != streamjson.StatusCompleted {
		t.Errorf("notifications = %+v", n)
	}
}

type stopAnswer struct {
	NopLifecycle
	answer string
	asked  *int
}

func (s stopAnswer) TurnStopping(context.Context, TurnInfo, string, bool) string {
	*s.asked++
	return s.answer
}

func TestLifecyclesFirstAnswerWins(t *testing.T) {
	t.Parallel()
	var a, b, c int
	tests := []struct {
		name string
		ls   []Lifecycle
		want string
		asks [3]int
	}{
		{"none", nil, "", [3]int{}},
		{"nil skipped", []Lifecycle{nil, stopAnswer{asked: &a}}, "", [3]int{1, 0, 0}},
		{"first answer", []Lifecycle{stopAnswer{asked: &a}, stopAnswer{answer: "x", asked: &b}, stopAnswer{answer: "y", asked: &c}}, "x", [3]int{1, 1, 0}},
	}
	for _, tt := range tests {
		a, b, c = 0, 0, 0
		if got := Lifecycles(tt.ls...).TurnStopping(context.Background(), TurnInfo{}, "", false); got != tt.want {
			t.Errorf("%s: answer %q, want %q", tt.name, got, tt.want)
		}
		if got := [3]int{a, b, c}; got != tt.asks {
			t.Errorf("%s: asked %v, want %v", tt.name, got, tt.asks)
		}
	}
}
