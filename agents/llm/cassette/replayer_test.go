package cassette

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
)

func TestStrictReplayNamesTheFirstDifference(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "look.yaml")
	record(t, mustScenario(t, lookScenario), path, RecordConfig{}, "main.go", "package main")

	for _, tc := range []struct {
		name   string
		change func(c *conv, second *llm.Message)
		want   string
	}{
		{"prompt", func(c *conv, _ *llm.Message) { c.req.Messages[0] = llm.UserText("main.rs") }, "messages[0].content[0].text"},
		{"system", func(c *conv, _ *llm.Message) { c.req.System = "You are someone else." }, "at system"},
		{"model", func(c *conv, _ *llm.Message) { c.req.Model = "m2" }, `model (recorded "m1", now "m2")`},
		{"tool added", func(c *conv, _ *llm.Message) {
			c.req.Tools = append(c.req.Tools, llm.ToolSpec{Name: "grep", Parameters: []byte(`{}`)})
		}, "tools (recorded 2, now 3)"},
		{"tool described", func(c *conv, _ *llm.Message) {
			c.req.Tools = append([]llm.ToolSpec{{Name: "read_file", Description: "new words", Parameters: []byte(`{"type":"object"}`)}}, c.req.Tools[1:]...)
		}, "tools[0] (read_file): description or parameters"},
		{"tool result", func(_ *conv, m *llm.Message) { m.Content[0].Content = "package other" }, "messages[2].content[0].content"},
		{"tool error", func(_ *conv, m *llm.Message) { m.Content[0].IsError = true }, "messages[2].content[0].is_error"},
		{"tool use id", func(_ *conv, m *llm.Message) { m.Content[0].ToolUseID = "call_9" }, "messages[2].content[0].tool_use_id (recorded call_parent_1_1, now call_9)"},
		{"extra block", func(_ *conv, m *llm.Message) { m.Content = append(m.Content, llm.TextBlock("and more")) }, "messages[2].content (recorded 1 blocks, now 2)"},
		{"assistant edited", func(c *conv, _ *llm.Message) { c.req.Messages[1].Content[0] = llm.TextBlock("I looked.") }, "messages[1].content[0].text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var failed []error
			var mu sync.Mutex
			p := mustOpen(t, path, ReplayConfig{OnFail: func(err error) { mu.Lock(); failed = append(failed, err); mu.Unlock() }})
			c := newConv(t.Context(), "parent", "You are stoke.", "read_file", "task")
			a := c.send(p, llm.UserText("main.go"))
			if a.err != nil {
				t.Fatalf("call 1: %v", a.err)
			}
			second := results(a, "package main")
			tc.change(c, &second)
			b := c.send(p, second)
			if !errors.Is(b.err, ErrMismatch) {
				t.Fatalf("call 2: err = %v, want ErrMismatch", b.err)
			}
			msg := b.err.Error()
			if !strings.Contains(msg, "agent parent, call 2") || !strings.Contains(msg, tc.want) {
				t.Errorf("error %q: want the agent, the call and %q", msg, tc.want)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(failed) != 1 || failed[0] != b.err {
				t.Errorf("OnFail got %v, want the error once", failed)
			}
			// The replay is over: any later call fails with the same error.
			if later := call(t.Context(), p, &llm.Request{Agent: "parent", Messages: []llm.Message{llm.UserText("main.go")}}); later.err != b.err {
				t.Errorf("a later call: %v", later.err)
			}
		})
	}
}

func TestLenientReplayAnswersAndWarns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "look.yaml")
	want := record(t, mustScenario(t, lookScenario), path, RecordConfig{}, "main.go", "package main")
	var logs bytes.Buffer
	p := mustOpen(t, path, ReplayConfig{Mode: ModeLenient, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c := newConv(t.Context(), "parent", "You are stoke.", "read_file", "task")
	a := c.send(p, llm.UserText("main.rs"))
	if a.err != nil || a.text != want[0].text {
		t.Fatalf("lenient call: %q %v, want the recorded %q", a.text, a.err, want[0].text)
	}
	if !strings.Contains(logs.String(), "field=messages[0].content[0].text") || !strings.Contains(logs.String(), "agent=parent call=1") {
		t.Errorf("want a warning naming the agent, call and field, got %q", logs.String())
	}
	// Past the recording, even a lenient replay cannot answer.
	c.send(p, results(a, "fn main"))
	if extra := c.send(p, llm.UserText("more")); !errors.Is(extra.err, ErrNotRecorded) || !strings.Contains(extra.err.Error(), "agent parent, call 3") {
		t.Errorf("call 3: %v, want ErrNotRecorded naming it", extra.err)
	}
}

// TestStrictReplayKeepsTheRecordedOrder records a run where a background agent's answer
// came after the parent's next request and after nothing else, then replays it with the
// agent's call made first: its answer waits for the parent's request; and the parent's
// call recorded after the agent's turn ended waits for that end.
func TestStrictReplayKeepsTheRecordedOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c.yaml")
		gate := make(chan struct{})
		rec, err := Record(&gated{launch: "call_launch_1", gates: map[string]chan struct{}{"general-purpose": gate}}, RecordConfig{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		parent := newConv(t.Context(), "parent", "p", "task")
		launch := parent.send(rec, llm.UserText("go"))
		taskID := rec.NewTaskID(launch.calls[0].ID)
		agentCtx, endTurn := context.WithCancel(llm.WithTaskID(t.Context(), taskID))
		agent := newConv(agentCtx, "general-purpose", "a")
		var wg sync.WaitGroup
		wg.Go(func() { agent.send(rec, llm.UserText("remember")) })
		synctest.Wait() // the agent's request is out, its answer held
		parent.send(rec, results(launch, "task_id: "+taskID))
		close(gate)
		wg.Wait()
		endTurn()
		synctest.Wait()
		parent.send(rec, llm.UserText("notification"))
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}

		p := mustOpen(t, path, ReplayConfig{})
		parent = newConv(t.Context(), "parent", "p", "task")
		launch = parent.send(p, llm.UserText("go"))
		if id := p.NewTaskID(launch.calls[0].ID); id != taskID {
			t.Fatalf("replayed task id %s, recorded %s", id, taskID)
		}
		agentCtx, endTurn = context.WithCancel(llm.WithTaskID(t.Context(), taskID))
		agent = newConv(agentCtx, "general-purpose", "a")
		answered := make(chan answer, 1)
		go func() { answered <- agent.send(p, llm.UserText("remember")) }()
		synctest.Wait()
		select {
		case a := <-answered:
			t.Fatalf("the agent was answered before the parent's recorded request: %+v", a)
		default:
		}
		if a := parent.send(p, results(launch, "task_id: "+taskID)); a.err != nil {
			t.Fatal(a.err)
		}
		if a := <-answered; a.err != nil || a.text != "general-purpose remember" {
			t.Fatalf("agent: %+v", a)
		}
		notified := make(chan answer, 1)
		go func() { notified <- parent.send(p, llm.UserText("notification")) }()
		synctest.Wait()
		select {
		case a := <-notified:
			t.Fatalf("the parent was answered before the agent's turn ended: %+v", a)
		default:
		}
		endTurn()
		if a := <-notified; a.err != nil {
			t.Fatal(a.err)
		}
		if u := p.Unplayed(); len(u) != 0 {
			t.Errorf("unplayed: %v", u)
		}
	})
}

