package agents

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/streamjson"
)

// Seed 003, issue 23: MaxRetained bounds the settled records, the oldest settled dropped
// first, never one whose notification the parent has not been handed: such a row stays
// over the bound until it is delivered, and goes at a later settlement.
func TestRetentionSparesUndelivered(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		held []Notification
	)
	deliver := func(ids ...TaskID) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range held {
			if slices.Contains(ids, n.Row.TaskID) {
				n.Delivered()
			}
		}
	}
	h := newHarness(t, func(_ context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		answer(yield, "done "+req.Messages[0].Text())
	}, func(c *RegistryConfig) {
		c.MaxRetained = 2
		c.Notify = func(n Notification) { // the parent is busy: it reads them later
			mu.Lock()
			held = append(held, n)
			mu.Unlock()
		}
	})
	listed := func() []string {
		var out []string
		for _, r := range h.reg.List() {
			out = append(out, r.Prompt)
		}
		return out
	}
	run := func(prompt string) TaskID {
		id := h.launchBG(prompt)
		h.collect(id)
		return id
	}
	a, b, c := run("a"), run("b"), run("c")
	if got := listed(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("rows = %v: none was delivered, all stay over the bound", got)
	}
	deliver(a) // a is delivered now; nothing settles, nothing is dropped yet
	if got := listed(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("rows = %v after a delivery alone", got)
	}
	d := run("d") // four settled, two over: only a may go
	if got := listed(); !slices.Equal(got, []string{"b", "c", "d"}) {
		t.Fatalf("rows = %v, want the delivered oldest dropped and the undelivered kept", got)
	}
	if _, err := h.reg.Collect(h.ctx(), a, false); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("collect of the dropped row: %v", err)
	}
	deliver(b, c, d)
	run("e") // b, c, d, e settled, all but e delivered: b and c go, the oldest first
	if got := listed(); !slices.Equal(got, []string{"d", "e"}) {
		t.Fatalf("rows = %v, want the two newest", got)
	}
	for _, id := range []TaskID{a, b, c} {
		if h.disposals(id) != 1 {
			t.Errorf("dropped %s disposed %d times", id, h.disposals(id))
		}
	}
}

// Seed 003, issue 23: with no queue (NoQueue, --max-queued 0) a launch or a continuation
// over MaxBackground fails at once, the task tool asking the model to collect one first.
func TestNoQueue(t *testing.T) {
	t.Parallel()
	g := newGate("", "done")
	h := newHarness(t, func(ctx context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		if req.Messages[0].Text() == "quick" {
			answer(yield, "quick done")
			return
		}
		g.gen(ctx, req, yield)
	}, func(c *RegistryConfig) { c.MaxBackground, c.MaxQueued = 4, NoQueue })
	quick := h.launchBG("quick")
	h.collect(quick)
	for range 4 {
		h.launchBG("work")
		g.wait(t)
	}
	res := h.call(h.ctx(), ToolTask, map[string]any{"description": "d", "prompt": "fifth", "run_in_background": true})
	want := "no free background slot: 4 background agents are running, the most this run allows, and no launch waits for a slot. Collect one first with task(task_id), or wait for its <task-notification>, then launch again."
	if !res.IsError || res.Content != want {
		t.Fatalf("fifth launch = %+v, want %q", res, want)
	}
	sent := h.call(h.ctx(), ToolSendMessage, map[string]any{"task_id": string(quick), "message": "more"})
	if !sent.IsError || !strings.Contains(sent.Content, "no launch waits for a slot; wait for one to finish, then send again") {
		t.Fatalf("continuation over the cap = %+v", sent)
	}
	if n := len(h.reg.List()); n != 5 {
		t.Fatalf("%d rows, want 5: the refused launch leaves none", n)
	}
	close(g.release)
	if err := h.reg.Wait(h.ctx()); err != nil {
		t.Fatal(err)
	}
	h.collect(h.launchBG("quick")) // a slot is free again
}

