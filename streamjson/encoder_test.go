package streamjson

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
)

// counter returns a newUUID func yielding "id-1", "id-2", … (called under the encoder's lock).
func counter() func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("id-%d", n)
	}
}

// writeLog records every Write call separately. It is not safe for concurrent use on
// purpose: the race detector then catches an Encoder that writes without its lock.
type writeLog struct {
	writes [][]byte
}

func (w *writeLog) Write(p []byte) (int, error) {
	w.writes = append(w.writes, bytes.Clone(p))
	return len(p), nil
}

func TestEncoderConcurrentWritersNeverInterleave(t *testing.T) {
	t.Parallel()
	const goroutines, perGoroutine = 100, 100
	var w writeLog
	enc := NewEncoder(&w, "s1", nil)

	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				text := fmt.Sprintf("g%d-%d <&> %s", g, i, strings.Repeat("x", (g*i)%300))
				ev := NewAssistant("m", "model", []llm.Block{llm.TextBlock(text)}, llm.StopEndTurn, llm.Usage{})
				if err := enc.Encode(ev); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Encode: %v", err)
	}

	if got, want := len(w.writes), goroutines*perGoroutine; got != want {
		t.Fatalf("got %d Write calls, want %d (one per event)", got, want)
	}
	next := make([]int, goroutines) // next expected i per goroutine: each goroutine's lines stay in order
	uuids := map[string]bool{}
	for n, line := range w.writes {
		if bytes.Count(line, []byte{'\n'}) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("write %d is not exactly one line: %q", n, line)
		}
		if !gjson.ValidBytes(line) {
			t.Fatalf("write %d is not JSON: %q", n, line)
		}
		ev := gjson.ParseBytes(line)
		var g, i int
		if _, err := fmt.Sscanf(ev.Get("message.content.0.text").Str, "g%d-%d", &g, &i); err != nil {
			t.Fatalf("write %d: text %q: %v", n, ev.Get("message.content.0.text").Str, err)
		}
		if i != next[g] {
			t.Fatalf("write %d: goroutine %d line %d, want %d", n, g, i, next[g])
		}
		next[g]++
		id := ev.Get("uuid").Str
		if uuids[id] {
			t.Fatalf("write %d: duplicate uuid %q", n, id)
		}
		uuids[id] = true
		if sid := ev.Get("session_id").Str; sid != "s1" {
			t.Fatalf("write %d: session_id %q", n, sid)
		}
	}
}

func TestEncoderStamps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name               string
		uuid, session      string
		wantUUID, wantSess string
	}{
		{name: "empty envelope gets both", wantUUID: "id-1", wantSess: "s-enc"},
		{name: "uuid kept", uuid: "mine", wantUUID: "mine", wantSess: "s-enc"},
		{name: "session kept", session: "s-own", wantUUID: "id-1", wantSess: "s-own"},
		{name: "both kept", uuid: "mine", session: "s-own", wantUUID: "mine", wantSess: "s-own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			enc := NewEncoder(&buf, "s-enc", counter())
			ev := NewTaskProgress()
			ev.UUID, ev.SessionID = tt.uuid, tt.session
			if err := enc.Encode(ev); err != nil {
				t.Fatal(err)
			}
			line := gjson.Parse(buf.String())
			if got := line.Get("uuid").Str; got != tt.wantUUID {
				t.Errorf("uuid on the wire = %q, want %q", got, tt.wantUUID)
			}
			if got := line.Get("session_id").Str; got != tt.wantSess {
				t.Errorf("session_id on the wire = %q, want %q", got, tt.wantSess)
			}
			if ev.UUID != tt.wantUUID || ev.SessionID != tt.wantSess {
				t.Errorf("event envelope = (%q, %q), want it stamped (%q, %q)", ev.UUID, ev.SessionID, tt.wantUUID, tt.wantSess)
			}
		})
	}
}

