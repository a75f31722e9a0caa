package store

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

// writeHistory writes a transcript of n messages to path: user questions, assistant
// answers, and every tenth exchange a tool round, as the runtime writes them.
func writeHistory(tb testing.TB, path string, n int) {
	tb.Helper()
	tr, err := OpenTranscript(path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	if err := tr.Write(Record{Type: RecordMeta, TaskID: "a0123456789abcdef", SubagentType: "general-purpose", System: "sys"}); err != nil {
		tb.Fatal(err)
	}
	tr.SetTurn(1)
	for i := range n {
		var m llm.Message
		switch {
		case i%2 == 0 && i%20 == 10:
			m = user(toolResult(fmt.Sprintf("call_%d", i-1), fmt.Sprintf("line %d: \"quoted\" \\ tab\t ✓ lorem ipsum dolor sit amet", i)))
		case i%2 == 0:
			m = llm.UserText(fmt.Sprintf("question %d: lorem ipsum dolor sit amet, consectetur adipiscing elit", i))
		case i%20 == 9:
			m = assistant(llm.TextBlock("looking"), llm.Block{Type: llm.BlockToolUse, ID: fmt.Sprintf("call_%d", i), Name: "grep",
				Input: json.RawMessage(fmt.Sprintf(`{"pattern":"x%d","path":"src/<dir>"}`, i))})
		default:
			m = assistant(llm.TextBlock(fmt.Sprintf("answer %d", i)))
		}
		if err := tr.Append(m); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tr.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkReadTranscript reads back (revives) transcripts of growing length.
func BenchmarkReadTranscript(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "t.jsonl")
			writeHistory(b, path, n)
			b.ReportAllocs()
			for b.Loop() {
				l, err := ReadTranscript(path)
				if err != nil || len(l.Messages) != n {
					b.Fatalf("read: %v, %d messages", err, len(l.Messages))
				}
			}
		})
	}
}
