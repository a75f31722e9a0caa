package agents

import (
	"context"
	"errors"
	"iter"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/runtime"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/streamjson"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testTimeout bounds every wait in these tests; a test that hits it has deadlocked.
const testTimeout = 30 * time.Second

// genFunc answers one model call by yielding events. req is a deep copy.
type genFunc func(ctx context.Context, req llm.Request, yield func(llm.Event, error) bool)

// fakeModel is an llm.Model driven by a function; it records a deep copy of every request.
type fakeModel struct {
	fn genFunc

	mu   sync.Mutex
	reqs []llm.Request
}

func newFake(fn genFunc) *fakeModel { return &fakeModel{fn: fn} }

func (m *fakeModel) Name() string { return "fake" }

func (m *fakeModel) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		cp := cloneRequest(req)
		m.mu.Lock()
		m.reqs = append(m.reqs, cp)
		m.mu.Unlock()
		m.fn(ctx, cp, yield)
	}
}

func (m *fakeModel) requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.reqs...)
}

func cloneRequest(r *llm.Request) llm.Request {
	out := *r
	out.Messages = cloneMessages(r.Messages)
	out.Tools = append([]llm.ToolSpec(nil), r.Tools...)
	return out
}

func cloneMessages(ms []llm.Message) []llm.Message {
	out := make([]llm.Message, len(ms))
	for i, m := range ms {
		out[i] = llm.Message{Role: m.Role, Content: append([]llm.Block(nil), m.Content...)}
	}
	return out
}

// answer yields a final text reply (and tool calls, if any), then EventDone.
func answer(yield func(llm.Event, error) bool, text string, calls ...llm.Block) {
	if text != "" && !yield(llm.Event{Kind: llm.EventTextDelta, Text: text}, nil) {
		return
	}
	for _, c := range calls {
		if !yield(llm.Event{Kind: llm.EventToolCall, ToolCall: c}, nil) {
			return
		}
	}
	yield(llm.Event{Kind: llm.EventDone, Usage: llm.Usage{InputTokens: 10, OutputTokens: 2}}, nil)
}

// replyText is a model that always answers text.
func replyText(text string) genFunc {
	return func(_ context.Context, _ llm.Request, yield func(llm.Event, error) bool) { answer(yield, text) }
}

// gate is a probe that holds model calls open: started receives once per call that
// reached the gate; the call streams partial (if any) and then blocks until release is
// closed (answering final) or its context ends (failing with the cause).
type gate struct {
	started chan struct{}
	release chan struct{}
	partial string
	final   string
}

func newGate(partial, final string) *gate {
	return &gate{started: make(chan struct{}, 64), release: make(chan struct{}), partial: partial, final: final}
}

func (g *gate) gen(ctx context.Context, _ llm.Request, yield func(llm.Event, error) bool) {
	if g.partial != "" && !yield(llm.Event{Kind: llm.EventTextDelta, Text: g.partial}, nil) {
		return
	}
	g.started <- struct{}{}
	select {
	case <-g.release:
		answer(yield, g.final)
	case <-ctx.Done():
		yield(llm.Event{}, context.Cause(ctx))
	}
}

// wait receives one start of a gated call.
func (g *gate) wait(t *testing.T) {
	t.Helper()
	select {
	case <-g.started:
	case <-time.After(testTimeout):
		t.Fatal("timed out waiting for the model call")
	}
}

// harness is a registry with counters for constructed runtimes, disposals and events.
type harness struct {
	t     *testing.T
	reg   *Registry
	model *fakeModel
	dir   string

	// hook, when set before the registry is used, sees every event before it is recorded.
	hook func(streamjson.Event)
	// run is the run's context the registry lives under; cancelRun cancels it (a signal,
	// --timeout).
	run       context.Context
	cancelRun func()

	mu       sync.Mutex
	runtimes []*runtime.Runtime
	disposed map[TaskID]int
	events   []streamjson.Event
	notes    []llm.Message
}