func TestReplayTiming(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c.yaml")
		rec, err := Record(&gated{sleep: 3 * time.Second}, RecordConfig{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		newConv(t.Context(), "parent", "p").send(rec, llm.UserText("hi"))
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			timing string
			want   time.Duration
		}{{"", 0}, {TimingZero, 0}, {TimingReal, 3 * time.Second}} {
			p := mustOpen(t, path, ReplayConfig{Timing: tc.timing})
			start := time.Now()
			if a := newConv(t.Context(), "parent", "p").send(p, llm.UserText("hi")); a.err != nil {
				t.Fatal(a.err)
			}
			if took := time.Since(start); took != tc.want {
				t.Errorf("timing %q: the answer took %v, want %v", tc.timing, took, tc.want)
			}
		}
	})
}

func TestReplayConfigErrors(t *testing.T) {
	t.Parallel()
	f := &File{Cassette: Header{Version: Version, Seed: "00112233445566778899aabbccddeeff"}}
	for _, cfg := range []ReplayConfig{{Mode: "loose"}, {Timing: "fast"}} {
		if _, err := NewReplayer(f, cfg); err == nil {
			t.Errorf("%+v: want an error", cfg)
		}
	}
}

// A cassette recorded in one checkout replays in another: the workspace root is masked
// in fingerprints, as are the durations stoke writes into notifications.
func TestReplayInAnotherCheckout(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.yaml")
	rec, err := Record(mustScenario(t, lookScenario), RecordConfig{Path: path, CWD: "/home/dev/proj"})
	if err != nil {
		t.Fatal(err)
	}
	c := newConv(t.Context(), "parent", "You are stoke.", "read_file")
	a := c.send(rec, llm.UserText("main.go"))
	c.send(rec, results(a, "read /home/dev/proj/main.go <usage><duration_ms>812</duration_ms></usage>"))
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cwd, result string
		ok          bool
	}{
		{"/ci/checkout", "read /ci/checkout/main.go <usage><duration_ms>3</duration_ms></usage>", true},
		{"/ci/checkout", "read /ci/checkout/other.go <usage><duration_ms>3</duration_ms></usage>", false},
		{"/ci/checkout", "read /home/dev/proj/main.go <usage><duration_ms>812</duration_ms></usage>", false},
	} {
		p := mustOpen(t, path, ReplayConfig{CWD: tc.cwd})
		c := newConv(t.Context(), "parent", "You are stoke.", "read_file")
		a := c.send(p, llm.UserText("main.go"))
		b := c.send(p, results(a, tc.result))
		if (b.err == nil) != tc.ok {
			t.Errorf("cwd %s, result %q: err = %v, want ok=%v", tc.cwd, tc.result, b.err, tc.ok)
		}
	}
}

// TestStrictReplayGoesOnInOneTurn records an agent whose first turn ended before its
// next call (the parent's turn ended, and the notifications that came next started a
// new one) and replays it with both calls in one turn (the notifications were already
// queued when the first answer ended, so the turn went on with them): the same
// requests, so the second call is answered, not held for the end of a turn that cannot
// end before it is.
func TestStrictReplayGoesOnInOneTurn(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "c.yaml")
		rec, err := Record(&gated{}, RecordConfig{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		turn1, endTurn1 := context.WithCancel(t.Context())
		parent := newConv(turn1, "parent", "p")
		parent.send(rec, llm.UserText("go"))
		endTurn1()
		synctest.Wait()
		parent.ctx = t.Context()
		parent.send(rec, llm.UserText("notification"))
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}

		p := mustOpen(t, path, ReplayConfig{})
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		parent = newConv(ctx, "parent", "p")
		for _, msg := range []string{"go", "notification"} {
			if a := parent.send(p, llm.UserText(msg)); a.err != nil || a.text != "parent "+msg {
				t.Fatalf("call %q in one turn: %q %v", msg, a.text, a.err)
			}
		}
	})
}
