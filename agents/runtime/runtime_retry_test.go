package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/retry"
	"github.com/stoke-cli/stoke/streamjson"
)

// A call whose stream broke and was retried below the runtime (retry.Model) leaves no
// trace of the broken attempt: the chat, the transcript store and the events hold the
// retried answer alone.
func TestRuntimeDiscardsARetriedAttempt(t *testing.T) {
	t.Parallel()
	calls := 0
	m := modelFunc(func(_ context.Context, _ *llm.Request, yield func(llm.Event, error) bool) {
		calls++
		if calls == 1 {
			if yield(llm.Event{Kind: llm.EventTextDelta, Text: "Half an ans"}, nil) &&
				yield(llm.Event{Kind: llm.EventToolCall, ToolCall: llm.Block{ID: "c1", Name: "probe", Input: json.RawMessage(`{}`)}}, nil) {
				yield(llm.Event{}, fmt.Errorf("fake: %w", llm.ErrStreamCut))
			}
			return
		}
		reply(yield, "The whole answer.")
	})
	var (
		mu     sync.Mutex
		events []streamjson.Event
		seen   []llm.EventKind
	)
	store := &memStore{}
	rt := New(Config{
		Agent: "a",
		Model: retry.Wrap(m, retry.Policy{BaseDelay: time.Millisecond}),
		Store: store,
		Emit: func(ev streamjson.Event) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		},
		OnModelEvent: func(ev llm.Event) { seen = append(seen, ev.Kind) },
	})
	defer rt.Close()
	res, err := rt.Execute(t.Context(), llm.UserText("go"))
	if err != nil || res.Reason != ReasonCompleted || res.FinalText != "The whole answer." || res.Stats.ModelCalls != 1 {
		t.Fatalf("result = %+v, %v", res, err)
	}
	msgs := rt.Chat().Messages()
	if len(msgs) != 2 || len(msgs[1].Content) != 1 || msgs[1].Text() != "The whole answer." {
		t.Errorf("chat = %+v, want the instruction and the retried answer alone", msgs)
	}
	if len(store.msgs) != 2 || store.msgs[1].Text() != "The whole answer." || len(store.msgs[1].ToolUses()) != 0 {
		t.Errorf("stored = %+v, want the retried answer alone", store.msgs)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 1 {
		t.Fatalf("%d events, want one assistant line", len(events))
	}
	a, ok := events[0].(*streamjson.Assistant)
	if !ok || len(a.Message.Content) != 1 || a.Message.Content[0].Text != "The whole answer." {
		t.Errorf("event = %+v, want the retried answer alone", events[0])
	}
	want := []llm.EventKind{llm.EventTextDelta, llm.EventToolCall, llm.EventRetry, llm.EventTextDelta, llm.EventDone}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("OnModelEvent saw %v, want %v (the retry included)", seen, want)
	}
}

// memStore is a ChatStore in memory.
type memStore struct{ msgs []llm.Message }

func (s *memStore) Append(m llm.Message) error { s.msgs = append(s.msgs, m); return nil }
func (s *memStore) Sync() error                { return nil }
