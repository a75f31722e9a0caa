package agents

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

const rosterSession = "5f0c2a9e-1b7d-4c55-9a2e-3f1e8d0b7c11"

// rosterFixture writes one sidecar (and, unless noTranscript, a transcript whose meta names
// owner) into dir and returns the row.
type rosterSidecar struct {
	id           TaskID
	status       Status
	backgrounded bool
	owner        string // parent session id (default rosterSession)
	transcriptOf TaskID // task id in the transcript's meta record (default id)
	noTranscript bool
	isolation    string
	cwd          string
	ended        time.Time
	transcript   string // the path stored in the sidecar (default: its own transcript)
	noHistory    bool   // the transcript holds its meta record only
	garbage      bool   // the transcript is not JSONL at all
	blocked      string // the stored blocked reason (a launch that failed)
}

func writeRosterSidecar(t *testing.T, dir, cwd string, f rosterSidecar) {
	t.Helper()
	if f.owner == "" {
		f.owner = rosterSession
	}
	if f.transcriptOf == "" {
		f.transcriptOf = f.id
	}
	if f.cwd == "" {
		f.cwd = cwd
	}
	path := filepath.Join(dir, "agents", string(f.id)+".jsonl")
	if !f.noTranscript {
		tr, err := store.OpenTranscript(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		_ = tr.Write(store.Record{Type: store.RecordMeta, TaskID: string(f.transcriptOf), SubagentType: catalog.GeneralPurpose})
		if !f.noHistory {
			_ = tr.Append(llm.UserText("Remember NONCE-" + strings.ToUpper(string(f.id[1:7]))))
			_ = tr.Append(llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("Stored.")}})
			_ = tr.Write(store.Record{Type: store.RecordTurn, Turn: 1, Status: string(StatusCompleted), Summary: "Stored."})
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if f.garbage {
		_ = os.MkdirAll(filepath.Dir(path), 0o700)
		if err := os.WriteFile(path, []byte("not a transcript\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if f.transcript != "" {
		path = f.transcript
	}
	row := Row{TaskID: f.id, Description: "d " + string(f.id), SubagentType: catalog.GeneralPurpose, Status: f.status, Turn: 1,
		Backgrounded: f.backgrounded, ParentSessionID: f.owner, Transcript: path,
		CreatedAt: f.ended.Add(-time.Minute), EndedAt: f.ended, BlockedReason: f.blocked}
	if err := writeSidecar(store.At(dir), Sidecar{Row: row, CWD: f.cwd, Isolation: f.isolation}); err != nil {
		t.Fatal(err)
	}
}

// sidecarFile is where DESIGN.md says the sidecar of id lives in session directory dir.
func sidecarFile(dir string, id TaskID) string {
	return filepath.Join(dir, "agents", string(id)+".meta.json")
}

func tid(n byte) TaskID { return TaskID("a" + strings.Repeat(string("0123456789abcdef"[n%16]), 16)) }

func TestLoadRoster(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), "/work/repo"
	dir := filepath.Join(home, "s1")
	other := filepath.Join(home, "s2") // another session's transcript must stay out of reach
	writeRosterSidecar(t, other, cwd, rosterSidecar{id: tid(13), status: StatusCompleted, backgrounded: true})
	otherTranscript := filepath.Join(other, "agents", string(tid(13))+".jsonl")
	base := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	fixtures := []rosterSidecar{
		{id: tid(1), status: StatusCompleted, backgrounded: true, ended: base.Add(1 * time.Minute)},
		{id: tid(2), status: StatusRunning, backgrounded: true, ended: base},
		{id: tid(3), status: StatusCompleted, backgrounded: false, ended: base.Add(2 * time.Minute)}, // foreground
		{id: tid(4), status: StatusFailed, backgrounded: true, ended: base},
		{id: tid(5), status: StatusCancelled, backgrounded: true, ended: base},
		{id: tid(6), status: StatusCompleted, backgrounded: true, owner: "other-session", ended: base},
		{id: tid(7), status: StatusCompleted, backgrounded: true, noTranscript: true, ended: base.Add(3 * time.Minute)},
		{id: tid(8), status: StatusCompleted, backgrounded: true, transcriptOf: tid(1), ended: base.Add(4 * time.Minute)},
		{id: tid(9), status: StatusCompleted, backgrounded: true, isolation: "worktree", ended: base.Add(5 * time.Minute)},
		{id: tid(10), status: StatusCompleted, backgrounded: true, cwd: "/elsewhere", ended: base.Add(6 * time.Minute)},
		{id: tid(14), status: StatusFailed, backgrounded: true, blocked: "its launch failed", ended: base}, // never ran
		{id: tid(15), status: StatusPaused, backgrounded: true, transcript: "../s2/agents/" + string(tid(13)) + ".jsonl", transcriptOf: tid(15), noTranscript: true, ended: base},
		{id: tid(0), status: StatusRunning, backgrounded: true, transcript: otherTranscript, noTranscript: true, ended: base},
		{id: TaskID("a" + strings.Repeat("f", 15) + "e"), status: StatusCompleted, backgrounded: true, noHistory: true, ended: base},
		{id: TaskID("a" + strings.Repeat("e", 15) + "f"), status: StatusCompleted, backgrounded: true, noTranscript: true, garbage: true, ended: base},
	}
	for _, f := range fixtures {
		writeRosterSidecar(t, dir, cwd, f)
	}
	// A corrupt sidecar and one whose name does not match its id are skipped with warnings.
	if err := os.WriteFile(filepath.Join(dir, "agents", string(tid(11))+".meta.json"), []byte(`{"version":1,"task_id":`), 0o600); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(sidecarFile(dir, tid(1)))
	if err := os.WriteFile(sidecarFile(dir, tid(12)), data, 0o600); err != nil {
		t.Fatal(err)
	}

	rows, warnings, err := LoadRoster(store.At(dir), RosterOptions{SessionID: rosterSession, CWD: cwd})
	if err != nil {
		t.Fatal(err)
	}
	got := map[TaskID]Row{}
	for _, r := range rows {
		got[r.TaskID] = r
	}
	want := map[TaskID]string{ // id -> blocked reason fragment ("" = continuable)
		tid(1): "", tid(2): "", tid(4): "", tid(7): "transcript is missing", tid(8): "belongs to task",
		tid(9): "worktree", tid(10): "it ran in /elsewhere, not in this run's working directory /work/repo",
		tid(15): "leaves its session directory", tid(0): "leaves its session directory",
		TaskID("a" + strings.Repeat("f", 15) + "e"): "holds no history",
		TaskID("a" + strings.Repeat("e", 15) + "f"): "its transcript cannot be read: its first line is not the task's meta record",
	}
	if len(got) != len(want) {
		t.Errorf("restored %d rows, want %d: %v", len(got), len(want), rows)
	}
	for id, frag := range want {
		r, ok := got[id]
		switch {
		case !ok:
			t.Errorf("%s not restored", id)
		case frag == "" && r.BlockedReason != "":
			t.Errorf("%s blocked: %s", id, r.BlockedReason)
		case frag != "" && !strings.Contains(r.BlockedReason, frag):
			t.Errorf("%s blocked reason %q, want it to say %q", id, r.BlockedReason, frag)
		}
	}
	if len(warnings) != 3 { // corrupt, misnamed, other owner
		t.Errorf("warnings = %q, want 3", warnings)
	}

	// Only the newest completed rows are kept; running rows are not limited.
	rows, _, err = LoadRoster(store.At(dir), RosterOptions{SessionID: rosterSession, CWD: cwd, MaxCompleted: 2})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range rows {
		ids = append(ids, string(r.TaskID))
	}
	if len(rows) != 5 || !strings.Contains(strings.Join(ids, ","), string(tid(2))) ||
		!strings.Contains(strings.Join(ids, ","), string(tid(10))) || !strings.Contains(strings.Join(ids, ","), string(tid(9))) {
		t.Errorf("limited roster = %v, want the running and paused rows and the two newest completed", ids)
	}
}

// recorder collects events and notifications.
type recorder struct {
	mu     sync.Mutex
	events []streamjson.Event
	notes  []llm.Message
}

func (r *recorder) emit(ev streamjson.Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}
func (r *recorder) notify(n Notification) {
	r.mu.Lock()
	r.notes = append(r.notes, NotificationsMessage([]Notification{n}))
	r.mu.Unlock()
}
func (r *recorder) notifications() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if _, ok := ev.(*streamjson.TaskNotification); ok {
			n++
		}
	}
	return n
}

