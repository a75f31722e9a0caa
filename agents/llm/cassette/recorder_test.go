package cassette

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

const lookScenario = `
name: look
rules:
  - agent: parent
    when: {step: 1}
    reply:
      text: "Let me look at {{ lastUser }}."
      tool_calls:
        - name: read_file
          input: {z_last: 1.50, file_path: "a<b>.txt", a_first: [true, null, "x"]}
  - agent: parent
    when: {step: 2}
    reply:
      text: "It says: {{ lastToolResult }}"
      usage: {input_tokens: 120, output_tokens: 7, cache_read_input_tokens: 100}
`

// record plays a two-call parent conversation on inner through a Recorder at path.
func record(t *testing.T, inner llm.Model, path string, cfg RecordConfig, prompt, result string) []answer {
	t.Helper()
	cfg.Path = path
	rec, err := Record(inner, cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := newConv(t.Context(), "parent", "You are stoke.", "read_file", "task")
	a1 := c.send(rec, llm.UserText(prompt))
	a2 := c.send(rec, results(a1, result))
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return []answer{a1, a2}
}

func TestRecordThenReplayAnswersAsRecorded(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "look.yaml")
	want := record(t, mustScenario(t, lookScenario), path, RecordConfig{Provider: "scripted"}, "main.go", "package main")
	if want[0].err != nil || want[1].err != nil {
		t.Fatalf("recorded run failed: %v %v", want[0].err, want[1].err)
	}

	p := mustOpen(t, path, ReplayConfig{})
	c := newConv(t.Context(), "parent", "You are stoke.", "read_file", "task")
	got := []answer{c.send(p, llm.UserText("main.go"))}
	got = append(got, c.send(p, results(got[0], "package main")))
	for i := range want {
		if got[i].err != nil {
			t.Fatalf("replayed call %d: %v", i+1, got[i].err)
		}
		// The runtime keeps arguments as json.Marshal writes them (escapes and all).
		keep := cmp.Transformer("kept", func(in json.RawMessage) string { b, _ := json.Marshal(in); return string(b) })
		if d := cmp.Diff(want[i], got[i], cmp.AllowUnexported(answer{}), keep); d != "" {
			t.Errorf("replayed call %d differs (-recorded +replayed):\n%s", i+1, d)
		}
	}
	if u := got[1].done.Usage; u.CacheReadInputTokens != 100 || u.InputTokens != 120 {
		t.Errorf("replayed usage %+v", u)
	}
	if len(p.Unplayed()) != 0 {
		t.Errorf("unplayed: %v", p.Unplayed())
	}
}

func TestReplayKeepsArgumentsAsWritten(t *testing.T) {
	t.Parallel()
	const raw = `{"z_last":1.50,"file_path":"a<b>.txt","a_first":[true,null,"x",{"k":-2e3}]}`
	path := filepath.Join(t.TempDir(), "c.yaml")
	want := record(t, &rawModel{input: raw}, path, RecordConfig{}, "x", "y")
	p := mustOpen(t, path, ReplayConfig{})
	c := newConv(t.Context(), "parent", "You are stoke.", "read_file", "task")
	got := c.send(p, llm.UserText("x"))
	if string(got.calls[0].Input) != raw || string(want[0].calls[0].Input) != raw {
		t.Errorf("replayed arguments %s, want the recorded %s: key order or number spelling lost", got.calls[0].Input, raw)
	}
}

// rawModel answers every call with one tool call whose arguments are input, verbatim.
type rawModel struct{ input string }

func (m *rawModel) Name() string { return "raw" }

func (m *rawModel) Generate(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if yield(llm.Event{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "call_1", Name: "read_file", Input: []byte(m.input)}}, nil) {
			yield(llm.Event{Kind: llm.EventDone, StopReason: llm.StopToolUse}, nil)
		}
	}
}

