package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/tools"
)

// One turn at a time; a closed runtime refuses to run; statistics reset per instruction.
func TestRuntimeBusyDisposedAndStats(t *testing.T) {
	t.Parallel()
	started, release := make(chan struct{}), make(chan struct{})
	calls := 0
	m := modelFunc(func(ctx context.Context, _ *llm.Request, yield func(llm.Event, error) bool) {
		calls++
		if calls == 1 {
			close(started)
			<-release
			reply(yield, "first")
			return
		}
		reply(yield, "second")
	})
	rt := New(Config{Agent: "a", Model: m})
	type out struct {
		res TurnResult
		err error
	}
	first := make(chan out, 1)
	go func() {
		res, err := rt.Execute(context.Background(), llm.UserText("one"))
		first <- out{res, err}
	}()
	<-started
	if _, err := rt.Execute(context.Background(), llm.UserText("overlap")); !errors.Is(err, ErrBusy) {
		t.Fatalf("concurrent Execute: err = %v, want ErrBusy", err)
	}
	close(release)
	o := <-first
	if o.err != nil || o.res.Reason != ReasonCompleted || o.res.FinalText != "first" || o.res.Stats.ModelCalls != 1 {
		t.Fatalf("turn 1 = %+v, %v", o.res, o.err)
	}
	res, err := rt.Execute(context.Background(), llm.UserText("two"))
	if err != nil || res.FinalText != "second" || res.Stats.ModelCalls != 1 || res.Stats.Usage.Total() != 12 {
		t.Fatalf("turn 2 = %+v, %v (stats must reset per instruction)", res, err)
	}
	if n := len(rt.Chat().Messages()); n != 4 {
		t.Fatalf("chat has %d messages, want 4", n)
	}
	rt.Close()
	rt.Close()
	if _, err := rt.Execute(context.Background(), llm.UserText("three")); !errors.Is(err, ErrDisposed) {
		t.Fatalf("Execute after Close: err = %v, want ErrDisposed", err)
	}
}

// A stream that ends without its final event when cancelled (no error yielded) still keeps
// the text streamed so far as the partial findings.
func TestRuntimeKeepsPartialTextOfCutStream(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	m := modelFunc(func(ctx context.Context, _ *llm.Request, yield func(llm.Event, error) bool) {
		if !yield(llm.Event{Kind: llm.EventTextDelta, Text: "found half"}, nil) {
			return
		}
		close(started)
		<-ctx.Done() // then end the stream without EventDone and without an error
	})
	rt := New(Config{Agent: "a", Model: m})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-started
		cancel(errors.New("stopped"))
	}()
	res, err := rt.Execute(ctx, llm.UserText("go"))
	if err != nil || res.Reason != ReasonCancelled || res.FinalText != "found half" {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

// MaxSteps caps the model calls of one instruction.
func TestRuntimeMaxSteps(t *testing.T) {
	t.Parallel()
	m := modelFunc(func(_ context.Context, _ *llm.Request, yield func(llm.Event, error) bool) {
		reply(yield, "again", llm.Block{ID: "c", Name: "probe"})
	})
	rt := New(Config{Agent: "a", Model: m, MaxSteps: 2, Tools: func() *tools.Set { return tools.NewSet(probe()) }})
	res, err := rt.Execute(context.Background(), llm.UserText("loop"))
	if err != nil || res.Reason != ReasonMaxTurns || !errors.Is(res.Err, ErrMaxSteps) || res.Stats.ModelCalls != 2 || res.Stats.ToolUses != 2 || res.Stats.LastTool != "probe" {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

// Tool-call arguments are stored in the chat as the transcript stores them, and arguments
// that are not JSON never make the transcript (or the turn) fail.
func TestRuntimeNormalizesToolInput(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", `{}`},
		{" \n", `{}`},
		{`{"a": 1, "b": [1, 2]}`, `{"a":1,"b":[1,2]}`},
		{`{"q": "a<b & c"}`, `{"q":"a\u003cb \u0026 c"}`},
		{`{"q":`, `{"_raw_arguments":"{\"q\":"}`},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			t.Parallel()
			m := modelFunc(func(_ context.Context, req *llm.Request, yield func(llm.Event, error) bool) {
				if len(req.Messages) == 1 {
					reply(yield, "", llm.Block{ID: "c1", Name: "probe", Input: json.RawMessage(tc.in)})
					return
				}
				reply(yield, "done")
			})
			path := filepath.Join(t.TempDir(), "t.jsonl")
			tr, err := store.OpenTranscript(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			rt := New(Config{Agent: "a", Model: m, Store: tr, Tools: func() *tools.Set { return tools.NewSet(probe()) }})
			res, err := rt.Execute(context.Background(), llm.UserText("go"))
			if err != nil || res.Reason != ReasonCompleted {
				t.Fatalf("result = %+v, %v", res, err)
			}
			if got := string(rt.Chat().Messages()[1].Content[0].Input); got != tc.want {
				t.Fatalf("chat input = %s, want %s", got, tc.want)
			}
			loaded, err := store.ReadTranscript(path)
			if err != nil || len(loaded.Warnings) != 0 {
				t.Fatalf("ReadTranscript: %v %v", err, loaded)
			}
			if got := string(loaded.Messages[1].Content[0].Input); got != tc.want {
				t.Fatalf("transcript input = %s, want %s", got, tc.want)
			}
		})
	}
}
