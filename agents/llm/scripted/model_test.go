package scripted

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

func TestGenerateEvents(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, `
model: test-model
rules:
  - agent: parent
    when: {step: 1}
    reply:
      text: "Reading {{ lastUser }}"
      tool_calls:
        - {name: read_file, input: {file_path: "{{ lastUser }}"}}
        - {name: glob, input: {pattern: "*.go"}}
  - reply: {text: "plain"}
`))
	req := &llm.Request{Agent: "parent", Messages: []llm.Message{llm.UserText("a.txt")}}
	got, err := collect(t.Context(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Event{
		{Kind: llm.EventTextDelta, Text: "Reading a.txt"},
		{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "call_parent_1_1", Name: "read_file", Input: []byte(`{"file_path":"a.txt"}`)}},
		{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "call_parent_1_2", Name: "glob", Input: []byte(`{"pattern":"*.go"}`)}},
		{Kind: llm.EventDone, StopReason: llm.StopToolUse, Usage: usage(req, "Reading a.txt", nil, nil), MessageID: "msg_scripted_1", Model: "test-model"},
	}
	want[3].Usage.OutputTokens = tokens(len("Reading a.txt") + len("read_file") + len(`{"file_path":"a.txt"}`) + len("glob") + len(`{"pattern":"*.go"}`))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	// A second call: end_turn, next message id, the request's model override.
	req2 := &llm.Request{Agent: "general-purpose", Model: "override", Messages: []llm.Message{llm.UserText("x")}}
	r := mustGenerate(t, m, req2)
	if r.text != "plain" || r.done.StopReason != llm.StopEndTurn || r.done.MessageID != "msg_scripted_2" || r.done.Model != "override" {
		t.Errorf("second reply = %q %+v", r.text, r.done)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, `
rules:
  - when: {last_user_contains: fixed}
    reply: {text: x, usage: {input_tokens: 1000, output_tokens: 20, cache_read_input_tokens: 5}}
  - when: {last_user_contains: empty}
    reply: {}
  - reply: {text: "0123456789abcdef"}
`))
	small := &llm.Request{Messages: []llm.Message{llm.UserText("hi")}}
	big := &llm.Request{System: strings.Repeat("s", 4000), Messages: []llm.Message{llm.UserText("hi")}}
	first, again := mustGenerate(t, m, small).done.Usage, mustGenerate(t, m, small).done.Usage
	if first != again {
		t.Errorf("usage not deterministic: %+v then %+v", first, again)
	}
	if first.OutputTokens != 4 {
		t.Errorf("output tokens = %d, want 16 bytes / 4 = 4", first.OutputTokens)
	}
	if b := mustGenerate(t, m, big).done.Usage; b.InputTokens < first.InputTokens+1000 {
		t.Errorf("input tokens %d for 4000 more bytes, small request %d", b.InputTokens, first.InputTokens)
	}
	empty := mustGenerate(t, m, &llm.Request{Messages: []llm.Message{llm.UserText("empty")}})
	if empty.text != "" || empty.done.Usage.OutputTokens != 1 || empty.done.StopReason != llm.StopEndTurn {
		t.Errorf("empty reply = %q %+v, want no text, 1 output token, end_turn", empty.text, empty.done)
	}
	fixed := mustGenerate(t, m, &llm.Request{Messages: []llm.Message{llm.UserText("fixed")}}).done.Usage
	if want := (llm.Usage{InputTokens: 1000, OutputTokens: 20, CacheReadInputTokens: 5}); fixed != want {
		t.Errorf("fixed usage = %+v, want %+v", fixed, want)
	}
}

func TestLongTextIsChunked(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("héllo wörld ", 30)
	m := New(&Scenario{Rules: []Rule{{Reply: Reply{Text: text}}}})
	evs, err := collect(t.Context(), m, &llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	deltas := 0
	for _, ev := range evs {
		if ev.Kind == llm.EventTextDelta {
			deltas++
			if len(ev.Text) > textChunk || !utf8.ValidString(ev.Text) {
				t.Errorf("delta %q: over %d bytes or split inside a rune", ev.Text, textChunk)
			}
			got.WriteString(ev.Text)
		}
	}
	if got.String() != text || deltas < 2 {
		t.Errorf("%d deltas joined to %q, want several joining to the text", deltas, got.String())
	}
}

func TestStopEarly(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, "rules:\n  - reply: {text: hi, tool_calls: [{name: a}, {name: b}]}\n"))
	n := 0
	for _, err := range m.Generate(t.Context(), &llm.Request{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break // the iterator must not yield again (the range would panic)
	}
	if n != 1 {
		t.Errorf("got %d events before break, want 1", n)
	}
}