func TestCassetteIsAScenario(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "look.yaml")
	want := record(t, mustScenario(t, lookScenario), path, RecordConfig{}, "main.go", "package main")
	m, err := scripted.Open(path)
	if err != nil {
		t.Fatalf("the scripted provider rejects a cassette: %v", err)
	}
	c := newConv(t.Context(), "parent", "You are stoke.", "read_file", "task")
	a1 := c.send(m, llm.UserText("main.go"))
	a2 := c.send(m, results(a1, "package main"))
	if a1.text != want[0].text || a2.text != want[1].text || a1.calls[0].ID != want[0].calls[0].ID ||
		a1.done.StopReason != llm.StopToolUse || !bytes.Equal(normJSON(a1.calls[0].Input), normJSON(want[0].calls[0].Input)) {
		t.Errorf("scripted play of the cassette: %+v %+v, recorded %+v %+v", a1, a2, want[0], want[1])
	}
	if u := m.Unused(); len(u) != 0 {
		t.Errorf("rules never played: %v", u)
	}
}

func normJSON(raw []byte) []byte { return []byte(canonicalJSON(raw)) }

func TestRecorderKeepsSecretsOut(t *testing.T) {
	t.Parallel()
	const key = "sk-live-0123456789"
	echo := mustScenario(t, `
rules:
  - when: {step: 1}
    reply:
      text: "You said {{ lastUser }}"
      tool_calls: [{name: read_file, input: {file_path: "{{ lastUser }}"}}]
  - when: {step: 2}
    reply: {error: "upstream rejected key sk-live-0123456789", error_status: 401}
`)
	path := filepath.Join(t.TempDir(), "c.yaml")
	rec, err := Record(echo, RecordConfig{Path: path, Secrets: []string{key}})
	if err != nil {
		t.Fatal(err)
	}
	c := newConv(t.Context(), "parent", "system with "+key, "read_file")
	a := c.send(rec, llm.UserText("my key is "+key))
	if !strings.Contains(a.text, key) {
		t.Fatalf("the caller must get the real answer: %q", a.text)
	}
	if b := c.send(rec, results(a, key)); b.err == nil {
		t.Fatal("want the recorded error")
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(key)) {
		t.Fatalf("the cassette holds the key:\n%s", data)
	}
	if !bytes.Contains(data, []byte("You said my key is "+Redacted)) || !bytes.Contains(data, []byte("upstream rejected key "+Redacted)) {
		t.Errorf("want the key redacted in text, input and error:\n%s", data)
	}
}

