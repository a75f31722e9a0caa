package agents

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// Seed 003, issue 23: a collect cut short by what stops the run (a signal, --timeout)
// returns the partial findings at once — "Task interrupted. These are partial
// findings…" with the text the child had streamed, interrupted: true — as the foreground
// path does; a later collect returns the same record, and nothing says "still running".
// A task still waiting for its slot says it never started.
func TestCollectCutByTheRunKeepsPartialFindings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		queued bool // the collected task waits for a slot behind the streaming one
		want   []string
	}{
		{"running", false, []string{"status: paused (turn 1)\ninterrupted: true\nTask interrupted. These are partial findings, from before the run ended (interrupted); send_message continues it:\n<task_result>\nPARTIAL-FINDINGS so far\n</task_result>"}},
		{"queued", true, []string{"status: paused (turn 1)\ninterrupted: true\nTask interrupted before it started: it was queued when the run ended (interrupted), so it has no findings."}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				g := newGate("PARTIAL-FINDINGS so far", "never")
				h := newHarness(t, g.gen, func(c *RegistryConfig) { c.MaxBackground = 1 })
				id := h.launchBG("investigate")
				g.wait(t)
				if tc.queued {
					id = h.launchBG("after it")
				}
				// The tool call's context derives from the run's, as a parent turn's does.
				ctx, cancel := context.WithCancel(h.run)
				defer cancel()
				var res tools.Result
				done := make(chan struct{})
				go func() {
					defer close(done)
					res = h.call(ctx, ToolTask, map[string]any{"task_id": string(id)})
				}()
				synctest.Wait() // the collect waits for the task
				select {
				case <-done:
					t.Fatalf("collect returned before the run was cut: %+v", res)
				default:
				}
				h.cancelRun()
				<-done
				for _, want := range tc.want {
					if res.IsError || !strings.HasPrefix(res.Content, "task_id: "+string(id)+"\n") || !strings.Contains(res.Content, want) {
						t.Fatalf("cut collect = %+v, want it to hold %q", res, want)
					}
				}
				if strings.Contains(res.Content, "still") {
					t.Fatalf("cut collect says the task goes on: %q", res.Content)
				}
				if again := h.call(h.ctx(), ToolTask, map[string]any{"task_id": string(id)}); again != res {
					t.Fatalf("a later collect differs:\n%+v\n%+v", again, res)
				}
				if n := h.notifications(id); len(n) != 1 || n[0].Status != streamjson.StatusStopped || !n[0].Interrupted {
					t.Fatalf("notifications = %+v", n)
				}
			})
		})
	}
}

// A collect whose own context ends while the task goes on (only the caller was cut
// short) says so: the task is still running, and its result comes later.
func TestCollectCutAloneSaysStillRunning(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := newGate("so far", "DONE")
		h := newHarness(t, g.gen)
		id := h.launchBG("investigate")
		g.wait(t)
		ctx, cancel := context.WithCancel(h.ctx())
		var res tools.Result
		done := make(chan struct{})
		go func() {
			defer close(done)
			res = h.call(ctx, ToolTask, map[string]any{"task_id": string(id)})
		}()
		synctest.Wait()
		cancel()
		<-done
		if !res.IsError || !strings.Contains(res.Content, "the task is still running") {
			t.Fatalf("collect cut alone = %+v", res)
		}
		close(g.release)
		if row := h.collect(id); row.Status != "completed" || row.LastOutcome.Text != "so farDONE" {
			t.Fatalf("the task did not go on: %+v", row)
		}
	})
}