func TestNoRule(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, "rules:\n  - agent: parent\n    when: {step: 1}\n    reply: {text: x}\n"))
	long := "please " + strings.Repeat("x", 200) + " TAIL"
	req := &llm.Request{Agent: "general-purpose", Messages: []llm.Message{
		llm.UserText("first"),
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ok")}},
		llm.UserText(long),
	}}
	_, err := collect(t.Context(), m, req)
	if !errors.Is(err, ErrNoRule) {
		t.Fatalf("error = %v, want ErrNoRule", err)
	}
	for _, want := range []string{`"general-purpose"`, "step 2", long[:70]} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "TAIL") {
		t.Errorf("error %q holds the whole user text, want it truncated", err)
	}
}

func TestErrorReply(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, "rules:\n  - reply: {error: overloaded, error_status: 529}\n"))
	_, err := collect(t.Context(), m, &llm.Request{})
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != 529 || pe.Message != "overloaded" || !pe.Retryable() {
		t.Fatalf("error = %#v, want a retryable ProviderError 529 overloaded", err)
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	errStopped := errors.New("stopped by test")
	tests := []struct {
		name        string
		delay       string
		timeout     time.Duration
		wantErr     error
		wantElapsed time.Duration
	}{
		{"waits the delay", "50ms", time.Hour, nil, 50 * time.Millisecond},
		{"cancel ends the wait", "1h", time.Minute, errStopped, time.Minute},
		{"no delay", "0s", time.Hour, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				m := New(mustParse(t, "rules:\n  - reply: {text: late, delay: "+tt.delay+"}\n"))
				ctx, cancel := context.WithTimeoutCause(t.Context(), tt.timeout, errStopped)
				defer cancel()
				start := time.Now()
				evs, err := collect(ctx, m, &llm.Request{})
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				if tt.wantErr != nil && len(evs) != 0 {
					t.Errorf("events before the error: %+v", evs)
				}
				if elapsed := time.Since(start); elapsed != tt.wantElapsed {
					t.Errorf("Generate took %v (fake time), want %v", elapsed, tt.wantElapsed)
				}
			})
		})
	}
}

func TestCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, "rules:\n  - reply: {text: x}\n"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := collect(ctx, m, &llm.Request{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

func TestConcurrentToolCallIDs(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, "rules:\n  - reply: {text: '{{ agent }}', tool_calls: [{name: a}, {name: b, input: {who: '{{ agent }}'}}]}\n"))
	const callers = 64
	var (
		mu  sync.Mutex
		ids = map[string]int{}
		wg  sync.WaitGroup
	)
	for i := range callers {
		agent := []string{"parent", "general-purpose"}[i%2]
		wg.Go(func() {
			evs, err := collect(context.Background(), m, &llm.Request{Agent: agent, Messages: []llm.Message{llm.UserText("go")}})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, ev := range evs {
				if ev.Kind == llm.EventToolCall {
					ids[ev.ToolCall.ID]++
					if !strings.HasPrefix(ev.ToolCall.ID, "call_"+agent+"_1_") {
						t.Errorf("id %q, want prefix call_%s_1_", ev.ToolCall.ID, agent)
					}
				}
			}
		})
	}
	wg.Wait()
	if len(ids) != 2*callers {
		t.Errorf("%d distinct tool-call ids, want %d", len(ids), 2*callers)
	}
	for id, n := range ids {
		if n != 1 {
			t.Errorf("id %s used %d times", id, n)
		}
	}
	if got := len(m.Requests()); got != callers {
		t.Errorf("recorded %d requests, want %d", got, callers)
	}
}

func TestRequestsAreRecordedCopies(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, "rules:\n  - agent: parent\n    reply: {text: x}\n"))
	req := conversation()
	mustGenerate(t, m, req)
	unmatched := &llm.Request{Agent: "nobody", Messages: []llm.Message{llm.UserText("lost")}}
	if _, err := collect(t.Context(), m, unmatched); !errors.Is(err, ErrNoRule) {
		t.Fatalf("error = %v, want ErrNoRule", err)
	}
	want := []llm.Request{*conversation(), *unmatched}

	// Changing the caller's request, or a returned copy, changes nothing recorded.
	req.Messages[0].Content[0].Text = "changed"
	req.Messages[1].Content[1].Input[2] = 'X'
	req.Tools[0].Name = "changed"
	got := m.Requests()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Requests (-want +got):\n%s", diff)
	}
	got[0].Messages[1].Content[1].Input[2] = 'Y'
	got[0].Messages = nil
	if diff := cmp.Diff(want, m.Requests()); diff != "" {
		t.Errorf("Requests after changing a copy (-want +got):\n%s", diff)
	}
}

