package retry

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/goleak"

	"github.com/stoke-cli/stoke/agents/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// attempt is what one call of the fake model yields: events, then err if set.
type attempt struct {
	events []llm.Event
	err    error
}

// fake yields its attempts in order, one per call, and fails the test on a call too many.
type fake struct {
	t        *testing.T
	mu       sync.Mutex
	attempts []attempt
	calls    int
}

func (f *fake) Name() string { return "fake" }

func (f *fake) Generate(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		f.mu.Lock()
		n := f.calls
		f.calls++
		f.mu.Unlock()
		if n >= len(f.attempts) {
			f.t.Errorf("call %d: no attempt left", n+1)
			yield(llm.Event{}, errors.New("no attempt left"))
			return
		}
		a := f.attempts[n]
		for _, ev := range a.events {
			if !yield(ev, nil) {
				return
			}
		}
		if a.err != nil {
			yield(llm.Event{}, a.err)
		}
	}
}

func (f *fake) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func text(s string) llm.Event { return llm.Event{Kind: llm.EventTextDelta, Text: s} }

var done = llm.Event{Kind: llm.EventDone, StopReason: llm.StopEndTurn}

var (
	errCut     = fmt.Errorf("openai: %w: read: connection reset by peer", llm.ErrStreamCut)
	overloaded = &llm.ProviderError{Provider: "anthropic", StatusCode: 529, Message: "Overloaded", InStream: true}
)

func collect(ctx context.Context, m llm.Model) ([]llm.Event, error) {
	var evs []llm.Event
	for ev, err := range m.Generate(ctx, &llm.Request{Agent: "parent"}) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// retryEvent is the EventRetry expected for attempt n (Delay and Err are not compared).
func retryEvent(n int) llm.Event {
	return llm.Event{Kind: llm.EventRetry, Retry: &llm.Retry{Attempt: n, MaxRetries: 2}}
}

var ignoreRetryDetail = cmpopts.IgnoreFields(llm.Retry{}, "Delay", "Err")

func TestGenerate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		attempts  []attempt
		want      []llm.Event
		wantErr   error
		errSays   string
		wantCalls int
	}{
		{
			name:      "no failure",
			attempts:  []attempt{{events: []llm.Event{text("hi"), done}}},
			want:      []llm.Event{text("hi"), done},
			wantCalls: 1,
		},
		{
			name: "one cut after output: the output is voided, then the retry's events",
			attempts: []attempt{
				{events: []llm.Event{text("Hel")}, err: errCut},
				{events: []llm.Event{text("Hello"), done}},
			},
			want:      []llm.Event{text("Hel"), retryEvent(1), text("Hello"), done},
			wantCalls: 2,
		},
		{
			name: "a cut before any output is retried too",
			attempts: []attempt{
				{err: errCut},
				{events: []llm.Event{text("ok"), done}},
			},
			want:      []llm.Event{retryEvent(1), text("ok"), done},
			wantCalls: 2,
		},
		{
			name: "an overloaded error inside the stream is retried",
			attempts: []attempt{
				{events: []llm.Event{text("x")}, err: overloaded},
				{events: []llm.Event{done}},
			},
			want:      []llm.Event{text("x"), retryEvent(1), done},
			wantCalls: 2,
		},
		{
			name: "two cuts, then success",
			attempts: []attempt{
				{events: []llm.Event{text("a")}, err: errCut},
				{events: []llm.Event{text("b")}, err: errCut},
				{events: []llm.Event{text("c"), done}},
			},
			want:      []llm.Event{text("a"), retryEvent(1), text("b"), retryEvent(2), text("c"), done},
			wantCalls: 3,
		},
		{
			name: "more cuts than retries",
			attempts: []attempt{
				{err: errCut}, {err: errCut}, {events: []llm.Event{text("c")}, err: errCut},
			},
			want:      []llm.Event{retryEvent(1), retryEvent(2), text("c")},
			wantErr:   llm.ErrStreamCut,
			errSays:   "gave up after 3 attempts",
			wantCalls: 3,
		},
		{
			name:      "an HTTP error answer is not retried here (the SDK retries those)",
			attempts:  []attempt{{err: &llm.ProviderError{Provider: "openai", StatusCode: 503, Message: "down"}}},
			wantErr:   &llm.ProviderError{},
			wantCalls: 1,
		},
		{
			name:      "a non-retryable error inside the stream",
			attempts:  []attempt{{events: []llm.Event{text("x")}, err: &llm.ProviderError{Provider: "openai", Message: "bad", InStream: true}}},
			want:      []llm.Event{text("x")},
			wantErr:   &llm.ProviderError{},
			wantCalls: 1,
		},
		{
			name:      "a refused connection is not retried",
			attempts:  []attempt{{err: &llm.ConnectError{Provider: "openai", URL: "http://127.0.0.1:1/v1", Err: errors.New("refused")}}},
			wantErr:   &llm.ConnectError{},
			wantCalls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fake{t: t, attempts: tt.attempts}
			m := Wrap(f, Policy{BaseDelay: time.Millisecond})
			got, err := collect(t.Context(), m)
			switch want := tt.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("Generate: %v", err)
				}
			case *llm.ProviderError:
				if !errors.As(err, &want) {
					t.Fatalf("error = %v, want a *llm.ProviderError", err)
				}
			case *llm.ConnectError:
				if !errors.As(err, &want) {
					t.Fatalf("error = %v, want a *llm.ConnectError", err)
				}
			default:
				if !errors.Is(err, want) {
					t.Fatalf("error = %v, want %v", err, want)
				}
			}
			if err != nil && !strings.Contains(err.Error(), tt.errSays) {
				t.Errorf("error %q does not say %q", err, tt.errSays)
			}
			if diff := cmp.Diff(tt.want, got, ignoreRetryDetail, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if n := f.callCount(); n != tt.wantCalls {
				t.Errorf("calls = %d, want %d", n, tt.wantCalls)
			}
		})
	}
}

