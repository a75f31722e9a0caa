package agents

import (
	"context"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
)

// Issue 12: a turn boundary costs at most two fsyncs (the transcript, then the directory
// holding the sidecar's new name); a launch and a continuation's start cost none.
func TestTurnBoundaryFsyncs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		if strings.Contains(messagesText(req.Messages), "fail") {
			yield(llm.Event{}, context.DeadlineExceeded)
			return
		}
		answer(yield, "ok")
	})
	sess := h.reg.cfg.Store.(*store.Session)
	id := h.launchBG("work")
	h.collect(id)
	if n := sess.Fsyncs(); n > 2 || n < 1 {
		t.Fatalf("%d fsyncs for a launch and its turn, want at most 2", n)
	}
	before := sess.Fsyncs()
	h.send(id, "more")
	h.collect(id)
	if n := sess.Fsyncs() - before; n > 2 || n < 1 {
		t.Fatalf("%d fsyncs for a continuation, want at most 2", n)
	}
	before = sess.Fsyncs()
	if row := h.collect(h.launchBG("fail")); row.Status != StatusFailed {
		t.Fatalf("row = %+v", row)
	}
	if n := sess.Fsyncs() - before; n > 2 || n < 1 {
		t.Fatalf("%d fsyncs for a failed turn, want at most 2", n)
	}
}

// Issue 12: a sidecar is written without a sync of its own; one that a crash of the
// machine left empty or torn is rebuilt from the row its transcript recorded at the last
// turn boundary, and the task comes back with a resume.
func TestSidecarRebuiltFromTranscript(t *testing.T) {
	t.Parallel()
	h := newHarness(t, replyText("kept it"))
	id := h.launchBG("keep this")
	want := h.collect(id)
	sess := h.reg.cfg.Store.(*store.Session)
	for _, content := range []string{"", `{"version":1,"task_id":"` + string(id) + `","sta`} {
		if err := sess.WriteSidecar(string(id), []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := ReadSidecar(sess, string(id))
		if err != nil {
			t.Fatalf("sidecar %q: %v", content, err)
		}
		if got.Status != StatusCompleted || got.Turn != 1 || got.LastOutcome.Text != "kept it" || got.Prompt != want.Prompt || got.Transcript != want.Transcript {
			t.Fatalf("rebuilt sidecar = %+v, want the row %+v", got.Row, want)
		}
		rows, warnings, err := LoadRoster(sess, RosterOptions{SessionID: "session-1"})
		if err != nil || len(warnings) != 0 || len(rows) != 1 || rows[0].TaskID != id {
			t.Fatalf("roster = %+v, %v, %v", rows, warnings, err)
		}
	}
}

// openFiles counts the process's open file descriptors (Linux).
func openFiles(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(entries)
}

// Issue 11 item 6: the files a session holds open do not grow with its agents: 300
// background agents running at once, each with its transcript and sidecar, hold no more
// descriptors than a few, and every sidecar ends completed.
func TestOpenFilesDoNotGrowWithAgents(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	const n = 300
	g := newGate("", "done")
	g.started = make(chan struct{}, n)
	h := newHarness(t, g.gen, func(c *RegistryConfig) { c.MaxBackground = n })
	base := openFiles(t)
	for range n {
		h.launchBG("work")
	}
	for range n {
		g.wait(t)
	}
	if grown := openFiles(t) - base; grown > 20 {
		t.Fatalf("%d agents running hold %d more open files", n, grown)
	}
	close(g.release)
	if err := h.reg.Wait(h.ctx()); err != nil {
		t.Fatal(err)
	}
	sidecars, warnings := ReadSidecars(h.reg.cfg.Store.(*store.Session))
	if len(warnings) != 0 || len(sidecars) != n {
		t.Fatalf("%d sidecars, warnings %v", len(sidecars), warnings)
	}
	for _, s := range sidecars {
		if s.Status != StatusCompleted {
			t.Fatalf("sidecar of %s says %s", s.TaskID, s.Status)
		}
	}
}
