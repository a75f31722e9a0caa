package agents

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// Hooks run once per turn, continuations included, with the documented JSON on stdin.
func TestHooksOncePerTurn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "hooks.jsonl")
	script := "cat >> " + log + "; echo >> " + log
	cfg := hooks.Config{
		hooks.SubagentStart: {{Command: script, Timeout: hooks.DefaultTimeout}},
		hooks.SubagentStop:  {{Command: script, Timeout: hooks.DefaultTimeout}},
	}
	h := newHarness(t, replyText("ok"), func(c *RegistryConfig) {
		c.Hooks, c.HookRunner, c.CWD = cfg, &hooks.Runner{Dir: dir}, dir
	})
	id := h.launchBG("first")
	h.collect(id)
	if res := h.send(id, "second"); res.Continuation != streamjson.ContinuationResident {
		t.Fatalf("settings hooks made the agent non-resident: %s", res.Continuation)
	}
	h.collect(id)
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" {
			continue
		}
		j := gjson.Parse(l)
		if j.Get("task_id").String() != string(id) || j.Get("subagent_type").String() != catalog.GeneralPurpose || j.Get("cwd").String() != dir {
			t.Errorf("hook input lacks the task's keys: %s", l)
		}
		ev := j.Get("hook_event_name").String()
		if ev == string(hooks.SubagentStop) && j.Get("last_message").String() != "ok" {
			t.Errorf("SubagentStop without last_message: %s", l)
		}
		got = append(got, ev+"/"+j.Get("turn").String()+"/"+j.Get("continuation").String())
	}
	want := "SubagentStart/1/fresh SubagentStop/1/fresh SubagentStart/2/resident SubagentStop/2/resident"
	if strings.Join(got, " ") != want {
		t.Errorf("hook runs = %v, want %s", got, want)
	}
}

// A SubagentStop hook that blocks makes the agent go on with the hook's reason; the
// statistics of the instruction add up across that retry.
func TestSubagentStopHookMakesAgentGoOn(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flag := filepath.Join(dir, "blocked-once")
	script := `if [ ! -e ` + flag + ` ]; then touch ` + flag + `; echo "check the tests too" >&2; exit 2; fi`
	h := newHarness(t, replyText("done"), func(c *RegistryConfig) {
		c.Hooks = hooks.Config{hooks.SubagentStop: {{Command: script, Timeout: hooks.DefaultTimeout}}}
		c.HookRunner, c.CWD = &hooks.Runner{Dir: dir}, dir
	})
	id := h.launchBG("work")
	row := h.collect(id)
	reqs := h.model.requests()
	if len(reqs) != 2 || !strings.Contains(messagesText(reqs[1].Messages), "check the tests too") {
		t.Fatalf("the agent did not go on with the hook's reason: %d requests", len(reqs))
	}
	if row.LastOutcome.Usage.TotalTokens == 0 || len(h.notifications(id)) != 1 {
		t.Errorf("row = %+v", row)
	}
	n := h.notifications(id)[0]
	if n.Turn != 1 || n.Status != streamjson.StatusCompleted {
		t.Errorf("notification = %+v", n)
	}
}

// Residents are released when the workspace changes; their rows stay completed and the
// next send_message revives them.
func TestReleaseResidents(t *testing.T) {
	t.Parallel()
	h := newHarness(t, replyText("ok"))
	id := h.launchBG("first")
	h.collect(id)
	if !h.reg.Resident(id) {
		t.Fatal("not resident after a completed background turn")
	}
	if n := h.reg.ReleaseResidents("test"); n != 1 {
		t.Fatalf("released %d, want 1", n)
	}
	if h.reg.Resident(id) || h.disposals(id) != 1 {
		t.Fatalf("resident %v after release, disposals %d", h.reg.Resident(id), h.disposals(id))
	}
	if row, _ := h.reg.Get(id); row.Status != StatusCompleted {
		t.Fatalf("row after release = %s", row.Status)
	}
	if res := h.send(id, "second"); res.Continuation != streamjson.ContinuationRevived {
		t.Fatalf("continuation = %s, want revived", res.Continuation)
	}
	h.collect(id)
}

// A turn waiting for its slot keeps the runtime it was given: a change of workspace
// while a launch and a resident continuation are queued releases neither (the launch has
// no history to revive from, the continuation was told it runs resident), and both then
// run on their own runtimes.
func TestReleaseResidentsSparesQueuedTurns(t *testing.T) {
	t.Parallel()
	g := newGate("", "held")
	h := newHarness(t, func(ctx context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		if req.Messages[0].Text() == "hold" && len(req.Messages) == 1 {
			g.gen(ctx, req, yield)
			return
		}
		answer(yield, "did "+req.Messages[len(req.Messages)-1].Text())
	}, func(c *RegistryConfig) { c.MaxBackground = 1 })
	resident := h.launchBG("first")
	h.collect(resident)
	holder := h.launchBG("hold")
	g.wait(t)
	launched := h.launchBG("queued work")
	if res := h.send(resident, "more work"); res.Continuation != streamjson.ContinuationResident || res.Position != 2 {
		t.Fatalf("send to a resident task behind a queued launch = %+v", res)
	}
	for _, id := range []TaskID{launched, resident} {
		if row, _ := h.reg.Get(id); row.Status != StatusQueued {
			t.Fatalf("%s is %s, want queued", id, row.Status)
		}
	}
	if n := h.reg.ReleaseResidents("test"); n != 0 {
		t.Fatalf("released %d runtimes, want none: one task runs and two wait for their slots", n)
	}
	close(g.release)
	h.collect(holder)
	if row := h.collect(launched); row.Status != StatusCompleted || row.LastOutcome.Text != "did queued work" {
		t.Fatalf("queued launch = %+v", row)
	}
	if row := h.collect(resident); row.Status != StatusCompleted || row.LastOutcome.Text != "did more work" {
		t.Fatalf("queued continuation = %+v", row)
	}
	if n := h.runtimeCount(); n != 3 {
		t.Fatalf("%d runtimes constructed, want 3 (one per task: nothing revived)", n)
	}
}

// An isolated agent's fresh turn runs in a temporary worktree; the result says what
// became of it (removed: the agent changed nothing).
func TestWorktreeTurnResult(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	var roots []string
	h := newHarness(t, replyText("looked around"), func(c *RegistryConfig) {
		c.Catalog = catalog.New(append(catalog.BuiltinDefinitions(), catalog.Definition{Name: "iso", Prompt: "p", Isolation: "worktree"})...)
		c.CWD = repo
		c.SubagentTools = func(_ catalog.Definition, root string) *tools.Set {
			roots = append(roots, root)
			return tools.NewSet()
		}
	})
	row := h.launch(LaunchRequest{Prompt: "look", SubagentType: "iso", Background: true})
	row = h.collect(row.TaskID)
	if !strings.Contains(row.LastOutcome.Worktree, "removed") {
		t.Errorf("worktree note = %q", row.LastOutcome.Worktree)
	}
	if len(roots) != 1 || !strings.Contains(roots[0], filepath.Join("worktrees", string(row.TaskID)+"-1")) {
		t.Errorf("tools rooted at %q, want the turn's worktree", roots)
	}
	if res := formatOutcome(row); !strings.Contains(res.Content, "removed") {
		t.Errorf("task result does not say what became of the worktree: %s", res.Content)
	}
}
