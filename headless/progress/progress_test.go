package progress

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/streamjson"
	"github.com/stoke-cli/stoke/streamjson/streamjsontest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// run plays a run's events: the parent launches two background agents (one refused, one
// queued behind it), both run; one completes, one fails.
func events() []streamjson.Event {
	launch := func(id string, input string) streamjson.Block {
		return streamjson.Block{Type: "tool_use", ID: id, Name: "task", Input: json.RawMessage(input)}
	}
	a := streamjson.NewAssistant("m1", "gpt-4o", nil, "tool_use", llm.Usage{InputTokens: 1000, OutputTokens: 500})
	a.Message.Content = []streamjson.Block{
		launch("c1", `{"subagent_type":"explorer","prompt":"x","run_in_background":true}`),
		launch("c2", `{"subagent_type":"worker","prompt":"y","run_in_background":true}`),
		launch("c3", `{"subagent_type":"nope","prompt":"z"}`),
		launch("c4", `{"task_id":"t_9"}`), // a collect, not a launch
	}
	refused := &streamjson.User{Message: streamjson.UserMessage{Role: "user", Content: []streamjson.Block{
		{Type: "tool_result", ToolUseID: "c3", Content: "unknown subagent_type", IsError: true},
	}}}
	s1 := &streamjson.TaskStarted{TaskID: "t_1", ToolUseID: "c1", SubagentType: "explorer", Description: "Look around", Turn: 1, Continuation: "fresh", IsBackgrounded: true}
	s2 := &streamjson.TaskStarted{TaskID: "t_2", ToolUseID: "c2", SubagentType: "worker", Description: "Do it", Turn: 1, Continuation: "fresh", IsBackgrounded: true}
	sub := streamjson.NewAssistant("m2", "gpt-4o", nil, "end_turn", llm.Usage{InputTokens: 2000, OutputTokens: 100})
	sub.TaskID = "t_1"
	n1 := &streamjson.TaskNotification{TaskID: "t_1", Status: "completed", Turn: 1, Summary: "found it", Usage: streamjson.TaskUsage{TotalTokens: 2100, ToolUses: 3, DurationMS: 1500}}
	n2 := &streamjson.TaskNotification{TaskID: "t_2", Status: "failed", Turn: 1, Summary: "model call: HTTP 500:\n boom", Usage: streamjson.TaskUsage{TotalTokens: 10}}
	return []streamjson.Event{a, refused, s1, s2, sub, n1, n2}
}

// TestPlain: one line per agent start, finish and failure, the heartbeat, nothing else.
func TestPlain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out streamjsontest.SyncBuffer
		r := New(Config{Mode: ModePlain, Out: &out, Prices: price.Default()})
		r.Start()
		for _, ev := range events() {
			r.Observe(ev)
		}
		time.Sleep(25 * time.Second) // fake time: two heartbeats
		synctest.Wait()
		r.Stop()
		r.Observe(events()[2]) // after Stop: ignored
		cost := fmt.Sprintf("$%.4f", price.Default().Cost("gpt-4o", llm.Usage{InputTokens: 3000, OutputTokens: 600}))
		want := []string{
			"stoke: agent started: explorer t_1 (turn 1, fresh, background): Look around",
			"stoke: agent started: worker t_2 (turn 1, fresh, background): Do it",
			"stoke: agent completed: explorer t_1 (turn 1, 1.5s, 2100 tokens, 3 tool uses)",
			"stoke: agent failed: worker t_2 (turn 1, 0s, 10 tokens, 0 tool uses): model call: HTTP 500: boom",
			"stoke: progress: agents 0 running, 0 queued, 2 done · turn 1 · 3.6k tokens · " + cost + " · 10s",
			"stoke: progress: agents 0 running, 0 queued, 2 done · turn 1 · 3.6k tokens · " + cost + " · 20s",
		}
		if got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("plain output:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// TestLive: the status line is drawn in place, counts queued launches, never wraps,
// steps aside for log lines, and is erased at Stop.
func TestLive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out streamjsontest.SyncBuffer
		var width atomic.Int64
		width.Store(60)
		r := New(Config{Mode: ModeAuto, Out: &out, Terminal: true, Width: func() int { return int(width.Load()) }, Prices: price.Default()})
		r.Start()
		evs := events()
		r.Observe(evs[0]) // two launches pending (c3 until refused)
		if got := lastLine(out.String()); !strings.HasPrefix(got, "stoke: agents 0 running, 3 queued, 0 done · turn 1") || len([]rune(got)) > 59 {
			t.Errorf("live line %q, want 3 queued, at most 59 columns", got)
		}
		for _, ev := range evs[1:4] {
			r.Observe(ev)
		}
		if got := lastLine(out.String()); !strings.HasPrefix(got, "stoke: agents 2 running, 0 queued, 0 done") {
			t.Errorf("live line %q, want 2 running", got)
		}
		before := out.String()
		_, _ = r.Writer().Write([]byte("level=WARN msg=hello\n"))
		if got := strings.TrimPrefix(out.String(), before); !strings.HasPrefix(got, "\r\x1b[Klevel=WARN msg=hello\n\r\x1b[Kstoke: agents 2 running") {
			t.Errorf("a log write gave %q, want erase, the line, redraw", got)
		}
		width.Store(200)
		time.Sleep(3 * time.Second) // the clock moves: redrawn every second
		synctest.Wait()
		if got := lastLine(out.String()); !strings.Contains(got, "· 3s") {
			t.Errorf("live line %q after 3 s", got)
		}
		r.Stop()
		if !strings.HasSuffix(out.String(), "\r\x1b[K") {
			t.Errorf("output ends %q, want the line erased", out.String()[max(0, len(out.String())-40):])
		}
	})
}

// lastLine is what a terminal shows on the status row: the text after the last erase.
func lastLine(s string) string {
	return s[strings.LastIndex(s, "\r\x1b[K")+len("\r\x1b[K"):]
}

func TestQuiet(t *testing.T) {
	for name, cfg := range map[string]Config{
		"off":                     {Mode: ModeOff, Terminal: true},
		"auto without a terminal": {Mode: ModeAuto},
	} {
		t.Run(name, func(t *testing.T) {
			var out streamjsontest.SyncBuffer
			cfg.Out = &out
			r := New(cfg)
			r.Start()
			for _, ev := range events() {
				r.Observe(ev)
			}
			_, _ = r.Writer().Write([]byte("log\n"))
			r.Stop()
			if out.String() != "log\n" {
				t.Errorf("wrote %q, want only the log line", out.String())
			}
		})
	}
}
