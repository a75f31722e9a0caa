package store

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/stoke-cli/stoke/agents/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func jsonEqual(t testing.TB, a, b any) bool {
	t.Helper()
	return mustJSON(t, a) == mustJSON(t, b)
}

func cloneMessages(ms []llm.Message) []llm.Message {
	out := make([]llm.Message, len(ms))
	for i, m := range ms {
		out[i] = llm.Message{Role: m.Role, Content: append([]llm.Block(nil), m.Content...)}
	}
	return out
}

func toolUse(id, name string) llm.Block {
	return llm.Block{Type: llm.BlockToolUse, ID: id, Name: name, Input: json.RawMessage(`{}`)}
}

func toolResult(id, content string) llm.Block {
	return llm.Block{Type: llm.BlockToolResult, ToolUseID: id, Content: content}
}

func assistant(blocks ...llm.Block) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, Content: blocks}
}

func user(blocks ...llm.Block) llm.Message { return llm.Message{Role: llm.RoleUser, Content: blocks} }

// sampleTranscript is a well-formed transcript of one turn with a tool round and a
// queued message, as a Transcript writes it (into dir).
func sampleTranscript(t testing.TB, dir string) []byte {
	t.Helper()
	path := filepath.Join(dir, "a.jsonl")
	tr, err := OpenTranscript(path, func() time.Time { return time.Unix(0, 0) })
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Write(Record{Type: RecordMeta, TaskID: "a0123456789abcdef", SubagentType: "general-purpose", System: "sys"}); err != nil {
		t.Fatal(err)
	}
	tr.SetTurn(1)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, m := range []struct {
		msg  llm.Message
		info MessageInfo
	}{
		{msg: llm.UserText("look")},
		{msg: assistant(llm.TextBlock("checking"), toolUse("c1", "grep")),
			info: MessageInfo{Start: at, Model: "m-1", Usage: &llm.Usage{InputTokens: 12, OutputTokens: 3, CacheReadInputTokens: 7}}},
		{msg: user(toolResult("c1", "found")), info: MessageInfo{Calls: []CallTime{{ID: "c1", Start: at.Add(time.Second), DurationMS: 42}}}},
		{msg: llm.UserText("Message from the parent agent while you were working:\nhurry")},
		{msg: assistant(llm.TextBlock("done")), info: MessageInfo{Start: at, Usage: &llm.Usage{}}},
	} {
		if err := tr.AppendInfo(m.msg, m.info); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Write(Record{Type: RecordTurn, Turn: 1, Status: "completed", Summary: "done", Start: at, Queued: at.Add(-time.Second), Continuation: "resident"}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func FuzzDecodeTranscript(f *testing.F) {
	dir, err := os.MkdirTemp("", "fuzz-transcript")
	if err != nil {
		f.Fatal(err)
	}
	good := sampleTranscript(f, dir)
	_ = os.RemoveAll(dir)
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add([]byte(`{"type":"message","message":{"role":"user","content":null}}` + "\n" + `{"type":"message","message":{"role":"system"}}`))
	f.Add([]byte(`{"type":"turn","turn":-1}` + "\n\n \n" + `{"type":"message","message":null}` + "\n{"))
	f.Add([]byte("\x00\xff\n[1,2]\n\"x\"\nnull\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		loaded, err := DecodeTranscript(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("DecodeTranscript: %v", err)
		}
		torn := 0
		for _, w := range loaded.Warnings {
			if strings.Contains(w, "torn last line") {
				torn++
			}
		}
		if torn > 1 || (torn == 1 && bytes.HasSuffix(data, []byte("\n"))) {
			t.Fatalf("torn warnings %d for data ending %q: %v", torn, data[max(0, len(data)-5):], loaded.Warnings)
		}
		if len(loaded.Warnings) > bytes.Count(data, []byte("\n"))+1 {
			t.Fatalf("%d warnings for %d lines", len(loaded.Warnings), bytes.Count(data, []byte("\n"))+1)
		}
		for i, m := range loaded.Messages {
			if m.Role != llm.RoleUser && m.Role != llm.RoleAssistant {
				t.Fatalf("message %d has role %q", i, m.Role)
			}
			if i > 0 && loaded.Messages[i-1].Role == m.Role {
				t.Fatalf("messages %d and %d have the same role", i-1, i)
			}
		}
		_, _ = Repair(loaded.Messages)
	})
}

func TestDecodeTranscriptTornLastLine(t *testing.T) {
	t.Parallel()
	good := sampleTranscript(t, t.TempDir())
	whole, err := DecodeTranscript(bytes.NewReader(good))
	if err != nil || len(whole.Warnings) != 0 {
		t.Fatalf("whole transcript: %v %v", err, whole.Warnings)
	}
	if len(whole.Messages) != 4 || whole.Turns != 1 || whole.LastSummary != "done" || whole.Meta.System != "sys" {
		t.Fatalf("whole = %+v", whole)
	}
	// The merge rule joins the tool result and the queued message into one user message.
	if whole.Messages[2].Role != llm.RoleUser || len(whole.Messages[2].Content) != 2 {
		t.Fatalf("merged message = %+v", whole.Messages[2])
	}

	// A crash mid-write leaves a torn last line: skipped with one warning.
	extra := `{"type":"message","turn":2,"message":{"role":"user","content":[{"type":"text","text":"tor`
	torn, err := DecodeTranscript(bytes.NewReader(append(append([]byte{}, good...), extra...)))
	if err != nil {
		t.Fatal(err)
	}
	if len(torn.Warnings) != 1 || !strings.Contains(torn.Warnings[0], "line 8: torn last line skipped") {
		t.Fatalf("warnings = %q", torn.Warnings)
	}
	if !jsonEqual(t, torn.Messages, whole.Messages) || torn.Turns != 1 {
		t.Fatalf("torn transcript lost data: %+v", torn)
	}

	// A corrupt line in the middle is skipped too; the lines after it still count.
	lines := bytes.SplitAfter(good, []byte("\n"))
	lines[2] = []byte("{garbage\n")
	mid, err := DecodeTranscript(bytes.NewReader(bytes.Join(lines, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(mid.Warnings) != 1 || !strings.Contains(mid.Warnings[0], "line 3: corrupt line skipped") || mid.Turns != 1 {
		t.Fatalf("corrupt middle line: %+v", mid)
	}

	// ReadTranscript reads the file; a missing file is an error.
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, append(append([]byte{}, good...), extra...), 0o600); err != nil {
		t.Fatal(err)
	}
	if l, err := ReadTranscript(path); err != nil || len(l.Warnings) != 1 {
		t.Fatalf("ReadTranscript: %v %+v", err, l)
	}
	if _, err := ReadTranscript(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil {
		t.Fatal("missing transcript read without error")
	}
}

func TestRepair(t *testing.T) {
	t.Parallel()
	cut := "interrupted: the tool call did not finish"
	closed := func(id string) llm.Block {
		return llm.Block{Type: llm.BlockToolResult, ToolUseID: id, Content: cut, IsError: true}
	}
	tests := []struct {
		name string
		in   []llm.Message
		want []llm.Message
		rep  Repairs
	}{
		{"empty", nil, []llm.Message{}, Repairs{}},
		{"ends with user", []llm.Message{llm.UserText("hi")}, []llm.Message{llm.UserText("hi")}, Repairs{}},
		{"ends with text", []llm.Message{llm.UserText("hi"), assistant(llm.TextBlock("done"))}, []llm.Message{llm.UserText("hi"), assistant(llm.TextBlock("done"))}, Repairs{}},
		{"answered tool round", []llm.Message{
			llm.UserText("hi"), assistant(toolUse("c1", "grep")), user(toolResult("c1", "x"), llm.TextBlock("a notification")),
		}, []llm.Message{
			llm.UserText("hi"), assistant(toolUse("c1", "grep")), user(toolResult("c1", "x"), llm.TextBlock("a notification")),
		}, Repairs{}},
		{"dangling tool uses", []llm.Message{
			llm.UserText("hi"), assistant(llm.TextBlock("let me look"), toolUse("c1", "grep"), toolUse("c2", "read_file")),
		}, []llm.Message{
			llm.UserText("hi"), assistant(llm.TextBlock("let me look"), toolUse("c1", "grep"), toolUse("c2", "read_file")),
			user(closed("c1"), closed("c2")),
		}, Repairs{Closed: 2}},
		// The assistant message with the call was lost (a corrupt line): its result is an
		// orphan, and the user messages around it merge.
		{"orphan result", []llm.Message{
			llm.UserText("hi"), user(toolResult("c1", "x")), assistant(llm.TextBlock("done")),
		}, []llm.Message{
			llm.UserText("hi"), assistant(llm.TextBlock("done")),
		}, Repairs{Orphans: 1}},
		// The user message with the results was lost: the call is closed before the next
		// assistant message, instead of two assistant messages merging.
		{"lost results", []llm.Message{
			llm.UserText("hi"), assistant(toolUse("c1", "grep")), assistant(llm.TextBlock("done")), llm.UserText("next"),
		}, []llm.Message{
			llm.UserText("hi"), assistant(toolUse("c1", "grep")), user(closed("c1")), assistant(llm.TextBlock("done")), llm.UserText("next"),
		}, Repairs{Closed: 1}},
		{"partly answered, duplicate and stray results, text first", []llm.Message{
			llm.UserText("hi"), assistant(toolUse("c1", "grep"), toolUse("c2", "glob")),
			user(llm.TextBlock("note"), toolResult("c2", "y"), toolResult("c2", "again"), toolResult("zz", "stray")),
		}, []llm.Message{
			llm.UserText("hi"), assistant(toolUse("c1", "grep"), toolUse("c2", "glob")),
			user(closed("c1"), toolResult("c2", "y"), llm.TextBlock("note")),
		}, Repairs{Orphans: 2, Closed: 1}},
		{"starts with the assistant", []llm.Message{
			assistant(toolUse("c1", "grep")), user(toolResult("c1", "x"), llm.TextBlock("go on")), assistant(llm.TextBlock("ok")),
		}, []llm.Message{
			llm.UserText("go on"), assistant(llm.TextBlock("ok")),
		}, Repairs{Leading: 1, Orphans: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			before := cloneMessages(tc.in)
			got, rep := Repair(tc.in)
			if !jsonEqual(t, got, tc.want) {
				t.Fatalf("got  %s\nwant %s", mustJSON(t, got), mustJSON(t, tc.want))
			}
			if rep != tc.rep {
				t.Errorf("repairs = %+v, want %+v", rep, tc.rep)
			}
			if len(tc.in) > 0 && !jsonEqual(t, tc.in, before) {
				t.Errorf("Repair modified its input")
			}
			// Repairing twice changes nothing more.
			if again, rep := Repair(got); !jsonEqual(t, again, got) || rep != (Repairs{}) {
				t.Errorf("second repair: %s %+v", mustJSON(t, again), rep)
			}
			// A repaired chat takes the next instruction as a merged user turn.
			next := AppendMessage(got, llm.UserText("continue"))
			if last := next[len(next)-1]; last.Role != llm.RoleUser || last.Content[len(last.Content)-1].Text != "continue" {
				t.Fatalf("next instruction = %+v", last)
			}
		})
	}
}

func TestAppendMessage(t *testing.T) {
	t.Parallel()
	a1 := assistant(llm.TextBlock("a1"))
	tests := []struct {
		name string
		in   []llm.Message
		add  llm.Message
		want []llm.Message
	}{
		{"first", nil, llm.UserText("u1"), []llm.Message{llm.UserText("u1")}},
		{"alternating", []llm.Message{llm.UserText("u1")}, a1, []llm.Message{llm.UserText("u1"), a1}},
		{"same role merges", []llm.Message{llm.UserText("u1"), a1, user(toolResult("c1", "r"))}, llm.UserText("queued"),
			[]llm.Message{llm.UserText("u1"), a1, user(toolResult("c1", "r"), llm.TextBlock("queued"))}},
		{"assistant merges", []llm.Message{a1}, assistant(llm.TextBlock("a2")),
			[]llm.Message{assistant(llm.TextBlock("a1"), llm.TextBlock("a2"))}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The merge must not write into the blocks of the message it merges into:
			// an earlier request may still share them.
			before := cloneMessages(tc.in)
			var shared [][]llm.Block
			for _, m := range tc.in {
				shared = append(shared, m.Content)
			}
			got := AppendMessage(tc.in, tc.add)
			if !jsonEqual(t, got, tc.want) {
				t.Fatalf("got  %s\nwant %s", mustJSON(t, got), mustJSON(t, tc.want))
			}
			for i := range shared {
				if !jsonEqual(t, shared[i], before[i].Content) {
					t.Fatalf("merge modified the blocks of message %d", i)
				}
			}
		})
	}
}

// FuzzDecodeLine checks the fast line decoder against encoding/json: for any input, both
// fail, or both give the same record.
func FuzzDecodeLine(f *testing.F) {
	dir, err := os.MkdirTemp("", "fuzz-line")
	if err != nil {
		f.Fatal(err)
	}
	for _, line := range bytes.Split(sampleTranscript(f, dir), []byte("\n")) {
		f.Add(line)
	}
	_ = os.RemoveAll(dir)
	for _, s := range []string{
		`{"type":"message","message":{"role":"user","content":[{"type":"tool_use","id":"x","name":"n","input":null}]}}`,
		`{"type":"message","message":{"role":"user","content":[null,{"type":"text","text":"a\u00e9\ud83d\ude00\n\"\\\/"}]}}`,
		`{"Type":"turn","turn":2}`, `{"type":"turn","type":"meta"}`, `{"turn":1.0}`, `{"turn":-0}`, `{"turn":01}`,
		`{"message":{"content":[]},"message":null}`, `{"ts":"2026-01-01T00:00:00Z","status":null,"summary":"\x"}`,
		`{"message":{"role":"assistant","content":[{"type":"tool_use","input":{"a":[1,2e3,-0.5,true,false,null,"\u0041"]}}]}}`,
		`{"message":{"content":[{"is_error":true,"is_error":false}]}}`, "{\"text\":\"\xff\"}", `[]`, `null`, `{"turn":9999999999999999999}`,
		`{"type":"meta","session_id":"s","cwd":"/w","model":"m"}`, `{"usage":null,"calls":null,"start":null}`, `{"usage":{},"calls":[]}`,
		`{"usage":{"input_tokens":1.5}}`, `{"calls":[null,{"id":"x","start":"2026-01-01T00:00:00Z","duration_ms":-1}]}`, `{"calls":[{"ID":"x"}]}`,
		`{"queued":"2026-01-01T00:00:00+02:00","continuation":"revived","usage":{"output_tokens":1,"output_tokens":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var fast, slow Record
		ferr := decodeLine(line, &fast)
		serr := json.Unmarshal(line, &slow)
		if (ferr == nil) != (serr == nil) {
			t.Fatalf("decodeLine error %v, encoding/json error %v", ferr, serr)
		}
		if ferr == nil && !reflect.DeepEqual(fast, slow) {
			t.Fatalf("decodeLine gives\n%#v\nencoding/json gives\n%#v", fast, slow)
		}
	})
}

// The fields a report reads (how each message and turn came about) come back as written,
// through the fast path (no fallback to encoding/json), and a line without them decodes
// as before.
func TestReportFieldsRoundTrip(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	data := sampleTranscript(t, dir)
	recs, warnings, err := ReadRecords(filepath.Join(dir, "a.jsonl"))
	if err != nil || len(warnings) > 0 {
		t.Fatal(err, warnings)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	if len(recs) != len(lines) {
		t.Fatalf("%d records of %d lines", len(recs), len(lines))
	}
	for i, line := range lines {
		var want Record
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(recs[i], want) {
			t.Errorf("line %d: ReadRecords gives\n%#v\nencoding/json gives\n%#v", i+1, recs[i], want)
		}
		d := lineDecoder{data: line}
		var fast Record
		if !d.record(&fast) || !d.end() {
			t.Errorf("line %d falls back to encoding/json: %s", i+1, line)
		}
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	if u := recs[2].Usage; recs[2].Model != "m-1" || !recs[2].Start.Equal(at) || u == nil || u.InputTokens != 12 || u.CacheReadInputTokens != 7 {
		t.Errorf("assistant record: %+v", recs[2])
	}
	if c := recs[3].Calls; len(c) != 1 || c[0].ID != "c1" || c[0].DurationMS != 42 || !c[0].Start.Equal(at.Add(time.Second)) {
		t.Errorf("tool results record: %+v", recs[3])
	}
	if r := recs[len(recs)-1]; r.Continuation != "resident" || !r.Queued.Equal(at.Add(-time.Second)) || !r.Start.Equal(at) {
		t.Errorf("turn record: %+v", r)
	}
	if recs[1].Usage != nil || !recs[1].Start.IsZero() || recs[1].Calls != nil {
		t.Errorf("a message without info says some: %+v", recs[1])
	}
}