// Seed 000, issue 23: a branch switch releases a resident runtime before the next
// continuation, wherever it happens — between two send_messages of one parent turn too:
// the continuation after it is revived on the new branch. CheckWorkspace releases the
// idle residents made before it; ReleaseResidents releases them all, for any reason.
func TestBranchSwitchRevivesTheNextContinuation(t *testing.T) {
	t.Parallel()
	var head atomic.Value
	head.Store("ref: refs/heads/main")
	h := newHarness(t, replyText("ok"), func(c *RegistryConfig) { c.Head = func() string { return head.Load().(string) } })
	id, other := h.launchBG("first"), h.launchBG("other")
	h.collect(id)
	h.collect(other)
	if res := h.send(id, "second"); res.Continuation != streamjson.ContinuationResident {
		t.Fatalf("continuation on the same branch = %s", res.Continuation)
	}
	h.collect(id)
	head.Store("ref: refs/heads/feature")
	if res := h.send(id, "third"); res.Continuation != streamjson.ContinuationRevived {
		t.Fatalf("continuation after a branch switch = %s, want revived", res.Continuation)
	}
	row := h.collect(id)
	if row.Status != StatusCompleted || row.Turn != 3 || h.disposals(id) != 1 {
		t.Fatalf("row %+v, %d disposals", row, h.disposals(id))
	}
	if st := h.started(id); len(st) != 3 || st[2].Continuation != streamjson.ContinuationRevived {
		t.Fatalf("task_started = %+v", st)
	}
	// The revived runtime was made on the new branch: the next one stays resident.
	if res := h.send(id, "fourth"); res.Continuation != streamjson.ContinuationResident {
		t.Fatalf("continuation after the revival = %s", res.Continuation)
	}
	h.collect(id)
	// The other task was not continued: CheckWorkspace releases it, and only it.
	if n := h.reg.CheckWorkspace(); n != 1 || h.reg.Resident(other) || !h.reg.Resident(id) {
		t.Fatalf("CheckWorkspace released %d; resident: other %v, id %v", n, h.reg.Resident(other), h.reg.Resident(id))
	}
	if n := h.reg.ReleaseResidents("the session was loaded in another directory"); n != 1 || h.reg.Resident(id) {
		t.Fatalf("ReleaseResidents released %d", n)
	}
}

// A branch switch in the finishing window — turn 1 has committed its completion and is
// still finishing on its runtime (here: held in the sync that makes the completion
// durable) — makes the continuation revive too: turn 1 gives up that runtime as it
// finishes, and turn 2 runs on a new one.
func TestBranchSwitchInTheFinishingWindow(t *testing.T) {
	t.Parallel()
	var head atomic.Value
	head.Store("ref: refs/heads/main")
	hs := &holdStore{held: make(chan struct{}), hold: make(chan struct{})}
	h := newHarness(t, replyText("ok"), func(c *RegistryConfig) {
		c.Head = func() string { return head.Load().(string) }
		hs.TaskStore = c.Store
		c.Store = hs
	})
	id := h.launchBG("first")
	<-hs.held // turn 1 committed, not finished
	if row, _ := h.reg.Get(id); row.Status != StatusCompleted {
		t.Fatalf("row in the window = %+v", row)
	}
	head.Store("ref: refs/heads/feature")
	if res := h.send(id, "second"); res.Continuation != streamjson.ContinuationRevived {
		t.Fatalf("continuation after a switch in the finishing window = %s, want revived", res.Continuation)
	}
	close(hs.hold)
	if row := h.collect(id); row.Status != StatusCompleted || row.Turn != 2 {
		t.Fatalf("row = %+v", row)
	}
	if n, d := h.runtimeCount(), h.disposals(id); n != 2 || d != 1 || !disposed(h.runtime(0)) {
		t.Fatalf("%d runtimes, %d disposals: turn 2 must run on a new runtime, the old one closed", n, d)
	}
	if !h.reg.Resident(id) {
		t.Fatal("the revived runtime is not resident")
	}
}

// holdStore holds the first SyncSidecars (the boundary of the first turn to end) until
// hold is closed, saying so on held.
type holdStore struct {
	TaskStore
	held, hold chan struct{}
	once       sync.Once
}

func (s *holdStore) SyncSidecars() error {
	s.once.Do(func() {
		s.held <- struct{}{}
		<-s.hold
	})
	return s.TaskStore.SyncSidecars()
}

// The default head is the git HEAD of the working directory: a real git checkout -b is
// seen.
func TestBranchSwitchInARepository(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t)
	h := newHarness(t, replyText("ok"), func(c *RegistryConfig) { c.CWD = repo })
	id := h.launchBG("first")
	h.collect(id)
	git(t, repo, "checkout", "-q", "-b", "feature")
	if res := h.send(id, "second"); res.Continuation != streamjson.ContinuationRevived {
		t.Fatalf("continuation after git checkout -b = %s, want revived", res.Continuation)
	}
	h.collect(id)
}