func TestRestoreAndRevive(t *testing.T) {
	t.Parallel()
	dir, cwd := t.TempDir(), "/work/repo"
	now := time.Now().UTC()
	writeRosterSidecar(t, dir, cwd, rosterSidecar{id: tid(1), status: StatusCompleted, backgrounded: true, ended: now})
	writeRosterSidecar(t, dir, cwd, rosterSidecar{id: tid(2), status: StatusRunning, backgrounded: true, ended: now})
	writeRosterSidecar(t, dir, cwd, rosterSidecar{id: tid(7), status: StatusCompleted, backgrounded: true, noTranscript: true, ended: now})
	rows, _, err := LoadRoster(store.At(dir), RosterOptions{SessionID: rosterSession, CWD: cwd})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scripted.Parse("revive", []byte(`
rules:
  - agent: general-purpose
    when: {last_user_contains: "What was the nonce"}
    reply: {text: '{{ match "NONCE-[A-Z0-9]+" }}'}
`))
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(s)
	rec := &recorder{}
	reg := NewRegistry(t.Context(), RegistryConfig{SessionID: rosterSession, Store: store.At(dir), CWD: cwd, Model: m,
		BackgroundAgents: true, Emit: rec.emit, Notify: rec.notify})
	defer reg.Shutdown()
	if err := reg.Restore(rows); err != nil {
		t.Fatal(err)
	}
	// Stable ids and states; no notification for what was already notified.
	for id, want := range map[TaskID]Status{tid(1): StatusCompleted, tid(2): StatusPaused, tid(7): StatusCompleted} {
		r, ok := reg.Get(id)
		if !ok || r.Status != want || !r.Notified {
			t.Errorf("%s: %+v, want %s and notified", id, r, want)
		}
	}
	if reg.Unsettled() != 0 || rec.notifications() != 0 || len(rec.notes) != 0 {
		t.Fatalf("restore produced notifications: %d events, %d notes", rec.notifications(), len(rec.notes))
	}
	// The unsafe row is listed but not continuable, and send_message says why.
	list := listAgentsTool{reg}.Run(t.Context(), tools.Call{})
	if !strings.Contains(list.Content, `"task_id":"`+string(tid(7))+`","description":"d `+string(tid(7))+`","subagent_type":"general-purpose","status":"completed","turn":1,"continuable":false,"blocked_reason":"its transcript is missing"`) {
		t.Errorf("list_agents = %s", list.Content)
	}
	if _, err := reg.Send(context.Background(), tid(7), "hi", "c0"); !errors.Is(err, ErrNotContinuable) || !strings.Contains(err.Error(), "transcript is missing") {
		t.Errorf("send to blocked row: %v", err)
	}
	// A compatible restored row is revived and answers from its history.
	res, err := reg.Send(context.Background(), tid(1), "What was the nonce?", "c1")
	if err != nil || res.Continuation != streamjson.ContinuationRevived || res.Row.Turn != 2 {
		t.Fatalf("send = %+v, %v", res, err)
	}
	row, err := reg.Collect(t.Context(), tid(1), false)
	if err != nil {
		t.Fatal(err)
	}
	want := "NONCE-" + strings.ToUpper(string(tid(1)[1:7]))
	if row.Status != StatusCompleted || row.LastOutcome.Text != want {
		t.Errorf("revived outcome = %+v, want %s", row, want)
	}
	if err := reg.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := rec.notifications(); n != 1 {
		t.Errorf("task_notification events = %d, want 1 (the revived turn only)", n)
	}
	// The revived turn is stored: sidecar turn 2, completed; transcript holds the instruction.
	sc, err := ReadSidecar(store.At(dir), string(tid(1)))
	if err != nil || sc.Turn != 2 || sc.Status != StatusCompleted {
		t.Errorf("sidecar after revival = %+v, %v", sc, err)
	}
	loaded, err := store.ReadTranscript(sc.Transcript)
	if err != nil || !strings.Contains(loaded.Messages[len(loaded.Messages)-2].Text(), "What was the nonce?") {
		t.Errorf("transcript after revival: %+v, %v", loaded, err)
	}
}

