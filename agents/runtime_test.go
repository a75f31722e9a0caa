package agents

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/tools"
)

// One turn at a time; a closed runtime refuses to run; statistics reset per instruction.
func TestRuntimeBusyDisposedAndStats(t *testing.T) {
	t.Parallel()
	g := newGate("", "first")
	calls := 0
	m := newFake(func(ctx context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		calls++
		if calls == 1 {
			g.gen(ctx, req, yield)
			return
		}
		answer(yield, "second")
	})
	rt := NewRuntime(RuntimeConfig{Agent: "a", Model: m})
	type out struct {
		res TurnResult
		err error
	}
	first := make(chan out, 1)
	go func() {
		res, err := rt.Execute(context.Background(), llm.UserText("one"))
		first <- out{res, err}
	}()
	g.wait(t)
	if _, err := rt.Execute(context.Background(), llm.UserText("overlap")); !errors.Is(err, ErrBusy) {
		t.Fatalf("concurrent Execute: err = %v, want ErrBusy", err)
	}
	close(g.release)
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
	m := newFake(func(ctx context.Context, _ llm.Request, yield func(llm.Event, error) bool) {
		if !yield(llm.Event{Kind: llm.EventTextDelta, Text: "found half"}, nil) {
			return
		}
		close(started)
		<-ctx.Done() // then end the stream without EventDone and without an error
	})
	rt := NewRuntime(RuntimeConfig{Agent: "a", Model: m})
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		<-started
		cancel(ErrStopped)
	}()
	res, err := rt.Execute(ctx, llm.UserText("go"))
	if err != nil || res.Reason != ReasonCancelled || res.FinalText != "found half" {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

// MaxSteps caps the model calls of one instruction.
func TestRuntimeMaxSteps(t *testing.T) {
	t.Parallel()
	m := newFake(func(_ context.Context, _ llm.Request, yield func(llm.Event, error) bool) {
		answer(yield, "again", llm.Block{ID: "c", Name: "probe"})
	})
	rt := NewRuntime(RuntimeConfig{Agent: "a", Model: m, MaxSteps: 2, Tools: func() *tools.Set { return tools.NewSet(nopTool("probe")) }})
	res, err := rt.Execute(context.Background(), llm.UserText("loop"))
	if err != nil || res.Reason != ReasonMaxTurns || !errors.Is(res.Err, ErrMaxSteps) || res.Stats.ModelCalls != 2 || res.Stats.ToolUses != 2 || res.Stats.LastTool != "probe" {
		t.Fatalf("result = %+v, %v", res, err)
	}
}

// A launch that fails after its row was recorded is reported as a failure, never as a
// background agent that is running.
func TestTaskToolReportsLaunchFailure(t *testing.T) {
	t.Parallel()
	h := newHarness(t, replyText("never"), func(c *RegistryConfig) {
		// The session directory is a file: the transcript cannot be created.
		file := filepath.Join(t.TempDir(), "not-a-dir")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		c.Store = store.At(file)
	})
	for _, bg := range []bool{true, false} {
		res := h.call(h.ctx(), ToolTask, map[string]any{"description": "d", "prompt": "p", "run_in_background": bg})
		if !res.IsError || strings.Contains(res.Content, "running in the background") || !strings.Contains(res.Content, "failed to start") {
			t.Fatalf("background=%v: result = %+v", bg, res)
		}
		id := taskIDOf(t, res)
		if row, _ := h.reg.Get(id); row.Status != StatusFailed {
			t.Fatalf("row = %+v", row)
		}
		if h.disposals(id) != 1 {
			t.Fatal("controller of the failed launch not disposed once")
		}
	}
	if n := len(h.model.requests()); n != 0 {
		t.Fatalf("model got %d requests", n)
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
			m := newFake(func(_ context.Context, req llm.Request, yield func(llm.Event, error) bool) {
				if len(req.Messages) == 1 {
					answer(yield, "", llm.Block{ID: "c1", Name: "probe", Input: json.RawMessage(tc.in)})
					return
				}
				answer(yield, "done")
			})
			path := filepath.Join(t.TempDir(), "t.jsonl")
			tr, err := store.OpenTranscript(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			rt := NewRuntime(RuntimeConfig{Agent: "a", Model: m, Store: tr, Tools: func() *tools.Set { return tools.NewSet(nopTool("probe")) }})
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
