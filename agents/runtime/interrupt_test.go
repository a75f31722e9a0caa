package runtime

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
)

// texts returns the blocks of m as "text:..." and "result:..." strings, in order.
func texts(m llm.Message) []string {
	var out []string
	for _, b := range m.Content {
		switch b.Type {
		case llm.BlockText:
			out = append(out, "text:"+b.Text)
		case llm.BlockToolResult:
			out = append(out, "result:"+b.Content)
		}
	}
	return out
}

// A cancelled turn closes its place in the history with the interrupt marker, so that
// the next instruction reaches the model after it, not merged into the stopped one; a
// tool call the cancellation cut mid-way has a result that says so, and a later call of
// the same reply that never started has one too.
func TestInterruptClosesHistory(t *testing.T) {
	t.Parallel()
	errInterrupt := errors.New("the host interrupted")
	for _, cut := range []string{"model call", "tool call"} {
		t.Run(cut, func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{})
			var later atomic.Bool
			slow := toolFunc("slow", func(ctx context.Context, _ tools.Call) tools.Result {
				close(started)
				<-ctx.Done()
				return tools.Errorf("slow: cancelled: %v", context.Cause(ctx))
			})
			after := toolFunc("after", func(context.Context, tools.Call) tools.Result {
				later.Store(true)
				return tools.Result{Content: "ran"}
			})
			var last llm.Message // the last message of the latest request
			m := modelFunc(func(ctx context.Context, req *llm.Request, yield func(llm.Event, error) bool) {
				last = req.Messages[len(req.Messages)-1]
				switch {
				case strings.Contains(llm.Message.Text(last), "second"):
					reply(yield, "answered the second")
				case cut == "model call":
					close(started)
					<-ctx.Done()
					yield(llm.Event{}, ctx.Err())
				default:
					reply(yield, "", llm.Block{ID: "s", Name: "slow"}, llm.Block{ID: "a", Name: "after"})
				}
			})
			rt := New(Config{Agent: "a", Model: m, Tools: func() *tools.Set { return tools.NewSet(slow, after) }})
			ctx, cancel := context.WithCancelCause(t.Context())
			go func() {
				<-started
				cancel(errInterrupt)
			}()
			res, err := rt.Execute(ctx, llm.UserText("first"))
			if err != nil || res.Reason != ReasonCancelled || !errors.Is(res.Err, errInterrupt) {
				t.Fatalf("first turn = %+v, %v; want cancelled by the interrupt", res, err)
			}
			if later.Load() {
				t.Error("the call after the cut one ran")
			}
			res, err = rt.Execute(t.Context(), llm.UserText("second"))
			if err != nil || res.FinalText != "answered the second" {
				t.Fatalf("second turn = %+v, %v", res, err)
			}
			got := texts(last)
			want := []string{"text:first", "text:" + InterruptMarker, "text:second"}
			if cut == "tool call" {
				want = []string{"result:", "result:" + InterruptedToolUse, "text:" + InterruptMarker, "text:second"}
			}
			if len(got) != len(want) {
				t.Fatalf("the second request ends with %q, want %q", got, want)
			}
			for i := range want {
				if want[i] == "result:" {
					if !strings.HasPrefix(got[i], "result:"+InterruptedToolUse+"\n") || !strings.Contains(got[i], "slow: cancelled") {
						t.Errorf("the cut call's result is %q: want the marker, then what the tool said", got[i])
					}
					continue
				}
				if got[i] != want[i] {
					t.Errorf("block %d of the second request's last message is %q, want %q (all: %q)", i, got[i], want[i], got)
				}
			}
		})
	}
}
