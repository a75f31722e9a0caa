package headless

import (
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/agents/store"
)

// storedSession writes a session whose parent transcript and one completed background
// agent's transcript each hold n messages.
func storedSession(b *testing.B, home, cwd, id string, n int) {
	b.Helper()
	sess := store.New(home, cwd, id)
	now := time.Now().UTC()
	if err := sess.WriteInfo(store.Info{SessionID: id, CWD: cwd, CreatedAt: now, UpdatedAt: now}); err != nil {
		b.Fatal(err)
	}
	write := func(path string, meta store.Record) {
		tr, err := store.OpenTranscript(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		_ = tr.Write(meta)
		for i := range n {
			m := llm.UserText(fmt.Sprintf("question %d: lorem ipsum dolor sit amet, consectetur adipiscing elit", i))
			if i%2 == 1 {
				m = llm.Message{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock(fmt.Sprintf("answer %d", i))}}
			}
			_ = tr.Append(m)
		}
		if err := tr.Close(); err != nil {
			b.Fatal(err)
		}
	}
	write(sess.ParentTranscript(), store.Record{Type: store.RecordMeta})
	id0 := agents.NewTaskID()
	tpath := sess.TaskTranscript(string(id0))
	write(tpath, store.Record{Type: store.RecordMeta, TaskID: string(id0), SubagentType: catalog.GeneralPurpose})
	row := agents.Row{TaskID: id0, SubagentType: catalog.GeneralPurpose, Status: agents.StatusCompleted, Turn: 1,
		Backgrounded: true, ParentSessionID: id, Transcript: tpath, CreatedAt: now, EndedAt: now}
	data, err := agents.EncodeSidecar(agents.Sidecar{Row: row, CWD: cwd}, sess.Rel)
	if err == nil {
		err = sess.WriteSidecar(string(id0), data)
	}
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkResume is a whole `stoke --resume` run in process: the stored parent
// conversation and roster are loaded, one prompt is answered, the session is saved.
func BenchmarkResume(b *testing.B) {
	s, err := scripted.Parse("bench", []byte("rules:\n  - agent: parent\n    reply: {text: ok, literal: true}\n"))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			home, cwd := b.TempDir(), b.TempDir()
			const id = "33333333-3333-4333-8333-333333333333"
			storedSession(b, home, cwd, id, n)
			parent := store.New(home, cwd, id).ParentTranscript()
			st, err := os.Stat(parent)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				o := Options{Prompt: "next", OutputFormat: OutputStreamJSON, Stdout: io.Discard, Model: scripted.New(s),
					CWD: cwd, Home: home, Resume: id, BackgroundAgents: true, Bare: true}
				if err := Run(b.Context(), o); err != nil {
					b.Fatal(err)
				}
				// Every iteration resumes the same history: the turn just stored is cut off.
				b.StopTimer()
				if err := os.Truncate(parent, st.Size()); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