func TestRetryEventSaysWhy(t *testing.T) {
	t.Parallel()
	f := &fake{t: t, attempts: []attempt{{err: errCut}, {events: []llm.Event{done}}}}
	m := Wrap(f, Policy{BaseDelay: 40 * time.Millisecond, MaxDelay: time.Second})
	evs, err := collect(t.Context(), m)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	r := evs[0].Retry
	if evs[0].Kind != llm.EventRetry || r == nil {
		t.Fatalf("first event = %+v, want EventRetry", evs[0])
	}
	if !errors.Is(r.Err, llm.ErrStreamCut) {
		t.Errorf("Retry.Err = %v, want the cut", r.Err)
	}
	// The first delay is BaseDelay, jittered down by at most a quarter.
	if r.Delay < 30*time.Millisecond || r.Delay > 40*time.Millisecond {
		t.Errorf("Retry.Delay = %v, want 30ms..40ms", r.Delay)
	}
}

func TestDelayDoublesUpToMax(t *testing.T) {
	t.Parallel()
	m := Wrap(&fake{t: t}, Policy{BaseDelay: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond})
	for attempt, want := range []time.Duration{100, 200, 300, 300, 300} {
		want *= time.Millisecond
		if got := m.delay(attempt); got > want || got < want*3/4 {
			t.Errorf("delay(%d) = %v, want %v jittered down by at most 25%%", attempt, got, want)
		}
	}
	if got := m.delay(80); got > 300*time.Millisecond || got <= 0 {
		t.Errorf("delay(80) = %v, want at most MaxDelay (no overflow)", got)
	}
}

