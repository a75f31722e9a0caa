package headless

import (
	"context"
	"fmt"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/retry"
)

// cutFirst is a model whose first call breaks off after its first event.
type cutFirst struct {
	llm.Model
	cut atomic.Bool
}

func (m *cutFirst) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	if !m.cut.CompareAndSwap(false, true) {
		return m.Model.Generate(ctx, req)
	}
	return func(yield func(llm.Event, error) bool) {
		for ev, err := range m.Model.Generate(ctx, req) {
			if err == nil && yield(ev, nil) {
				yield(llm.Event{}, fmt.Errorf("test: %w", llm.ErrStreamCut))
			}
			return
		}
	}
}

// With --include-partial-messages, a parent call retried after its stream broke shows
// as a void streamed message (closed by message_stop), a system/api_retry line, and
// the retried message; only the retried one becomes an assistant line.
func TestSDKPartialMessagesOfARetriedCall(t *testing.T) {
	t.Parallel()
	const answer = "A reply long enough to stream in more than one piece: sixty-four bytes and then some."
	o := sdkOpts(t, model(t, "rules:\n  - agent: parent\n    reply: {text: \""+answer+"\"}\n"))
	o.Model = retry.Wrap(&cutFirst{Model: o.Model}, retry.Policy{BaseDelay: time.Millisecond})
	o.SDK.IncludePartialMessages = true
	h := startHost(t, o)
	h.user("go")
	lines, err := h.closeStdin()
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var kinds []string
	var streamed []string // the text of each streamed message
	var voidID string     // the id of the first streamed message, the void one
	for _, l := range lines {
		switch typ := l.Get("type").Str; {
		case typ == "stream_event":
			ev := l.Get("event.type").Str
			if ev == "content_block_delta" && len(kinds) > 0 && kinds[len(kinds)-1] == ev {
				streamed[len(streamed)-1] += l.Get("event.delta.text").Str
				continue // several deltas count once
			}
			switch ev {
			case "message_start":
				streamed = append(streamed, "")
				if voidID == "" {
					voidID = l.Get("event.message.id").Str
				}
			case "content_block_delta":
				streamed[len(streamed)-1] += l.Get("event.delta.text").Str
			}
			kinds = append(kinds, ev)
		case typ == "system" && l.Get("subtype").Str == "api_retry":
			kinds = append(kinds, "api_retry")
			if l.Get("attempt").Int() != 1 || l.Get("max_retries").Int() != retry.DefaultMaxRetries ||
				l.Get("error").Str != "unknown" || !strings.Contains(l.Get("error_message").Str, llm.ErrStreamCut.Error()) || l.Get("error_status").Type.String() != "Null" ||
				l.Get("discard_message_id").Str == "" || l.Get("discard_message_id").Str != voidID {
				t.Errorf("api_retry line = %s", l.Raw)
			}
		case typ == "assistant":
			kinds = append(kinds, "assistant")
			if got := l.Get("message.content.0.text").Str; got != answer || l.Get("message.content.#").Int() != 1 {
				t.Errorf("assistant line = %s, want the whole answer once", l.Raw)
			}
		}
	}
	want := []string{
		"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_stop",
		"api_retry",
		"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop",
		"assistant",
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if len(streamed) != 2 || !strings.HasPrefix(answer, streamed[0]) || streamed[0] == answer || streamed[1] != answer {
		t.Errorf("streamed messages = %q, want a void part of the answer, then the whole answer", streamed)
	}
}