func TestEncoderSetSessionID(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	enc := NewEncoder(&buf, "", counter())
	if err := enc.Encode(NewControlSuccess("r1", nil)); err != nil {
		t.Fatal(err)
	}
	enc.SetSessionID("late")
	if got := enc.SessionID(); got != "late" {
		t.Errorf("SessionID() = %q, want %q", got, "late")
	}
	if err := enc.Encode(NewInit()); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	var got []string
	for _, l := range lines {
		got = append(got, gjson.Get(l, "uuid").Str+"/"+gjson.Get(l, "session_id").Str)
	}
	if diff := cmp.Diff([]string{"id-1/", "id-2/late"}, got); diff != "" {
		t.Errorf("uuid/session_id per line (-want +got):\n%s", diff)
	}
}

func TestEncoderDefaultUUIDIsV4(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	enc := NewEncoder(&buf, "s", nil)
	for range 2 {
		if err := enc.Encode(NewResult(ResultSuccess)); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	seen := map[string]bool{}
	for _, l := range lines {
		id, err := uuid.Parse(gjson.Get(l, "uuid").Str)
		if err != nil || id.Version() != 4 {
			t.Fatalf("uuid %q: want a v4 UUID (err %v)", gjson.Get(l, "uuid").Str, err)
		}
		if seen[id.String()] {
			t.Fatalf("uuid %s repeated", id)
		}
		seen[id.String()] = true
	}
}

// flushLog records writes and flushes in order.
type flushLog struct {
	ops      []string
	flushErr error
}

func (f *flushLog) Write(p []byte) (int, error) {
	f.ops = append(f.ops, "write")
	return len(p), nil
}

func (f *flushLog) Flush() error {
	f.ops = append(f.ops, "flush")
	return f.flushErr
}

func TestEncoderFlushesAfterEveryLine(t *testing.T) {
	t.Parallel()
	var f flushLog
	enc := NewEncoder(&f, "s", counter())
	for range 3 {
		if err := enc.Encode(NewTaskNotification()); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"write", "flush", "write", "flush", "write", "flush"}
	if diff := cmp.Diff(want, f.ops); diff != "" {
		t.Errorf("writer calls (-want +got):\n%s", diff)
	}
}

// failingWriter fails every Write from call number failAt (1-based) on.
type failingWriter struct {
	calls  int
	failAt int
	short  bool // fail by writing less without an error
}

var errDiskFull = errors.New("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.calls < w.failAt {
		return len(p), nil
	}
	if w.short {
		return len(p) / 2, nil
	}
	return 0, errDiskFull
}

func TestEncoderWriteErrorIsSticky(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		w    *failingWriter
		want error
	}{
		{name: "write error", w: &failingWriter{failAt: 2}, want: errDiskFull},
		{name: "short write", w: &failingWriter{failAt: 2, short: true}, want: io.ErrShortWrite},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			enc := NewEncoder(tt.w, "s", counter())
			if err := enc.Encode(NewTaskStarted()); err != nil {
				t.Fatalf("first Encode: %v", err)
			}
			err := enc.Encode(NewTaskStarted())
			if !errors.Is(err, tt.want) {
				t.Fatalf("second Encode = %v, want %v", err, tt.want)
			}
			if again := enc.Encode(NewTaskStarted()); again != err {
				t.Errorf("third Encode = %v, want the remembered %v", again, err)
			}
			if enc.Err() != err {
				t.Errorf("Err() = %v, want %v", enc.Err(), err)
			}
			if tt.w.calls != 2 {
				t.Errorf("writer called %d times, want 2 (no write after the failure)", tt.w.calls)
			}
		})
	}
}

func TestEncoderFlushErrorIsSticky(t *testing.T) {
	t.Parallel()
	f := &flushLog{flushErr: errDiskFull}
	enc := NewEncoder(f, "s", counter())
	err := enc.Encode(NewTaskStarted())
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Encode = %v, want %v", err, errDiskFull)
	}
	if again := enc.Encode(NewTaskStarted()); again != err {
		t.Errorf("second Encode = %v, want the remembered %v", again, err)
	}
	if diff := cmp.Diff([]string{"write", "flush"}, f.ops); diff != "" {
		t.Errorf("writer calls (-want +got):\n%s", diff)
	}
}

