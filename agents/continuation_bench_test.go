package agents

import (
	"context"
	"fmt"
	"iter"
	"os"
	"testing"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/streamjson"
)

// instantModel answers "ok" at once: the benchmarks below measure stoke's own
// continuation overhead, with model time excluded.
type instantModel struct{}

func (instantModel) Name() string { return "instant" }

func (instantModel) Generate(_ context.Context, _ *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if !yield(llm.Event{Kind: llm.EventTextDelta, Text: "ok"}, nil) {
			return
		}
		yield(llm.Event{Kind: llm.EventDone, StopReason: llm.StopEndTurn, MessageID: "m"}, nil)
	}
}

// benchRegistry returns a registry holding one completed task whose transcript has n
// messages. The "hot" type stays resident after a turn; "cold" declares hooks, so each of
// its continuations is revived from the transcript.
func benchRegistry(b *testing.B, n int, typ string) (*Registry, TaskID, string) {
	b.Helper()
	dir := b.TempDir()
	reg := NewRegistry(context.Background(), RegistryConfig{
		SessionID: "bench", Store: store.At(dir), Model: instantModel{}, MaxBackground: 4, BackgroundAgents: true,
		Catalog: catalog.New(
			catalog.Definition{Name: "hot", Prompt: "p"},
			catalog.Definition{Name: "cold", Prompt: "p", HasHooks: true},
		),
	})
	b.Cleanup(reg.Shutdown)
	id := NewTaskID()
	path := store.At(dir).TaskTranscript(string(id))
	tr, err := store.OpenTranscript(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	_ = tr.Write(store.Record{Type: store.RecordMeta, TaskID: string(id), SubagentType: typ})
	for i := range n {
		m := llm.UserText(fmt.Sprintf("question %d: %s", i, "lorem ipsum dolor sit amet, consectetur adipiscing elit"))
		if i%2 == 1 {
			m = llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(fmt.Sprintf("answer %d", i))}}
		}
		if err := tr.Append(m); err != nil {
			b.Fatal(err)
		}
	}
	_ = tr.Write(store.Record{Type: store.RecordTurn, Turn: 1, Status: string(StatusCompleted), Summary: "ok"})
	if err := tr.Close(); err != nil {
		b.Fatal(err)
	}
	err = reg.Restore([]Row{{TaskID: id, SubagentType: typ, Status: StatusCompleted, Turn: 1, Backgrounded: true, Transcript: path}})
	if err != nil {
		b.Fatal(err)
	}
	return reg, id, path
}

func continueOnce(b *testing.B, reg *Registry, id TaskID, want streamjson.Continuation) {
	res, err := reg.Send(context.Background(), id, "next", "call")
	if err != nil {
		b.Fatal(err)
	}
	if res.Continuation != want {
		b.Fatalf("continuation = %s, want %s", res.Continuation, want)
	}
	row, err := reg.Collect(context.Background(), id, false)
	if err != nil || row.Status != StatusCompleted {
		b.Fatalf("collect: %v %+v", err, row)
	}
}

// BenchmarkContinuation compares a hot continuation (resident runtime) with a revived one
// (transcript read back) as the history grows. Hot should stay flat.
func BenchmarkContinuation(b *testing.B) {
	for _, n := range []int{10, 1000, 10000} {
		b.Run(fmt.Sprintf("hot/messages=%d", n), func(b *testing.B) {
			reg, id, _ := benchRegistry(b, n, "hot")
			continueOnce(b, reg, id, "revived") // becomes resident
			b.ResetTimer()
			for b.Loop() {
				continueOnce(b, reg, id, "resident")
			}
		})
		b.Run(fmt.Sprintf("revived/messages=%d", n), func(b *testing.B) {
			reg, id, path := benchRegistry(b, n, "cold")
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for b.Loop() {
				continueOnce(b, reg, id, "revived")
				// Every iteration revives the same history: the turn just added (its
				// transcript is closed once the turn has settled) is cut off again.
				b.StopTimer()
				if err := os.Truncate(path, st.Size()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
