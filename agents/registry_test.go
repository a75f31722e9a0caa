package agents

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// Seed 000, validation: a fresh background launch constructs exactly one runtime.
func TestFreshBackgroundLaunchConstructsOneRuntime(t *testing.T) {
	t.Parallel()
	h := newHarness(t, replyText("Stored."))
	id := h.launchBG("Remember NONCE-1")
	row := h.collect(id)
	if row.Status != StatusCompleted || row.LastOutcome.Text != "Stored." {
		t.Fatalf("row = %+v", row)
	}
	if n := h.runtimeCount(); n != 1 {
		t.Fatalf("constructed %d runtimes, want 1", n)
	}
	if !h.reg.Resident(id) {
		t.Fatal("completed background agent is not resident")
	}
	st := h.started(id)
	if len(st) != 1 || st[0].Continuation != streamjson.ContinuationFresh || st[0].Turn != 1 || !st[0].IsBackgrounded {
		t.Fatalf("task_started = %+v", st)
	}
}

// Seed 000, validation: two sequential turns use one chat and one prepared tool list, and
// a completed send_message prefers the resident controller.
func TestSequentialTurnsShareChatAndTools(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		// Answer from the history: the nonce of the first instruction.
		answer(yield, "seen: "+strings.Join(strings.Fields(messagesText(req.Messages)), " "))
	}, func(c *RegistryConfig) {
		c.SubagentTools = func(catalog.Definition, string) *tools.Set { return tools.NewSet(nopTool("probe")) }
	})
	id := h.launchBG("Remember NONCE-7F3A9")
	h.collect(id)
	rt := h.runtime(0)
	chat1, tools1 := rt.Chat(), rt.Tools()
	if chat1 == nil || tools1 == nil {
		t.Fatal("runtime has no chat or tools after its first turn")
	}

	res := h.send(id, "What was the nonce?")
	if res.Continuation != streamjson.ContinuationResident || res.Row.Turn != 2 || res.Row.Status != StatusRunning {
		t.Fatalf("send = %+v", res)
	}
	row := h.collect(id)
	if row.Status != StatusCompleted || !strings.Contains(row.LastOutcome.Text, "NONCE-7F3A9") {
		t.Fatalf("turn 2 row = %+v", row)
	}
	if n := h.runtimeCount(); n != 1 {
		t.Fatalf("constructed %d runtimes, want 1", n)
	}
	if rt.Chat() != chat1 {
		t.Error("turn 2 ran on a different chat")
	}
	if rt.Tools() != tools1 {
		t.Error("turn 2 ran with a different prepared tool list")
	}
	if got := len(rt.Chat().Messages()); got != 4 {
		t.Errorf("chat has %d messages, want 4 (two instructions, two replies)", got)
	}
	st := h.started(id)
	if len(st) != 2 || st[1].Continuation != streamjson.ContinuationResident || st[1].Turn != 2 || st[1].ToolUseID != "call_send" {
		t.Fatalf("task_started = %+v", st)
	}
	if n := h.notifications(id); len(n) != 2 || n[1].Turn != 2 || n[1].Status != streamjson.StatusCompleted {
		t.Fatalf("notifications = %s", mustJSON(t, n))
	}
}