func TestEncoderMarshalErrorWritesNothingAndIsNotSticky(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	enc := NewEncoder(&buf, "s", counter())
	bad := NewResult(ResultSuccess)
	bad.TotalCostUSD = math.NaN()
	if err := enc.Encode(bad); err == nil {
		t.Fatal("Encode of a NaN cost succeeded, want an error")
	}
	if buf.Len() != 0 {
		t.Fatalf("a failed marshal wrote %q", buf.String())
	}
	if err := enc.Encode(NewResult(ResultSuccess)); err != nil {
		t.Fatalf("Encode after a marshal error: %v", err)
	}
	if enc.Err() != nil {
		t.Errorf("Err() = %v, want nil", enc.Err())
	}
}

func TestEncoderNilEvent(t *testing.T) {
	t.Parallel()
	if err := NewEncoder(io.Discard, "s", nil).Encode(nil); err == nil {
		t.Fatal("Encode(nil) succeeded")
	}
}

func TestEncoderDiscard(t *testing.T) {
	t.Parallel()
	enc := NewEncoder(io.Discard, "s", nil)
	for _, ev := range []Event{NewInit(), NewTaskStarted(), NewResult(ResultErrorMaxTurns)} {
		if err := enc.Encode(ev); err != nil {
			t.Fatalf("Encode to io.Discard: %v", err)
		}
	}
}

func TestEncoderDoesNotEscapeHTML(t *testing.T) {
	t.Parallel()
	const text = `<task-notification>a && b</task-notification>`
	var buf bytes.Buffer
	enc := NewEncoder(&buf, "s", counter())
	res := NewResult(ResultSuccess)
	res.Result = text
	events := []Event{
		NewAssistant("m", "model", []llm.Block{llm.TextBlock(text), {Type: llm.BlockToolUse, ID: "c", Name: "shell", Input: []byte(`{"command":"a && b > c"}`)}}, llm.StopToolUse, llm.Usage{}),
		NewUser([]llm.Block{{Type: llm.BlockToolResult, ToolUseID: "c", Content: text}}),
		res,
	}
	for _, ev := range events {
		if err := enc.Encode(ev); err != nil {
			t.Fatal(err)
		}
	}
	out := buf.String()
	if strings.Contains(out, `\u003c`) || strings.Contains(out, `\u0026`) || strings.Contains(out, `\u003e`) {
		t.Errorf("output has HTML escapes:\n%s", out)
	}
	if got := strings.Count(out, text); got != 3 {
		t.Errorf("text appears %d times verbatim, want 3:\n%s", got, out)
	}
	if !strings.Contains(out, `"command":"a && b > c"`) {
		t.Errorf("tool input escaped:\n%s", out)
	}
}

func TestEncoderLargeEventThenSmall(t *testing.T) {
	t.Parallel()
	var w writeLog
	enc := NewEncoder(&w, "s", counter())
	big := strings.Repeat("y", 3<<20)
	for _, text := range []string{big, "small"} {
		if err := enc.Encode(NewUser([]llm.Block{llm.TextBlock(text)})); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []string{big, "small"} {
		if got := gjson.GetBytes(w.writes[i], "message.content.0.text").Str; got != want {
			t.Errorf("line %d: text of %d bytes, want %d", i+1, len(got), len(want))
		}
	}
}

func BenchmarkEncodeAssistant(b *testing.B) {
	enc := NewEncoder(io.Discard, "5f0c2a9e-1b7d-4c55-9a2e-3f1e8d0b7c11", func() string { return "0b6e6c1a-3a43-4a0c-9d36-0b8f3c2b7a11" })
	content := []llm.Block{
		llm.TextBlock("I will launch a background agent to audit the dependencies <now>."),
		{Type: llm.BlockToolUse, ID: "call_01X", Name: "task", Input: []byte(`{"description":"Audit deps","prompt":"List outdated modules in go.mod","subagent_type":"general-purpose","run_in_background":true}`)},
	}
	usage := llm.Usage{InputTokens: 2100, OutputTokens: 61}
	ev := NewAssistant("msg_01A", "gpt-5-mini", content, llm.StopToolUse, usage)
	b.ReportAllocs()
	for b.Loop() {
		ev.UUID = ""
		if err := enc.Encode(ev); err != nil {
			b.Fatal(err)
		}
	}
}
