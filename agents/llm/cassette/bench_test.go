package cassette

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

// The workload of the benchmarks: 50 agents of 20 calls each (1,000 calls), taken in
// turns; every answer has text and a tool call, and the next request adds the answer and
// a tool result of about 1 KiB, as a tool round does.
const (
	benchAgents = 50
	benchCalls  = 20
)

const benchScenario = `
name: bench
rules:
  - reply:
      text: "Step {{ step }} of {{ agent }}: reading the next file."
      tool_calls: [{name: read_file, input: {file_path: "src/file.go", limit: 200}}]
`

// play makes the workload's 1,000 calls on m.
func play(ctx context.Context, m llm.Model) error {
	convs := make([]*conv, benchAgents)
	pending := make([]llm.Message, benchAgents)
	result := strings.Repeat("package main // a line of the file read\n", 26)
	tools := []string{"read_file", "write_file", "edit", "glob", "grep", "shell"}
	for i := range convs {
		convs[i] = newConv(ctx, fmt.Sprintf("agent-%02d", i), "You are agent "+fmt.Sprint(i)+".", tools...)
		pending[i] = llm.UserText(fmt.Sprintf("Task %d: look at the sources.", i))
	}
	for range benchCalls {
		for i, c := range convs {
			a := c.send(m, pending[i])
			if a.err != nil {
				return a.err
			}
			pending[i] = results(a, result)
		}
	}
	return nil
}

// benchCassette records the workload once.
func benchCassette(b *testing.B) string {
	path := filepath.Join(b.TempDir(), "bench.yaml")
	s, err := scripted.Parse("bench.yaml", []byte(benchScenario))
	if err != nil {
		b.Fatal(err)
	}
	rec, err := Record(scripted.New(s), RecordConfig{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	if err := play(b.Context(), rec); err != nil {
		b.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkPlay1000 compares the two ways of playing a 1,000-call cassette: the scripted
// provider (the cassette read as a scenario: rules by agent and step) and the strict
// replay (by identity and index, every request fingerprinted and checked, answers in the
// recorded order). The replay's budget is 110% of the scripted provider's time.
//
//	go test -run '^$' -bench Play1000 ./agents/llm/cassette
func BenchmarkPlay1000(b *testing.B) {
	path := benchCassette(b)
	scenario, err := scripted.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	file, _, err := Load(path)
	if err != nil {
		b.Fatal(err)
	}
	if len(file.Rules) != benchAgents*benchCalls {
		b.Fatalf("cassette of %d calls", len(file.Rules))
	}
	b.Run("scripted", func(b *testing.B) {
		for b.Loop() {
			if err := play(b.Context(), scripted.New(scenario)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		for b.Loop() {
			p, err := NewReplayer(file, ReplayConfig{})
			if err != nil {
				b.Fatal(err)
			}
			if err := play(b.Context(), p); err != nil {
				b.Fatal(err)
			}
			p.Close()
		}
	})
}
