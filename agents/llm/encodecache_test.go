package llm

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// counter encodes a message as its text, quoted, and counts the calls by index.
type counter map[int]int

func (c counter) encode(i int, m Message) ([]byte, error) {
	c[i]++
	if m.Content[0].Text == "" {
		return []byte{}, nil // a message that encodes to nothing
	}
	return fmt.Appendf(nil, "%q", m.Content[0].Text), nil
}

func TestJoinEncodesEachMessageOnce(t *testing.T) {
	t.Parallel()
	var c EncodeCache
	calls := counter{}
	chat := []Message{UserText("a"), {Role: RoleAssistant, Content: []Block{TextBlock("")}}, UserText("b")}
	tests := []struct {
		name string
		add  []Message
		n    int // messages joined
		want string
	}{
		{"first request", nil, 2, `"a"`},
		{"the next one grows", nil, 3, `"a","b"`},
		{"more messages", []Message{{Role: RoleAssistant, Content: []Block{TextBlock("c")}}, UserText("d")}, 5, `"a","b","c","d"`},
		{"fewer than joined before", nil, 1, `"a"`},
	}
	for _, tt := range tests {
		chat = append(chat, tt.add...)
		got, err := c.Join("p m", chat, tt.n, calls.encode)
		if err != nil || string(got) != tt.want {
			t.Fatalf("%s: Join = %s, %v; want %s", tt.name, got, err, tt.want)
		}
	}
	for i := range chat {
		if calls[i] != 1 {
			t.Errorf("message %d encoded %d times, want once", i, calls[i])
		}
	}
	if data, ok := c.Get("p m", 2, chat[2]); !ok || string(data) != `"b"` {
		t.Errorf("Get(2) = %s, %v; want the joined message's bytes", data, ok)
	}
	if got, _ := c.Join("other model", chat, 1, calls.encode); string(got) != `"a"` || calls[0] != 2 {
		t.Errorf("another owner's Join = %s after %d encodings of message 0, want it encoded again", got, calls[0])
	}
}

// TestJoinNeverWritesBytesHandedOut changes a joined message and joins again: the bytes
// of the earlier request (which the transport may still be sending) stay as they were.
func TestJoinNeverWritesBytesHandedOut(t *testing.T) {
	t.Parallel()
	var c EncodeCache
	calls := counter{}
	chat := []Message{UserText("one"), {Role: RoleAssistant, Content: []Block{TextBlock("two")}}, UserText("three")}
	before, err := c.Join("p m", chat, 3, calls.encode)
	if err != nil {
		t.Fatal(err)
	}
	sent := string(before)
	chat[1] = Message{Role: RoleAssistant, Content: []Block{TextBlock("TWO")}} // a new Content slice
	after, err := c.Join("p m", chat, 3, calls.encode)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != `"one","TWO","three"` || calls[1] != 2 || calls[2] != 2 || calls[0] != 1 {
		t.Errorf("after the change Join = %s (encodings %v), want message 1 and what follows encoded again", after, calls)
	}
	if string(before) != sent {
		t.Errorf("the first request's bytes became %s, were %s", before, sent)
	}
	// An append to what Join returned cannot write into the cache either.
	short, _ := c.Join("p m", chat, 1, calls.encode)
	_ = append(short, "garbage"...)
	if again, _ := c.Join("p m", chat, 3, calls.encode); string(again) != `"one","TWO","three"` {
		t.Errorf("Join = %s after an append to an earlier result", again)
	}
}

func TestJoinWithoutCache(t *testing.T) {
	t.Parallel()
	var c *EncodeCache
	calls := counter{}
	chat := []Message{UserText("x"), {Role: RoleAssistant, Content: []Block{TextBlock("")}}, UserText("y")}
	for range 2 {
		if got, err := c.Join("p m", chat, 3, calls.encode); err != nil || string(got) != `"x","y"` {
			t.Fatalf("Join = %s, %v", got, err)
		}
	}
	if calls[0] != 2 {
		t.Errorf("a nil cache encoded message 0 %d times, want every time (2)", calls[0])
	}
}

func TestCachedEnvelope(t *testing.T) {
	t.Parallel()
	var c EncodeCache
	type key struct{ model string }
	builds := 0
	for _, step := range []struct {
		key        key
		built      string // what build makes this time
		want       string
		wantBuilds int
	}{
		{key{"a"}, "A", "A", 1},
		{key{"a"}, "not built", "A", 1},     // the same key: kept
		{key{"b"}, "B", "B", 2},             // another key: built
		{key{"a"}, "A again", "A again", 3}, // only the last key is kept
	} {
		got, err := CachedEnvelope(&c, step.key, func() (string, error) { builds++; return step.built, nil })
		if err != nil || got != step.want || builds != step.wantBuilds {
			t.Fatalf("CachedEnvelope(%v) = %q after %d builds, want %q after %d", step.key, got, builds, step.want, step.wantBuilds)
		}
	}
}

func TestRequestBodyAttach(t *testing.T) {
	t.Parallel()
	b := NewJSONBody([]byte(`{"messages":[`), [][]byte{[]byte(`{"a":1}`), nil, []byte(`{"b":2}`)}, []byte(`]}`))
	const want = `{"messages":[{"a":1},{"b":2}]}`
	if got := string(b.Bytes()); got != want || b.Len() != int64(len(want)) {
		t.Fatalf("body = %s (%d bytes), want %s", got, b.Len(), want)
	}
	r, err := http.NewRequest(http.MethodPost, "http://localhost/", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	b.Attach(r)
	for attempt := range 2 { // the body read whole, then again from GetBody, as a retry does
		data, err := io.ReadAll(r.Body)
		if err != nil || string(data) != want || r.ContentLength != int64(len(want)) {
			t.Fatalf("attempt %d read %s (ContentLength %d), %v; want %s", attempt, data, r.ContentLength, err, want)
		}
		if r.Body, err = r.GetBody(); err != nil {
			t.Fatal(err)
		}
	}
}