func TestRestoreIsAllOrNothing(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(t.Context(), RegistryConfig{SessionID: rosterSession})
	defer reg.Shutdown()
	rows := []Row{
		{TaskID: tid(1), SubagentType: catalog.GeneralPurpose, Status: StatusCompleted},
		{TaskID: tid(2), SubagentType: catalog.GeneralPurpose, Status: StatusCancelled}, // never restored
	}
	if err := reg.Restore(rows); err == nil {
		t.Fatal("restore of a cancelled row succeeded")
	}
	if n := len(reg.List()); n != 0 {
		t.Fatalf("a failed restore left %d rows behind", n)
	}
	if err := reg.Restore([]Row{{TaskID: "../../etc", Status: StatusCompleted}}); !errors.Is(err, ErrBadTaskID) {
		t.Errorf("restore with a path-like id: %v", err)
	}
}

func TestSidecarRoundTripAndModes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	row := Row{TaskID: tid(3), ParentSessionID: rosterSession, Status: StatusCompleted, Turn: 4, Backgrounded: true,
		Transcript: filepath.Join(dir, "agents", string(tid(3))+".jsonl")}
	if err := writeSidecar(store.At(dir), Sidecar{Row: row, CWD: "/w", Isolation: "worktree"}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(sidecarFile(dir, tid(3)))
	if !strings.Contains(string(raw), `"transcript": "agents/`) {
		t.Errorf("transcript path is not relative to the session dir: %s", raw)
	}
	sc, err := ReadSidecar(store.At(dir), string(tid(3)))
	if err != nil || sc.Turn != 4 || sc.Transcript != row.Transcript || sc.Isolation != "worktree" || !sc.Backgrounded {
		t.Fatalf("round trip = %+v, %v", sc, err)
	}
	st, _ := os.Stat(sidecarFile(dir, tid(3)))
	dst, _ := os.Stat(filepath.Join(dir, "agents"))
	if st.Mode().Perm() != 0o600 || dst.Mode().Perm() != 0o700 {
		t.Errorf("modes: file %v dir %v", st.Mode().Perm(), dst.Mode().Perm())
	}
	if err := writeSidecar(store.At(dir), Sidecar{Row: Row{TaskID: "../x"}}); !errors.Is(err, ErrBadTaskID) {
		t.Errorf("write with a bad id: %v", err)
	}
}

func FuzzDecodeSidecar(f *testing.F) {
	f.Add([]byte(`{"version":1,"task_id":"a0000000000000000","status":"completed","transcript":"agents/a0000000000000000.jsonl"}`))
	f.Add([]byte(`{"version":1,"task_id":"a0000000000000000","status":"bogus"}`))
	f.Add([]byte(`{"version":1,"task_id":`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSidecar(data, "a0000000000000000", store.At("/session").Abs)
		if err != nil {
			if !errors.Is(err, ErrBadSidecar) {
				t.Fatalf("error does not wrap ErrBadSidecar: %v", err)
			}
			return
		}
		if s.TaskID != "a0000000000000000" {
			t.Fatalf("accepted a sidecar of another task: %q", s.TaskID)
		}
		if s.Transcript != "" && !filepath.IsAbs(s.Transcript) {
			t.Fatalf("transcript path not resolved: %q", s.Transcript)
		}
	})
}

// writeSidecar stores s in session sess, as a controller does.
func writeSidecar(sess *store.Session, s Sidecar) error {
	data, err := EncodeSidecar(s, sess.Rel)
	if err != nil {
		return err
	}
	return sess.WriteSidecar(string(s.TaskID), data)
}