// A checkout may hold FILE.partial as a symbolic link to a file elsewhere: recording to
// FILE must not write through it.
func TestRecordDoesNotWriteThroughALinkedPartial(t *testing.T) {
	t.Parallel()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("precious\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.Symlink(victim, path+PartialSuffix); err != nil {
		t.Fatal(err)
	}
	record(t, mustScenario(t, lookScenario), path, RecordConfig{}, "main.go", "package main")
	if data, err := os.ReadFile(victim); err != nil || string(data) != "precious\n" {
		t.Errorf("the link's target was written: %q, %v", data, err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("the cassette is not a regular file: %v, %v", fi, err)
	}
	if f, partial, err := Load(path); err != nil || partial || len(f.Rules) != 2 {
		t.Errorf("the cassette: %v, partial %v", err, partial)
	}
}

func TestPartialCassetteKeepsWholeEntries(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.yaml")
	rec, err := Record(mustScenario(t, lookScenario), RecordConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	c := newConv(t.Context(), "parent", "s", "read_file")
	a := c.send(rec, llm.UserText("x"))
	c.send(rec, results(a, "y"))
	// The process "dies" here: no Close. Both answered calls are on disk already.
	defer rec.Close()
	data, err := os.ReadFile(path + PartialSuffix)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cassette itself appears only at Close: %v", err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want int
	}{
		{"whole", data, 2},
		{"cut in the last entry", data[:len(data)-40], 1},
		{"cut in the first entry", data[:bytes.Index(data, []byte("\n  - "))+30], 0},
	} {
		f, partial, err := Parse("c.yaml.partial", tc.data)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !partial || len(f.Rules) != tc.want {
			t.Errorf("%s: partial=%v, %d entries; want partial, %d", tc.name, partial, len(f.Rules), tc.want)
		}
	}
}

func TestRecordErrorsAndCancellation(t *testing.T) {
	t.Parallel()
	failing := &failModel{err: &llm.ProviderError{Provider: "openai", StatusCode: 503, Message: "overloaded"}}
	path := filepath.Join(t.TempDir(), "c.yaml")
	rec, err := Record(failing, RecordConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	c := newConv(t.Context(), "parent", "s")
	want := c.send(rec, llm.UserText("hi"))
	ctx, cancel := context.WithCancel(t.Context())
	blocked := &conv{ctx: ctx, req: llm.Request{Agent: "general-purpose"}}
	failing.block = true
	go cancel()
	wantCancelled := blocked.send(rec, llm.UserText("wait"))
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	p := mustOpen(t, path, ReplayConfig{})
	c = newConv(t.Context(), "parent", "s")
	got := c.send(p, llm.UserText("hi"))
	var pe *llm.ProviderError
	if !errors.As(got.err, &pe) || got.err.Error() != want.err.Error() || !pe.Retryable() {
		t.Errorf("replayed error %v, recorded %v", got.err, want.err)
	}
	ctx, cancel = context.WithCancel(t.Context())
	blocked = &conv{ctx: ctx, req: llm.Request{Agent: "general-purpose"}}
	go cancel()
	gotCancelled := blocked.send(p, llm.UserText("wait"))
	if !errors.Is(gotCancelled.err, context.Canceled) || gotCancelled.text != wantCancelled.text || gotCancelled.text != "partial" {
		t.Errorf("replayed cancelled call: %q %v; recorded %q %v", gotCancelled.text, gotCancelled.err, wantCancelled.text, wantCancelled.err)
	}
}

// failModel fails every call with err, or, when block is set, streams "partial" and
// waits for its context.
type failModel struct {
	err   error
	block bool
}

func (m *failModel) Name() string { return "fail" }

func (m *failModel) Generate(ctx context.Context, _ *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if !m.block {
			yield(llm.Event{}, m.err)
			return
		}
		if !yield(llm.Event{Kind: llm.EventTextDelta, Text: "partial"}, nil) {
			return
		}
		<-ctx.Done()
		yield(llm.Event{}, context.Cause(ctx))
	}
}

// A retrying provider starts a broken call over with an event that voids what came before
// it (agents/llm/retry's EventRetry): the cassette keeps the answer the runtime kept.
func TestRecorderDropsWhatARetryVoids(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "c.yaml")
	rec, err := Record(&retryModel{}, RecordConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	newConv(t.Context(), "parent", "s").send(rec, llm.UserText("hi"))
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	p := mustOpen(t, path, ReplayConfig{})
	got := newConv(t.Context(), "parent", "s").send(p, llm.UserText("hi"))
	if got.err != nil || got.text != "whole answer" || len(got.calls) != 1 || got.calls[0].ID != "call_2" {
		t.Errorf("replayed %+v, want only the retried attempt's answer", got)
	}
}

// retryModel streams a broken attempt, announces a retry, and answers.
type retryModel struct{}

func (retryModel) Name() string { return "retry" }

func (retryModel) Generate(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		for _, ev := range []llm.Event{
			{Kind: llm.EventTextDelta, Text: "broken "},
			{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "call_1", Name: "grep", Input: []byte(`{}`)}},
			{Kind: llm.EventRetry},
			{Kind: llm.EventTextDelta, Text: "whole answer"},
			{Kind: llm.EventToolCall, ToolCall: llm.Block{Type: llm.BlockToolUse, ID: "call_2", Name: "grep", Input: []byte(`{}`)}},
			{Kind: llm.EventDone, StopReason: llm.StopToolUse},
		} {
			if !yield(ev, nil) {
				return
			}
		}
	}
}