// Seed 000, validation: without a resident controller, send_message revives the task from
// its transcript, and the revived model request holds the turn-1 history.
func TestSendWithoutResidentControllerRevives(t *testing.T) {
	t.Parallel()
	hooked := catalog.Definition{Name: "hooked", Prompt: "You have hooks.", HasHooks: true}
	worktree := catalog.Definition{Name: "isolated", Prompt: "You are isolated.", Isolation: "worktree"}
	tests := []struct {
		name string
		req  LaunchRequest
	}{
		{"foreground launch", LaunchRequest{Prompt: "Remember NONCE-FG"}},
		{"definition with hooks", LaunchRequest{Prompt: "Remember NONCE-HK", SubagentType: "hooked", Background: true}},
		{"worktree isolation", LaunchRequest{Prompt: "Remember NONCE-WT", SubagentType: "isolated", Background: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := gitRepo(t)
			h := newHarness(t, replyText("Stored."), func(c *RegistryConfig) {
				c.Catalog = catalog.New(append(catalog.BuiltinDefinitions(), hooked, worktree)...)
				c.CWD = repo
			})
			row := h.launch(tc.req)
			id := row.TaskID
			h.collect(id)
			if h.reg.Resident(id) {
				t.Fatal("a non-resident task kept its runtime")
			}
			if n := h.disposals(id); n != 1 {
				t.Fatalf("turn-1 controller disposed %d times, want 1", n)
			}
			if !disposed(h.runtime(0)) {
				t.Fatal("turn-1 runtime not closed")
			}

			res := h.send(id, "What was the nonce?")
			if res.Continuation != streamjson.ContinuationRevived {
				t.Fatalf("continuation = %q, want revived", res.Continuation)
			}
			row = h.collect(id)
			if row.Status != StatusCompleted || row.Turn != 2 {
				t.Fatalf("turn 2 row = %+v", row)
			}
			if n := h.runtimeCount(); n != 2 {
				t.Fatalf("constructed %d runtimes, want 2 (turn 1, revival)", n)
			}
			reqs := h.model.requests()
			if len(reqs) != 2 {
				t.Fatalf("model got %d requests, want 2", len(reqs))
			}
			got := reqs[1].Messages
			want := []llm.Message{
				llm.UserText(tc.req.Prompt),
				{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Stored.")}},
				llm.UserText("What was the nonce?"),
			}
			if !jsonEqual(t, got, want) {
				t.Fatalf("revived request messages:\n%s\nwant\n%s", mustJSON(t, got), mustJSON(t, want))
			}
			if st := h.started(id); len(st) != 2 || st[1].Continuation != streamjson.ContinuationRevived {
				t.Fatalf("task_started = %+v", st)
			}
		})
	}
}

// Seed 000, validation: the second instruction is in the JSONL transcript.
func TestSecondInstructionInTranscript(t *testing.T) {
	t.Parallel()
	h := newHarness(t, replyText("ok"))
	id := h.launchBG("first instruction")
	h.collect(id)
	h.send(id, "second instruction")
	row := h.collect(id)

	loaded, err := store.ReadTranscript(row.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Warnings) != 0 {
		t.Fatalf("warnings: %v", loaded.Warnings)
	}
	if loaded.Meta.TaskID != string(id) || loaded.Meta.SubagentType != catalog.GeneralPurpose {
		t.Fatalf("meta = %+v", loaded.Meta)
	}
	if loaded.Turns != 2 || loaded.LastStatus != string(StatusCompleted) || loaded.LastSummary != "ok" {
		t.Fatalf("turns = %d %q %q", loaded.Turns, loaded.LastStatus, loaded.LastSummary)
	}
	if !jsonEqual(t, loaded.Messages, h.runtime(0).Chat().Messages()) {
		t.Fatalf("transcript chat differs from the resident chat:\n%s\n%s", mustJSON(t, loaded.Messages), mustJSON(t, h.runtime(0).Chat().Messages()))
	}
	if len(loaded.Messages) != 4 || loaded.Messages[2].Text() != "second instruction" {
		t.Fatalf("messages = %s", mustJSON(t, loaded.Messages))
	}
}

// Seed 000, validation: shutdown, reset, task_stop, cancellation and terminal pruning
// each dispose exactly once, and close the runtime.
func TestDisposeExactlyOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		running bool // the task is running (held by the gate) when disposed
		dispose func(h *harness, id TaskID)
	}{
		{"shutdown completed", false, func(h *harness, _ TaskID) { h.reg.Shutdown(); h.reg.Shutdown() }},
		{"shutdown running", true, func(h *harness, _ TaskID) { h.reg.Shutdown() }},
		{"reset", false, func(h *harness, _ TaskID) {
			h.reg.Reset()
			if rows := h.reg.List(); len(rows) != 0 {
				h.t.Errorf("rows after reset: %+v", rows)
			}
		}},
		{"task_stop", true, func(h *harness, id TaskID) {
			if _, err := h.reg.Stop(id); err != nil {
				h.t.Fatal(err)
			}
			h.collect(id)
		}},
		{"cancel all", true, func(h *harness, id TaskID) {
			h.reg.CancelAll(errors.New("end of run"))
			h.collect(id)
		}},
		{"prune", false, func(h *harness, _ TaskID) {
			// MaxRetained is 1: a second settled row evicts the first.
			h.collect(h.launchBG("second"))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := newGate("", "done")
			if !tc.running {
				close(g.release)
			}
			h := newHarness(t, g.gen, func(c *RegistryConfig) { c.MaxRetained = 1 })
			id := h.launchBG("first")
			if tc.running {
				g.wait(t)
			} else {
				h.collect(id)
				if n := h.disposals(id); n != 0 {
					t.Fatalf("completed resident disposed %d times before the test", n)
				}
			}
			tc.dispose(h, id)
			if n := h.disposals(id); n != 1 {
				t.Fatalf("disposed %d times, want 1", n)
			}
			if !disposed(h.runtime(0)) {
				t.Fatal("runtime not closed")
			}
			if h.reg.Resident(id) {
				t.Fatal("still resident")
			}
			h.reg.Shutdown()
			if n := h.disposals(id); n != 1 {
				t.Fatalf("after a final shutdown: disposed %d times, want 1", n)
			}
		})
	}
}

