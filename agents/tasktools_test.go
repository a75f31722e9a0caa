package agents

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
)

func TestListAgentsJSON(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		if strings.Contains(messagesText(req.Messages), "fail") {
			yield(llm.Event{}, errors.New("model down"))
			return
		}
		answer(yield, "ok")
	})
	ok := h.launch(LaunchRequest{Description: "good one", Prompt: "work", Background: true}).TaskID
	bad := h.launch(LaunchRequest{Description: "bad one", Prompt: "fail", Background: true}).TaskID
	h.collect(ok)
	h.collect(bad)

	res := h.call(h.ctx(), ToolListAgents, map[string]any{})
	if res.IsError {
		t.Fatalf("list_agents = %+v", res)
	}
	var out struct {
		Agents []map[string]any `json:"agents"`
	}
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatalf("list_agents is not JSON: %v\n%s", err, res.Content)
	}
	if len(out.Agents) != 2 {
		t.Fatalf("agents = %+v", out.Agents)
	}
	want := []string{"blocked_reason", "continuable", "description", "status", "subagent_type", "task_id", "turn"}
	byID := map[TaskID]map[string]any{}
	for _, a := range out.Agents {
		if keys := slices.Sorted(maps.Keys(a)); !slices.Equal(keys, want) {
			t.Errorf("keys = %v, want %v", keys, want)
		}
		byID[TaskID(a["task_id"].(string))] = a
	}
	g, b := byID[ok], byID[bad]
	if g["description"] != "good one" || g["subagent_type"] != catalog.GeneralPurpose || g["status"] != "completed" || g["continuable"] != true || g["blocked_reason"] != "" || g["turn"] != 1.0 {
		t.Errorf("completed entry = %v", g)
	}
	// A turn that failed keeps its history: it is continuable.
	if b["status"] != "failed" || b["continuable"] != true || b["blocked_reason"] != "" {
		t.Errorf("failed entry = %v", b)
	}
	// Oldest first.
	if out.Agents[0]["task_id"] != string(ok) {
		t.Errorf("order = %v", out.Agents)
	}
	// Caller-owned: the tools a subagent gets never include these four.
	for _, name := range []string{ToolTask, ToolSendMessage, ToolTaskStop, ToolListAgents} {
		for _, spec := range h.model.requests()[0].Tools {
			if spec.Name == name {
				t.Errorf("subagent was offered %s", name)
			}
		}
	}
}

func TestSendMessageToSettledTask(t *testing.T) {
	t.Parallel()
	// Stopped with task_stop: final.
	g := newGate("", "x")
	h := newHarness(t, g.gen)
	id := h.launchBG("p")
	g.wait(t)
	if _, err := h.reg.Stop(id); err != nil {
		t.Fatal(err)
	}
	h.collect(id)
	res := h.call(h.ctx(), ToolSendMessage, map[string]any{"task_id": string(id), "message": "more"})
	if !res.IsError || !strings.Contains(res.Content, "stopped with task_stop and cannot be continued; launch a new task") || !strings.HasPrefix(res.Content, "task_id: "+string(id)) {
		t.Fatalf("send_message = %+v", res)
	}
	if _, err := h.reg.Send(context.Background(), id, "more", "c"); !errors.Is(err, ErrNotContinuable) {
		t.Fatalf("Send: err = %v", err)
	}
	if n := len(h.started(id)); n != 1 {
		t.Fatalf("%d turns started, want 1", n)
	}
	h = newHarness(t, replyText("x"))
	res = h.call(h.ctx(), ToolSendMessage, map[string]any{"task_id": string(NewTaskID()), "message": "m"})
	if !res.IsError || !strings.Contains(res.Content, "unknown task id") {
		t.Fatalf("unknown id: %+v", res)
	}
}

func TestSendMessageResults(t *testing.T) {
	t.Parallel()
	g := newGate("", "first")
	h := newHarness(t, func(ctx context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		if len(req.Messages) == 1 {
			g.gen(ctx, req, yield)
			return
		}
		answer(yield, "next")
	})
	id := h.launchBG("p")
	g.wait(t)
	res := h.call(h.ctx(), ToolSendMessage, map[string]any{"task_id": string(id), "message": "while running"})
	if res.IsError || !strings.Contains(res.Content, "queued") {
		t.Fatalf("running: %+v", res)
	}
	close(g.release)
	row := h.collect(id)
	// The queued message was claimed at the end of the turn: same turn, one more model call.
	if row.Turn != 1 || row.LastOutcome.Text != "next" {
		t.Fatalf("row = %+v", row)
	}
	reqs := h.model.requests()
	if len(reqs) != 2 || !strings.Contains(messagesText(reqs[1].Messages), "while running") {
		t.Fatalf("requests = %+v", reqs)
	}
	res = h.call(h.ctx(), ToolSendMessage, map[string]any{"task_id": string(id), "message": "after"})
	if res.IsError || !strings.Contains(res.Content, "resident runtime as turn 2") {
		t.Fatalf("completed: %+v", res)
	}
	h.collect(id)
}

func TestTaskStopRunning(t *testing.T) {
	t.Parallel()
	g := newGate("half done", "x")
	h := newHarness(t, g.gen)
	id := h.launchBG("p")
	g.wait(t)
	res := h.call(h.ctx(), ToolTaskStop, map[string]any{"task_id": string(id)})
	if res.IsError || !strings.Contains(res.Content, "stop requested") {
		t.Fatalf("task_stop = %+v", res)
	}
	row := h.collect(id)
	if row.Status != StatusCancelled || !row.Interrupted || row.LastOutcome.Text != "half done" {
		t.Fatalf("row = %+v", row)
	}
	if !strings.Contains(row.LastOutcome.Error, ErrStopped.Error()) {
		t.Fatalf("outcome error = %q", row.LastOutcome.Error)
	}
	res = h.call(h.ctx(), ToolTaskStop, map[string]any{"task_id": string(id)})
	if !res.IsError || !strings.Contains(res.Content, "not running") {
		t.Fatalf("second task_stop = %+v", res)
	}
	if h.disposals(id) != 1 || !disposed(h.runtime(0)) {
		t.Fatal("stopped task not disposed once")
	}
}

// A launch that fails after its row was recorded is reported as a failure, never as a
// background agent that is running.
func TestTaskToolReportsLaunchFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, replyText("never"), func(c *RegistryConfig) {
		// The session directory is a file: the transcript cannot be created.
		file := filepath.Join(t.TempDir(), "not-a-dir")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		c.Store = store.At(file)
	})
	for _, bg := range []bool{true, false} {
		res := h.call(h.ctx(), ToolTask, map[string]any{"description": "d", "prompt": "p", "run_in_background": bg})
		if !res.IsError || strings.Contains(res.Content, "running in the background") || !strings.Contains(res.Content, "failed to start") {
			t.Fatalf("background=%v: result = %+v", bg, res)
		}
		id := taskIDOf(t, res)
		if row, _ := h.reg.Get(id); row.Status != StatusFailed {
			t.Fatalf("row = %+v", row)
		}
		if h.disposals(id) != 1 {
			t.Fatal("controller of the failed launch not disposed once")
		}
	}
	if n := len(h.model.requests()); n != 0 {
		t.Fatalf("model got %d requests", n)
	}
}