func TestPolicyDefaults(t *testing.T) {
	t.Parallel()
	m := Wrap(&fake{t: t}, Policy{})
	if m.policy.MaxRetries != DefaultMaxRetries || m.policy.BaseDelay != DefaultBaseDelay || m.policy.MaxDelay != DefaultMaxDelay {
		t.Errorf("policy = %+v, want the defaults", m.policy)
	}
	never := &fake{t: t, attempts: []attempt{{err: errCut}}}
	if _, err := collect(t.Context(), Wrap(never, Policy{MaxRetries: -1})); !errors.Is(err, llm.ErrStreamCut) || never.callCount() != 1 {
		t.Errorf("MaxRetries -1: error %v after %d calls, want the cut after 1", err, never.callCount())
	}
}

func TestCancelStopsTheWait(t *testing.T) {
	t.Parallel()
	f := &fake{t: t, attempts: []attempt{{events: []llm.Event{text("a")}, err: errCut}}}
	m := Wrap(f, Policy{BaseDelay: time.Hour})
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	stop := errors.New("task_stop")
	var err error
	for ev, e := range m.Generate(ctx, &llm.Request{}) {
		if e != nil {
			err = e
			break
		}
		if ev.Kind == llm.EventRetry {
			cancel(stop) // the wait is an hour: only the cancel can end it
		}
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, stop) {
		t.Fatalf("error = %v, want context.Canceled with its cause", err)
	}
	if n := f.callCount(); n != 1 {
		t.Errorf("calls = %d, want 1 (no retry after the cancel)", n)
	}
}

func TestCancelledCallIsNotRetried(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	f := &fake{t: t, attempts: []attempt{{err: fmt.Errorf("openai: %w: %w", llm.ErrStreamCut, context.Canceled)}}}
	if _, err := collect(ctx, Wrap(f, Policy{BaseDelay: time.Millisecond})); err == nil || f.callCount() != 1 {
		t.Errorf("error %v after %d calls, want the error after 1", err, f.callCount())
	}
}

func TestConsumerStopEndsTheCall(t *testing.T) {
	t.Parallel()
	f := &fake{t: t, attempts: []attempt{{events: []llm.Event{text("a")}, err: errCut}}}
	m := Wrap(f, Policy{BaseDelay: time.Millisecond})
	for ev := range m.Generate(t.Context(), &llm.Request{}) {
		if ev.Kind == llm.EventRetry {
			break
		}
	}
	if n := f.callCount(); n != 1 {
		t.Errorf("calls = %d, want 1: a consumer that stops at the retry gets no second call", n)
	}
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{errCut, true},
		{overloaded, true},
		{&llm.ProviderError{StatusCode: 529}, false},
		{&llm.ProviderError{StatusCode: 400, InStream: true}, false},
		{&llm.TimeoutError{Timeout: time.Minute, Err: context.DeadlineExceeded}, true},
		{fmt.Errorf("model call: %w", &llm.TimeoutError{Timeout: time.Minute, Err: context.DeadlineExceeded}), true},
		{&llm.AnswerTooLargeError{Limit: 16 << 20}, false},
		{context.Canceled, false},
		{context.DeadlineExceeded, false}, // the run's --timeout, not a request's
	}
	for _, tt := range tests {
		if got := Retryable(tt.err); got != tt.want {
			t.Errorf("Retryable(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// BenchmarkGenerate is the cost the wrapper adds to a call that does not break:
// a 100-event answer, ranged over bare and wrapped.
func BenchmarkGenerate(b *testing.B) {
	events := make([]llm.Event, 100)
	for i := range events {
		events[i] = text("x")
	}
	events[99] = done
	bare := eventsModel(events)
	for _, bm := range []struct {
		name string
		m    llm.Model
	}{{"bare", bare}, {"wrapped", Wrap(bare, Policy{})}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := collect(b.Context(), bm.m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// eventsModel answers every call with the same events.
type eventsModel []llm.Event

func (eventsModel) Name() string { return "events" }

func (e eventsModel) Generate(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		for _, ev := range e {
			if !yield(ev, nil) {
				return
			}
		}
	}
}