// Issue 23: a sidecar tells the truth once the turn has settled: its usage and that its
// notification was pushed. A kept worktree is described as kept after a resume.
func TestSidecarAfterTheTurn(t *testing.T) {
	t.Parallel()
	h := newHarness(t, replyText("ok"))
	id := h.launchBG("work")
	h.collect(id)
	sc, err := ReadSidecar(h.reg.cfg.Store.(*store.Session), string(id))
	if err != nil {
		t.Fatal(err)
	}
	if !sc.Notified || sc.LastOutcome.Usage.TotalTokens == 0 || sc.LastOutcome.Usage.DurationMS == 0 {
		t.Fatalf("sidecar after the turn = %+v", sc.Row)
	}
}

func TestKeptWorktreeDescribedAsKept(t *testing.T) {
	t.Parallel()
	dir, cwd := t.TempDir(), t.TempDir()
	kept := filepath.Join(dir, "worktrees", string(tid(1))+"-1")
	if err := os.MkdirAll(kept, 0o700); err != nil {
		t.Fatal(err)
	}
	for i, wt := range []string{kept, filepath.Join(dir, "worktrees", "gone")} {
		id := tid(byte(i + 1))
		writeRosterSidecar(t, dir, cwd, rosterSidecar{id: id, status: StatusCompleted, backgrounded: true, isolation: "worktree"})
		sess := store.At(dir)
		sc, err := ReadSidecar(sess, string(id))
		if err != nil {
			t.Fatal(err)
		}
		sc.LastOutcome.KeptWorktree = wt
		if err := writeSidecar(sess, sc); err != nil {
			t.Fatal(err)
		}
	}
	rows, _, err := LoadRoster(store.At(dir), RosterOptions{SessionID: rosterSession, CWD: cwd})
	if err != nil || len(rows) != 2 {
		t.Fatalf("rows = %+v, %v", rows, err)
	}
	for _, r := range rows {
		switch r.TaskID {
		case tid(1):
			if !strings.Contains(r.BlockedReason, "kept with its changes at "+kept) {
				t.Errorf("kept worktree: %q", r.BlockedReason)
			}
		default:
			if !strings.Contains(r.BlockedReason, "was removed") || strings.Contains(r.BlockedReason, "kept") {
				t.Errorf("removed worktree: %q", r.BlockedReason)
			}
		}
	}
}

// Issue 23: a turn still queued when its process ended (SIGKILL: the sidecar says
// queued) comes back paused with its instruction, continuable; its notification is
// delivered once, and send_message runs it — a launch fresh, as its turn 1.
func TestRestoredQueuedLaunchStartsFresh(t *testing.T) {
	t.Parallel()
	dir, cwd := t.TempDir(), t.TempDir()
	id := tid(7)
	writeRosterSidecar(t, dir, cwd, rosterSidecar{id: id, status: StatusQueued, backgrounded: true, noHistory: true})
	sess := store.At(dir)
	sc, err := ReadSidecar(sess, string(id))
	if err != nil {
		t.Fatal(err)
	}
	sc.Prompt, sc.NotStarted, sc.Pending = "count the files", true, "count the files"
	if err := writeSidecar(sess, sc); err != nil {
		t.Fatal(err)
	}
	rows, _, err := LoadRoster(sess, RosterOptions{SessionID: rosterSession, CWD: cwd})
	if err != nil || len(rows) != 1 || rows[0].BlockedReason != "" {
		t.Fatalf("rows = %+v, %v", rows, err)
	}
	unread := UnreadNotifications(rows, nil)
	if len(unread) != 1 || !strings.Contains(unread[0].Text(), "<status>paused</status>") || !strings.Contains(unread[0].Text(), "it was queued when the run ended") {
		t.Fatalf("unread = %+v", unread)
	}
	if again := UnreadNotifications(rows, unread); len(again) != 0 {
		t.Fatalf("delivered twice: %+v", again)
	}
	h := newHarness(t, func(_ context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		answer(yield, "did: "+messagesText(req.Messages))
	}, func(c *RegistryConfig) { c.Store, c.SessionID, c.CWD = sess, rosterSession, cwd })
	if err := h.reg.Restore(rows); err != nil {
		t.Fatal(err)
	}
	if res := h.send(id, "and report"); res.Continuation != streamjson.ContinuationFresh || !res.Pending {
		t.Fatalf("send = %+v", res)
	}
	row := h.collect(id)
	if row.Status != StatusCompleted || row.Turn != 1 || !strings.Contains(row.LastOutcome.Text, "count the files\n\nand report") {
		t.Fatalf("row = %+v", row)
	}
	if reqs := h.model.requests(); len(reqs) != 1 || len(reqs[0].Messages) != 1 {
		t.Fatalf("the fresh start sent %d requests: %+v", len(reqs), reqs)
	}
}

// git runs git in dir.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
}
