package agents

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/streamjson"
)

// nonceModel answers "What was the nonce?" with the first nonce of the history sent, so an
// answer proves the history is there. A prompt with "fail" fails its first call; one
// with "hang" blocks until its context ends (after started has a token).
func nonceModel(started chan<- struct{}) genFunc {
	nonce := regexp.MustCompile(`NONCE-[A-Z0-9]+`)
	failed := map[string]bool{}
	return func(ctx context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		last := req.Messages[len(req.Messages)-1].Text()
		all := messagesText(req.Messages)
		switch {
		case strings.Contains(last, "What was the nonce"):
			answer(yield, nonce.FindString(all))
		case strings.Contains(last, "fail") && !failed[last]:
			failed[last] = true // the fake model is called from one turn at a time
			yield(llm.Event{}, &llm.ProviderError{Provider: "fake", StatusCode: 503, Message: "overloaded (retries spent)"})
		case strings.Contains(last, "hang"):
			started <- struct{}{}
			<-ctx.Done()
			yield(llm.Event{}, context.Cause(ctx))
		default:
			answer(yield, "Stored.")
		}
	}
}

// A turn that failed or was cut short by the end of the run leaves the agent continuable:
// send_message starts a new turn on the history it kept. task_stop stays final.
func TestFailedAndPausedTurnsContinue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		prompt string
		end    func(h *harness, id TaskID, started chan struct{})
		status Status
	}{
		{"failed", "Remember NONCE-F41L and fail", func(*harness, TaskID, chan struct{}) {}, StatusFailed},
		{"paused by the end of the run", "Remember NONCE-PA0SE and hang", func(h *harness, _ TaskID, started chan struct{}) {
			<-started
			h.reg.CancelAll(errors.New("interrupted by terminated"))
		}, StatusPaused},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{}, 1)
			h := newHarness(t, nonceModel(started))
			id := h.launchBG(tc.prompt)
			tc.end(h, id, started)
			row := h.collect(id)
			if row.Status != tc.status || row.blocked() != "" {
				t.Fatalf("row = %+v, want %s and continuable", row, tc.status)
			}
			sc, err := ReadSidecar(store.At(h.dir), string(id))
			if err != nil || sc.Status != tc.status {
				t.Fatalf("sidecar = %+v, %v", sc, err)
			}
			res := h.send(id, "What was the nonce?")
			if res.Continuation != streamjson.ContinuationRevived || res.Row.Turn != 2 {
				t.Fatalf("send = %+v", res)
			}
			row = h.collect(id)
			want := regexp.MustCompile(`NONCE-[A-Z0-9]+`).FindString(tc.prompt)
			if row.Status != StatusCompleted || row.LastOutcome.Text != want {
				t.Fatalf("continued turn = %+v, want the nonce %s from the kept history", row, want)
			}
		})
	}
}

// A row whose transcript path leads out of its session is never revived there, even when
// nothing blocked it: the store refuses the path, and the other file stays as it was.
func TestReviveIsConfinedToTheSession(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir, other := filepath.Join(home, "mine"), filepath.Join(home, "other")
	writeRosterSidecar(t, other, "/w", rosterSidecar{id: tid(3), status: StatusCompleted, backgrounded: true})
	victim := filepath.Join(other, "agents", string(tid(3))+".jsonl")
	before, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	reg := NewRegistry(t.Context(), RegistryConfig{SessionID: rosterSession, Store: store.At(dir), Model: newFake(replyText("x")),
		BackgroundAgents: true, Emit: rec.emit, Notify: rec.notify})
	defer reg.Shutdown()
	row := Row{TaskID: tid(3), SubagentType: catalog.GeneralPurpose, Status: StatusCompleted, Turn: 1, Backgrounded: true,
		ParentSessionID: rosterSession, Transcript: filepath.Join(dir, "..", "other", "agents", string(tid(3))+".jsonl")}
	if err := reg.Restore([]Row{row}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Send(context.Background(), tid(3), "go on", "c1"); err != nil {
		t.Fatal(err)
	}
	got, err := reg.Collect(t.Context(), tid(3), false)
	if err != nil || got.Status != StatusFailed || !strings.Contains(got.LastOutcome.Error, "leaves its session directory") {
		t.Fatalf("row = %+v, %v", got, err)
	}
	if after, _ := os.ReadFile(victim); !bytes.Equal(after, before) {
		t.Fatalf("another session's transcript was written:\n%s", after)
	}
	// It is not tried again.
	if _, err := reg.Send(context.Background(), tid(3), "go on", "c2"); !errors.Is(err, ErrNotContinuable) || !strings.Contains(err.Error(), "leaves its session directory") {
		t.Errorf("second send: %v", err)
	}
}

func TestUnreadNotifications(t *testing.T) {
	t.Parallel()
	done := Row{TaskID: tid(1), Description: "keeper", SubagentType: catalog.GeneralPurpose, Status: StatusCompleted, Turn: 2, Backgrounded: true,
		ToolUseID: "call_1", LastOutcome: Outcome{Text: "NONCE-1", Reason: runtime.ReasonCompleted}}
	read := Row{TaskID: tid(2), SubagentType: catalog.GeneralPurpose, Status: StatusCompleted, Turn: 1, Backgrounded: true}
	running := Row{TaskID: tid(3), SubagentType: catalog.GeneralPurpose, Status: StatusRunning, Turn: 1, Backgrounded: true}
	failed := Row{TaskID: tid(4), SubagentType: catalog.GeneralPurpose, Status: StatusFailed, Turn: 1, Backgrounded: true,
		LastOutcome: Outcome{Reason: runtime.ReasonError, Error: "HTTP 503"}}
	foreground := Row{TaskID: tid(5), SubagentType: catalog.GeneralPurpose, Status: StatusCompleted, Turn: 1}
	history := []llm.Message{
		llm.UserText("go"),
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}},
		// Turn 1 of tid(1) and of tid(2) were read (one merged message, as a busy parent gets them).
		{Role: llm.RoleUser, Content: []llm.Block{
			llm.TextBlock(NotificationText(Row{TaskID: tid(1), Turn: 1}, "call_1", "completed") + "\n" + NotificationText(read, "call_2", "completed")),
		}},
	}
	got := UnreadNotifications([]Row{done, read, running, failed, foreground}, history)
	var texts []string
	for _, m := range got {
		texts = append(texts, m.Text())
	}
	if len(texts) != 3 {
		t.Fatalf("unread = %d, want 3 (turn 2 of the keeper, the paused one, the failed one):\n%s", len(texts), strings.Join(texts, "\n---\n"))
	}
	for i, want := range []string{
		"<task-id>" + string(tid(1)) + "</task-id>\n<tool-use-id>call_1</tool-use-id>\n<status>completed</status>\n<turn>2</turn>",
		"<task-id>" + string(tid(3)) + "</task-id>",
		"<status>failed</status>",
	} {
		if !strings.Contains(texts[i], want) {
			t.Errorf("unread[%d] = %q, want %q in it", i, texts[i], want)
		}
	}
	if !strings.Contains(texts[0], "<result>NONCE-1</result>") || !strings.Contains(texts[1], "<status>paused</status>") ||
		!strings.Contains(texts[1], "send_message continues it") || !strings.Contains(texts[2], "send_message continues it") {
		t.Errorf("unread = %q", texts)
	}
	// Once the history holds them, nothing is unread.
	history = append(history, got...)
	if again := UnreadNotifications([]Row{done, read, running, failed, foreground}, history); len(again) != 0 {
		t.Errorf("delivered twice: %v", again)
	}
}

