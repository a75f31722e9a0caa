package headless

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/streamjson/streamjsontest"
)

// phase1 runs the resume scenario's first run and returns its options (same home and cwd).
func phase1(t *testing.T) Options {
	t.Helper()
	var out bytes.Buffer
	o := opts(t, loadScenario(t, "../scenarios/resume-memory.yaml"), &out)
	o.Prompt = "Keep NONCE-5EED1 safe"
	if err := Run(t.Context(), o); err != nil {
		t.Fatalf("run 1: %v\n%s", err, out.String())
	}
	return o
}

func TestResumeRevivesWithOneReminder(t *testing.T) {
	t.Parallel()
	o := phase1(t)
	data, err := os.ReadFile("../scenarios/resume-memory.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := scripted.Parse("resume", append(data, "  - agent: parent\n    when: {last_user_contains: thanks}\n    reply: {text: \"You're welcome.\"}\n"...))
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.New(sc)
	var out bytes.Buffer
	o2 := o
	o2.Model, o2.Stdout = m, &out
	o2.SessionID, o2.Resume = "", o.SessionID
	o2.Prompt = ""
	o2.InputFormat = InputStreamJSON
	o2.Stdin = strings.NewReader(`{"type":"user","message":{"role":"user","content":"Ask the agent for the nonce"}}` + "\n" +
		`{"type":"user","message":{"role":"user","content":"thanks"}}` + "\n")
	if err := Run(t.Context(), o2); err != nil {
		t.Fatalf("run 2: %v\n%s", err, out.String())
	}
	if err := streamjsontest.ValidateLines(strings.NewReader(out.String()), true); err != nil {
		t.Errorf("invalid stream: %v", err)
	}
	s := out.String()
	if !strings.Contains(s, `"continuation":"revived"`) || !strings.Contains(s, "The revived agent remembered the nonce: NONCE-5EED1") {
		t.Errorf("no revival with the nonce:\n%s", s)
	}
	if !strings.Contains(s, `"session_id":"`+o.SessionID+`"`) {
		t.Errorf("resumed run has another session id")
	}
	// Exactly one request carried the reminder, although two prompts were sent.
	n := 0
	for _, req := range m.Requests() {
		for _, msg := range req.Messages {
			if strings.Contains(msg.Text(), "This session was resumed") {
				n++
			}
		}
	}
	// The reminder stays in the history once; count requests whose LAST user turn had it.
	reminded := 0
	for _, req := range m.Requests() {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[len(req.Messages)-1].Text(), "This session was resumed") {
			reminded++
		}
	}
	if reminded != 1 || n == 0 {
		t.Errorf("reminder given to %d requests as the newest prompt, want 1", reminded)
	}
}

func TestResumeBareHasNoReminder(t *testing.T) {
	t.Parallel()
	o := phase1(t)
	m := loadScenario(t, "../scenarios/resume-memory.yaml")
	var out bytes.Buffer
	o2 := o
	o2.Model, o2.Stdout, o2.SessionID, o2.Resume, o2.Bare = m, &out, "", o.SessionID, true
	o2.Prompt = "plain prompt without a nonce"
	err := Run(t.Context(), o2) // no rule matches a prompt without the reminder: the run fails
	for _, req := range m.Requests() {
		for _, msg := range req.Messages {
			if strings.Contains(msg.Text(), "This session was resumed") {
				t.Fatalf("--bare run got the reminder")
			}
		}
	}
	if err == nil {
		t.Fatalf("expected no rule to match without the reminder: %s", out.String())
	}
}

func TestResumeUnknownSessionIsUsageError(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	o := opts(t, loadScenario(t, "../scenarios/hello.yaml"), &out)
	o.SessionID, o.Resume = "", "6a1e3c55-0000-4000-8000-000000000000"
	if err := Run(t.Context(), o); !errors.Is(err, ErrUsage) {
		t.Fatalf("err = %v, want ErrUsage", err)
	}
	o.Resume = "../../etc/passwd"
	if err := Run(t.Context(), o); !errors.Is(err, ErrUsage) {
		t.Fatalf("err = %v, want ErrUsage", err)
	}
	if out.Len() != 0 {
		t.Errorf("a failed resume wrote events: %s", out.String())
	}
}

func TestNewSessionNeverShowsPreviousRoster(t *testing.T) {
	t.Parallel()
	o := phase1(t)
	var out bytes.Buffer
	o2 := o
	o2.Stdout = &out
	o2.SessionID = "22222222-2222-4222-8222-222222222222"
	o2.Model = loadScenario(t, "../scenarios/hello.yaml")
	if err := Run(t.Context(), o2); err != nil {
		t.Fatal(err)
	}
	rows, _, err := agents.LoadRoster(store.New(o.Home, o.CWD, o2.SessionID), agents.RosterOptions{SessionID: o2.SessionID})
	if err != nil || len(rows) != 0 {
		t.Errorf("new session has rows %v (%v)", rows, err)
	}
	// Reusing an existing id without --resume is refused.
	o3 := o2
	if err := Run(t.Context(), o3); !errors.Is(err, ErrUsage) {
		t.Errorf("reusing a session id: %v", err)
	}
}

// One writer per session: a run of a session another process holds fails with
// ErrSessionBusy, naming the holder, unless it may wait; then it runs once the holder
// lets go. Nothing is written meanwhile.
func TestSessionBusy(t *testing.T) {
	t.Parallel()
	o := phase1(t)
	held, err := store.New(o.Home, o.CWD, o.SessionID).Lock(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o2 := o
	o2.Model, o2.Stdout, o2.SessionID, o2.Resume = loadScenario(t, "../scenarios/resume-memory.yaml"), &out, "", o.SessionID
	o2.Prompt = "Ask the agent for the nonce"
	err = Run(t.Context(), o2)
	if !errors.Is(err, ErrSessionBusy) || !strings.Contains(err.Error(), "is in use by another stoke run (pid") || out.Len() != 0 {
		t.Fatalf("err = %v, out %q", err, out.String())
	}
	// A new run that names the session's id is refused the same way.
	o3 := o
	o3.Stdout = &out
	if err := Run(t.Context(), o3); !errors.Is(err, ErrSessionBusy) {
		t.Fatalf("new run of a held id: %v", err)
	}
	// Waiting ends with the run's context: interrupted, not busy.
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(&InterruptedError{Signal: syscall.SIGTERM})
	o2.WaitForSession = time.Hour
	var ie *InterruptedError
	if err := Run(ctx, o2); !errors.As(err, &ie) {
		t.Fatalf("waiting run under an interrupted context: %v", err)
	}
	_ = held.Unlock()
	if err := Run(t.Context(), o2); err != nil {
		t.Fatalf("once released: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "The revived agent remembered the nonce: NONCE-5EED1") {
		t.Errorf("the run after the wait did not continue the agent:\n%s", out.String())
	}
}
