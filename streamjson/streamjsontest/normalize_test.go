package streamjsontest

import (
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	// Two runs of the same work: other uuids, session, durations; the two agents' lines
	// interleaved differently.
	run1 := `{"type":"system","subtype":"init","uuid":"u1","session_id":"s-1111"}
{"type":"system","subtype":"task_started","task_id":"a2","uuid":"u2","session_id":"s-1111","turn":1}
{"type":"system","subtype":"task_started","task_id":"a1","uuid":"u3","session_id":"s-1111","turn":1}
{"type":"system","subtype":"task_notification","task_id":"a1","uuid":"u4","session_id":"s-1111","output_file":"/h/s-1111/agents/a1.jsonl","usage":{"duration_ms":31,"total_tokens":9}}
{"type":"user","uuid":"u5","session_id":"s-1111","message":{"content":[{"type":"text","text":"<usage><duration_ms>31</duration_ms></usage>"}]}}
{"type":"result","uuid":"u6","session_id":"s-1111","duration_ms":90,"duration_api_ms":40,"created_at":"2026-01-01T00:00:00Z","result":"ok"}
`
	run2 := `{"session_id":"s-2222","type":"system","subtype":"init","uuid":"v1"}
{"type":"system","subtype":"task_started","task_id":"a1","uuid":"v3","session_id":"s-2222","turn":1}
{"type":"system","subtype":"task_started","task_id":"a2","uuid":"v2","session_id":"s-2222","turn":1}
{"type":"system","subtype":"task_notification","task_id":"a1","uuid":"v4","session_id":"s-2222","output_file":"/h/s-2222/agents/a1.jsonl","usage":{"duration_ms":2,"total_tokens":9}}
{"type":"user","uuid":"v5","session_id":"s-2222","message":{"content":[{"type":"text","text":"<usage><duration_ms>2</duration_ms></usage>"}]}}
{"type":"result","uuid":"v6","session_id":"s-2222","duration_ms":7,"duration_api_ms":0,"created_at":"2026-02-02T00:00:00Z","result":"ok"}
`
	a, err := Normalize([]byte(run1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Normalize([]byte(run2))
	if err != nil {
		t.Fatal(err)
	}
	if string(a) != string(b) {
		t.Fatalf("normalised runs differ:\n%s\n%s", a, b)
	}
	for _, gone := range []string{"s-1111", "u1", `"duration_ms":31`, "<duration_ms>31<", "2026-"} {
		if strings.Contains(string(a), gone) {
			t.Errorf("%q left in:\n%s", gone, a)
		}
	}
	// What the runs did is kept: a different result, turn or token count still differs.
	for _, change := range []struct{ from, to string }{{`"result":"ok"`, `"result":"no"`}, {`"turn":1}`, `"turn":2}`}, {`"total_tokens":9`, `"total_tokens":8`}} {
		c, err := Normalize([]byte(strings.Replace(run2, change.from, change.to, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if string(c) == string(a) {
			t.Errorf("changing %s to %s went unnoticed", change.from, change.to)
		}
	}
	// Each agent's own order is kept: a1's notification before its start is another run.
	lines := strings.SplitAfter(run2, "\n")
	lines[1], lines[3] = lines[3], lines[1]
	if c, _ := Normalize([]byte(strings.Join(lines, ""))); string(c) == string(a) {
		t.Error("a task's lines in another order went unnoticed")
	}
	if _, err := Normalize([]byte("{\"a\":1}\nnot json\n")); err == nil {
		t.Error("want an error for a line that is not JSON")
	}
}