// A continuation never starts before the previous turn has finished: its notification
// comes first, whether the next turn is resident or revived. The hook holds turn 1's
// task_notification open while send_message continues the (already completed) task.
func TestContinuationWaitsForPreviousTurn(t *testing.T) {
	t.Parallel()
	hooked := catalog.Definition{Name: "hooked", Prompt: "You have hooks.", HasHooks: true}
	tests := []struct {
		name string
		req  LaunchRequest
		want streamjson.Continuation
	}{
		{"resident", LaunchRequest{Prompt: "one", Background: true}, streamjson.ContinuationResident},
		{"revived", LaunchRequest{Prompt: "one", SubagentType: "hooked", Background: true}, streamjson.ContinuationRevived},
		{"revived after foreground", LaunchRequest{Prompt: "one"}, streamjson.ContinuationRevived},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inWindow := make(chan TaskID, 1)
			release := make(chan struct{})
			turn2 := make(chan struct{}, 1)
			h := newHarness(t, func(_ context.Context, req llm.Request, yield func(llm.Event, error) bool) {
				if len(req.Messages) > 1 {
					turn2 <- struct{}{}
				}
				answer(yield, "ok")
			}, func(c *RegistryConfig) {
				c.Catalog = catalog.New(append(catalog.BuiltinDefinitions(), hooked)...)
			})
			h.hook = func(ev streamjson.Event) {
				if n, ok := ev.(*streamjson.TaskNotification); ok && n.Turn == 1 {
					inWindow <- TaskID(n.TaskID)
					<-release
				}
			}
			launched := make(chan struct{})
			go func() {
				defer close(launched)
				_, _ = h.reg.Launch(context.Background(), tc.req)
			}()
			var id TaskID
			select {
			case id = <-inWindow:
			case <-time.After(testTimeout):
				t.Fatal("turn 1 never notified")
			}
			// Turn 1 committed its completion but has not finished.
			res := h.send(id, "two")
			if res.Continuation != tc.want {
				t.Fatalf("continuation = %q, want %q", res.Continuation, tc.want)
			}
			// Give a wrongly unchained turn 2 the chance to reach the model (a negative
			// check: a correct registry never gets there while turn 1 is held).
			select {
			case <-turn2:
				t.Error("turn 2 called the model before turn 1 finished")
			case <-time.After(20 * time.Millisecond):
			}
			close(release)
			<-launched
			h.collect(id)
			h.mu.Lock()
			var order []string
			for _, ev := range h.events {
				switch ev := ev.(type) {
				case *streamjson.TaskStarted:
					order = append(order, "started "+itoa(ev.Turn))
				case *streamjson.TaskNotification:
					order = append(order, "notified "+itoa(ev.Turn))
				}
			}
			h.mu.Unlock()
			want := "started 1,notified 1,started 2,notified 2"
			if got := strings.Join(order, ","); got != want {
				t.Fatalf("events = %s, want %s", got, want)
			}
		})
	}
}

// A launch racing Shutdown either fails or runs a turn that Shutdown waits for; every
// runtime constructed is closed, every controller disposed once.
func TestLaunchRacingShutdown(t *testing.T) {
	t.Parallel()
	for range 20 {
		h := newHarness(t, replyText("ok"))
		var wg sync.WaitGroup
		ids := make(chan TaskID, 4)
		for range 4 {
			wg.Go(func() {
				row, err := h.reg.Launch(context.Background(), LaunchRequest{Prompt: "x", Background: true})
				if err == nil {
					ids <- row.TaskID
				} else if !errors.Is(err, ErrShutdown) {
					t.Errorf("Launch: %v", err)
				}
				_ = h.reg.Resident(row.TaskID)
			})
		}
		wg.Go(h.reg.Shutdown)
		wg.Wait()
		h.reg.Shutdown()
		close(ids)
		for id := range ids {
			if n := h.disposals(id); n != 1 {
				t.Errorf("%s disposed %d times, want 1", id, n)
			}
		}
		for i := range h.runtimeCount() {
			if !disposed(h.runtime(i)) {
				t.Errorf("runtime %d not closed after shutdown", i)
			}
		}
	}
}

func nopTool(name string) tools.Tool {
	return tools.Func{
		ToolSpec: llm.ToolSpec{Name: name, Description: "test tool", Parameters: json.RawMessage(`{"type":"object"}`)},
		Fn:       func(context.Context, tools.Call) tools.Result { return tools.Result{Content: name + " ok"} },
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	return mustJSON(t, a) == mustJSON(t, b)
}

// After Reset the registry holds no rows and takes new work.
func TestResetForgetsRowsAndTakesNewWork(t *testing.T) {
	t.Parallel()
	h := newHarness(t, replyText("ok"))
	old := h.launchBG("first")
	h.collect(old)
	h.reg.Reset()
	if rows := h.reg.List(); len(rows) != 0 {
		t.Fatalf("rows after Reset: %v", rows)
	}
	id := h.launchBG("after reset")
	if row := h.collect(id); row.Status != StatusCompleted {
		t.Fatalf("launch after Reset: %+v", row)
	}
}