func newHarness(t *testing.T, fn genFunc, mod ...func(*RegistryConfig)) *harness {
	t.Helper()
	h := &harness{t: t, model: newFake(fn), dir: t.TempDir(), disposed: map[TaskID]int{}}
	var clock atomic.Int64
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := RegistryConfig{
		SessionID:        "session-1",
		Store:            store.At(h.dir),
		Model:            h.model,
		BackgroundAgents: true,
		Emit: func(ev streamjson.Event) {
			if h.hook != nil {
				h.hook(ev)
			}
			h.mu.Lock()
			h.events = append(h.events, ev)
			h.mu.Unlock()
		},
		Notify: func(n Notification) {
			h.mu.Lock()
			h.notes = append(h.notes, NotificationsMessage([]Notification{n}))
			h.mu.Unlock()
			n.Delivered() // the harness is the parent: it has it at once
		},
		NewRuntime: func(c runtime.Config) *runtime.Runtime {
			rt := runtime.New(c)
			h.mu.Lock()
			h.runtimes = append(h.runtimes, rt)
			h.mu.Unlock()
			return rt
		},
		OnDispose: func(id TaskID) {
			h.mu.Lock()
			h.disposed[id]++
			h.mu.Unlock()
		},
		Now: func() time.Time { return base.Add(time.Duration(clock.Add(1)) * time.Millisecond) },
	}
	for _, f := range mod {
		f(&cfg)
	}
	run, cancel := context.WithCancelCause(context.Background())
	h.run, h.cancelRun = run, func() { cancel(errors.New("interrupted")) }
	h.reg = NewRegistry(run, cfg)
	t.Cleanup(func() { h.reg.Shutdown(); cancel(nil) })
	return h
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *harness) launch(req LaunchRequest) Row {
	h.t.Helper()
	if req.Description == "" {
		req.Description = "test task"
	}
	if req.ToolUseID == "" {
		req.ToolUseID = "call_launch"
	}
	row, err := h.reg.Launch(h.ctx(), req)
	if err != nil {
		h.t.Fatalf("Launch: %v", err)
	}
	return row.Row
}

func (h *harness) launchBG(prompt string) TaskID {
	h.t.Helper()
	return h.launch(LaunchRequest{Prompt: prompt, Background: true}).TaskID
}

// collect waits for id's latest turn and returns its row.
func (h *harness) collect(id TaskID) Row {
	h.t.Helper()
	row, err := h.reg.Collect(h.ctx(), id, false)
	if err != nil {
		h.t.Fatalf("Collect %s: %v", id, err)
	}
	return row
}

func (h *harness) send(id TaskID, msg string) SendResult {
	h.t.Helper()
	res, err := h.reg.Send(context.Background(), id, msg, "call_send")
	if err != nil {
		h.t.Fatalf("Send %s: %v", id, err)
	}
	return res
}

func (h *harness) runtimeCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.runtimes)
}

func (h *harness) runtime(i int) *runtime.Runtime {
	h.mu.Lock()
	defer h.mu.Unlock()
	if i >= len(h.runtimes) {
		h.t.Fatalf("runtime %d not constructed (have %d)", i, len(h.runtimes))
	}
	return h.runtimes[i]
}

func (h *harness) disposals(id TaskID) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.disposed[id]
}

func (h *harness) started(id TaskID) []*streamjson.TaskStarted {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*streamjson.TaskStarted
	for _, ev := range h.events {
		if s, ok := ev.(*streamjson.TaskStarted); ok && s.TaskID == string(id) {
			out = append(out, s)
		}
	}
	return out
}

func (h *harness) notifications(id TaskID) []*streamjson.TaskNotification {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []*streamjson.TaskNotification
	for _, ev := range h.events {
		if n, ok := ev.(*streamjson.TaskNotification); ok && n.TaskID == string(id) {
			out = append(out, n)
		}
	}
	return out
}

// messagesText joins the text of every block of msgs (text and tool results).
func messagesText(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		for _, bl := range m.Content {
			b.WriteString(bl.Text)
			b.WriteString(bl.Content)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// gitRepo returns a new git repository with one commit (the test is skipped without git).
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "root"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return dir
}

// disposed reports whether rt was closed: a closed runtime refuses every turn. (On a
// runtime still open the probe runs a turn, and the test fails anyway.)
func disposed(rt *runtime.Runtime) bool {
	_, err := rt.Execute(context.Background(), llm.UserText("probe"))
	return errors.Is(err, runtime.ErrDisposed)
}