func TestUnusedAndOnce(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, `
rules:
  - {once: true, reply: {text: first}}
  - {once: true, reply: {text: second}}
  - {agent: parent, reply: {text: parent}}
  - {agent: never, reply: {text: never}}
`))
	if diff := cmp.Diff([]int{0, 1, 2, 3}, m.Unused()); diff != "" {
		t.Errorf("Unused before any call (-want +got):\n%s", diff)
	}
	var got []string
	for range 4 {
		got = append(got, mustGenerate(t, m, &llm.Request{Agent: "parent"}).text)
	}
	if diff := cmp.Diff([]string{"first", "second", "parent", "parent"}, got); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{3}, m.Unused()); diff != "" {
		t.Errorf("Unused (-want +got):\n%s", diff)
	}
	if _, err := collect(t.Context(), m, &llm.Request{Agent: "sub"}); !errors.Is(err, ErrNoRule) {
		t.Errorf("after the once rules fired, error = %v, want ErrNoRule", err)
	}
}

func TestNewHandBuiltScenario(t *testing.T) {
	t.Parallel()
	good := New(&Scenario{Rules: []Rule{{Reply: Reply{Text: "step {{ step }}"}}}})
	if good.Name() != DefaultModel {
		t.Errorf("Name = %q, want %q", good.Name(), DefaultModel)
	}
	if r := mustGenerate(t, good, &llm.Request{}); r.text != "step 1" {
		t.Errorf("text = %q, want step 1", r.text)
	}
	bad := New(&Scenario{Name: "hand", Rules: []Rule{{When: &Conditions{HistoryMatches: "("}}}})
	if _, err := collect(t.Context(), bad, &llm.Request{}); !errors.Is(err, llm.ErrBadConfig) {
		t.Errorf("error = %v, want llm.ErrBadConfig", err)
	}
}

func TestDiscardRequests(t *testing.T) {
	t.Parallel()
	s, err := Parse("d", []byte("rules:\n  - reply: {text: hi}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m := New(s)
	for range m.Generate(context.Background(), &llm.Request{Agent: "parent", Messages: []llm.Message{llm.UserText("x")}}) {
	}
	m.DiscardRequests()
	for range m.Generate(context.Background(), &llm.Request{Agent: "parent", Messages: []llm.Message{llm.UserText("y")}}) {
	}
	if n := len(m.Requests()); n != 0 {
		t.Fatalf("%d requests kept after DiscardRequests", n)
	}
}

// A partial reply streams its text and holds until the call is cancelled; the call then
// fails with the cancellation, the text it streamed left to the caller (partial findings).
func TestPartialHoldsUntilCancelled(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := New(mustParse(t, "rules:\n  - reply: {partial: 'found {{ lastUser }} so far', signal: streamed}\n"))
		errStopped := errors.New("stopped by test")
		ctx, cancel := context.WithCancelCause(t.Context())
		var (
			evs []llm.Event
			err error
		)
		done := make(chan struct{})
		go func() {
			defer close(done)
			evs, err = collect(ctx, m, &llm.Request{Messages: []llm.Message{llm.UserText("clue-7")}})
		}()
		<-m.signal("streamed") // posted once the text has streamed
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("a partial reply ended before its call was cancelled")
		default:
		}
		cancel(errStopped)
		<-done
		if !errors.Is(err, errStopped) {
			t.Fatalf("error = %v, want the cancellation's cause", err)
		}
		if got := llmtest.TextOf(evs); got != "found clue-7 so far" {
			t.Errorf("streamed %q", got)
		}
		for _, ev := range evs {
			if ev.Kind != llm.EventTextDelta {
				t.Errorf("a partial reply yielded %v", ev.Kind)
			}
		}
	})
}

// wait_for holds a call until another reply has posted its signal, which orders parallel
// agents without a clock; a signal posted before the wait lets it through at once.
func TestWaitForSignal(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := New(mustParse(t, `
rules:
  - agent: late
    reply: {text: "after {{ lastUser }}", wait_for: go}
  - agent: early
    reply: {text: "first", signal: go}
`))
		var late []llm.Event
		var lateErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			late, lateErr = collect(t.Context(), m, &llm.Request{Agent: "late", Messages: []llm.Message{llm.UserText("early")}})
		}()
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("the call waiting for a signal answered before it was posted")
		default:
		}
		if r := mustGenerate(t, m, &llm.Request{Agent: "early"}); r.text != "first" {
			t.Errorf("early call = %q", r.text)
		}
		<-done
		if lateErr != nil || llmtest.TextOf(late) != "after early" {
			t.Errorf("late call = %q, %v", llmtest.TextOf(late), lateErr)
		}
		// Posted already: no wait.
		if r := mustGenerate(t, m, &llm.Request{Agent: "late", Messages: []llm.Message{llm.UserText("x")}}); r.text != "after x" {
			t.Errorf("second late call = %q", r.text)
		}
		// A cancelled wait fails with the cause.
		m2 := New(mustParse(t, "rules:\n  - reply: {text: never, wait_for: nobody}\n"))
		errStopped := errors.New("stopped by test")
		ctx, cancel := context.WithTimeoutCause(t.Context(), time.Hour, errStopped)
		defer cancel()
		if _, err := collect(ctx, m2, &llm.Request{}); !errors.Is(err, errStopped) {
			t.Errorf("cancelled wait_for: error = %v", err)
		}
	})
}