func TestForkAndBindSidecars(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), "/work/repo"
	const src, fork = "5f0c2a9e-1b7d-4c55-9a2e-3f1e8d0b7c11", "6f0c2a9e-1b7d-4c55-9a2e-3f1e8d0b7c12"
	sess := store.New(home, cwd, src)
	now := time.Now().UTC()
	if err := sess.WriteInfo(store.Info{SessionID: src, CWD: cwd, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	writeRosterSidecar(t, sess.String(), cwd, rosterSidecar{id: tid(1), status: StatusCompleted, backgrounded: true, ended: now})
	writeRosterSidecar(t, sess.String(), cwd, rosterSidecar{id: tid(2), status: StatusCompleted, backgrounded: true, owner: "someone-else", ended: now})
	data, err := sess.ReadSidecar(string(tid(1)))
	if err != nil {
		t.Fatal(err)
	}
	out, err := ForkSidecar(sess, src, fork)(string(tid(1)), data)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := DecodeSidecar(out, tid(1), nil)
	if err != nil || sc.ParentSessionID != fork || sc.Transcript != filepath.Join("agents", string(tid(1))+".jsonl") {
		t.Fatalf("forked sidecar = %+v, %v", sc, err)
	}
	data2, _ := sess.ReadSidecar(string(tid(2)))
	if out, _ := ForkSidecar(sess, src, fork)(string(tid(2)), data2); !bytes.Contains(out, []byte(`"someone-else"`)) {
		t.Errorf("another session's row was moved into the fork: %s", out)
	}
	if _, err := ForkSidecar(sess, src, fork)(string(tid(1)), []byte("{")); !errors.Is(err, ErrBadSidecar) {
		t.Errorf("corrupt sidecar: %v", err)
	}

	bind := BindSidecar("/ci/checkout")
	out, err = bind(store.Info{SessionID: src, CWD: cwd}, string(tid(1)), data)
	if err != nil {
		t.Fatal(err)
	}
	if sc, err := DecodeSidecar(out, tid(1), nil); err != nil || sc.CWD != "/ci/checkout" || sc.ParentSessionID != src {
		t.Fatalf("bound sidecar = %+v, %v", sc, err)
	}
	moved, _ := bind(store.Info{SessionID: src, CWD: "/other/place"}, string(tid(1)), data)
	if sc, _ := DecodeSidecar(moved, tid(1), nil); sc.CWD != cwd {
		t.Errorf("a row that ran elsewhere was bound: %+v", sc)
	}

	// A sidecar written when transcript paths were stored absolute names the exporting
	// machine's session directory: its own transcript there becomes the imported
	// session's; any other path is kept (and stays blocked by the roster).
	for abs, want := range map[string]string{
		"/home/ci/.stoke/projects/-work-repo/" + src + "/agents/" + string(tid(1)) + ".jsonl":  filepath.Join("agents", string(tid(1))+".jsonl"),
		"/home/ci/.stoke/projects/-work-repo/" + fork + "/agents/" + string(tid(1)) + ".jsonl": "/home/ci/.stoke/projects/-work-repo/" + fork + "/agents/" + string(tid(1)) + ".jsonl",
		"/home/ci/.stoke/projects/-work-repo/" + src + "/agents/" + string(tid(2)) + ".jsonl":  "/home/ci/.stoke/projects/-work-repo/" + src + "/agents/" + string(tid(2)) + ".jsonl",
	} {
		old, err := DecodeSidecar(data, tid(1), nil)
		if err != nil {
			t.Fatal(err)
		}
		old.Transcript = abs
		raw, err := EncodeSidecar(old, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := bind(store.Info{SessionID: src, CWD: cwd}, string(tid(1)), raw)
		if err != nil {
			t.Fatal(err)
		}
		if sc, _ := DecodeSidecar(out, tid(1), nil); sc.Transcript != want {
			t.Errorf("transcript %s bound as %q, want %q", abs, sc.Transcript, want)
		}
	}
}
