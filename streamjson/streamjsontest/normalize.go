// Package streamjsontest helps tests compare stoke's stream-JSON output across runs.
package streamjsontest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Normalize rewrites a stream-JSON event stream (one JSON object per line) so that two
// runs of the same work compare equal, byte for byte, when they did the same thing:
//
//   - what differs by nature is replaced: "uuid" values by "<uuid>", the session id
//     (any "session_id" value, wherever it appears, file paths included) by "<session>",
//     durations ("duration_ms", "duration_api_ms", and <duration_ms>N</duration_ms>
//     inside task notifications) by 0, timestamps ("timestamp" and keys ending in "_at")
//     by "<time>";
//   - lines are grouped by agent: the parent's lines (those without a task_id) first, then
//     each task's, ordered by task id, every group in its own order. Agents running in
//     parallel interleave their lines differently in every run; each agent's own order,
//     which the parent's history decides, must not change;
//   - every object is written with its keys sorted.
func Normalize(data []byte) ([]byte, error) {
	type line struct {
		task string
		obj  any
	}
	var lines []line
	sessions := map[string]bool{}
	for i, raw := range bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n")) {
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var obj any
		if err := dec.Decode(&obj); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		m, ok := obj.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("line %d: not a JSON object", i+1)
		}
		if s, ok := m["session_id"].(string); ok && s != "" {
			sessions[s] = true
		}
		task, _ := m["task_id"].(string)
		lines = append(lines, line{task: task, obj: obj})
	}
	var ids []string
	for s := range sessions {
		ids = append(ids, s)
	}
	slices.SortFunc(ids, func(a, b string) int { return len(b) - len(a) }) // longest first
	pairs := make([]string, 0, 2*len(ids))
	for _, s := range ids {
		pairs = append(pairs, s, "<session>")
	}
	n := normalizer{sessions: strings.NewReplacer(pairs...)}
	slices.SortStableFunc(lines, func(a, b line) int { return strings.Compare(a.task, b.task) })
	var out bytes.Buffer
	for _, l := range lines {
		b, err := json.Marshal(n.value("", l.obj))
		if err != nil {
			return nil, err
		}
		out.Write(b)
		out.WriteByte('\n')
	}
	return out.Bytes(), nil
}

var durationTag = regexp.MustCompile(`<duration_ms>\d+</duration_ms>`)

type normalizer struct {
	sessions *strings.Replacer
}

func (n normalizer) value(key string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = n.value(k, e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = n.value("", e)
		}
		return x
	case string:
		switch {
		case key == "uuid":
			return "<uuid>"
		case key == "timestamp" || strings.HasSuffix(key, "_at"):
			return "<time>"
		}
		s := n.sessions.Replace(x)
		return durationTag.ReplaceAllLiteralString(s, "<duration_ms>0</duration_ms>")
	case json.Number:
		if key == "duration_ms" || key == "duration_api_ms" {
			return json.Number("0")
		}
	}
	return v
}
