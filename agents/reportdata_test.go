package agents

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// taskRecords reads the transcript records of task id.
func taskRecords(t *testing.T, h *harness, id TaskID) []store.Record {
	t.Helper()
	sess := store.At(h.dir)
	recs, warnings, err := sess.ReadRecords(sess.TaskTranscript(string(id)))
	if err != nil || len(warnings) > 0 {
		t.Fatal(err, warnings)
	}
	return recs
}

func turnRecords(recs []store.Record) []store.Record {
	var out []store.Record
	for _, r := range recs {
		if r.Type == store.RecordTurn {
			out = append(out, r)
		}
	}
	return out
}

// What a report draws is recorded as the agent runs (docs/report.md): each reply's model,
// usage and the start of its call; when each tool call ran; each turn's start and how it
// ran (fresh, then resident).
func TestTranscriptRecordsHowTurnsRan(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(_ context.Context, req llm.Request, yield func(llm.Event, error) bool) {
		last := req.Messages[len(req.Messages)-1]
		if len(last.Content) > 0 && last.Content[0].Type == llm.BlockToolResult {
			answer(yield, "done")
			return
		}
		answer(yield, "", llm.Block{Type: llm.BlockToolUse, ID: "call_probe_" + itoa(len(req.Messages)), Name: "probe", Input: json.RawMessage(`{}`)})
	}, func(c *RegistryConfig) {
		c.SubagentTools = func(catalog.Definition, string) *tools.Set { return tools.NewSet(nopTool("probe")) }
	})
	id := h.launchBG("look")
	h.collect(id)
	h.send(id, "again")
	h.collect(id)

	recs := taskRecords(t, h, id)
	replies, results := 0, 0
	for _, r := range recs {
		if r.Type != store.RecordMessage {
			continue
		}
		switch r.Message.Role {
		case llm.RoleAssistant:
			replies++
			if r.Model != "fake" || r.Usage == nil || r.Usage.InputTokens != 10 || r.Usage.OutputTokens != 2 || r.Start.IsZero() || r.Start.After(r.Time) {
				t.Errorf("reply record %+v: want model fake, usage 10/2 and the call's start", r)
			}
		case llm.RoleUser:
			if r.Message.Content[0].Type != llm.BlockToolResult {
				if r.Calls != nil || r.Usage != nil {
					t.Errorf("an instruction says how it came about: %+v", r)
				}
				continue
			}
			results++
			if len(r.Calls) != 1 || r.Calls[0].ID != r.Message.Content[0].ToolUseID || r.Calls[0].Start.IsZero() || r.Calls[0].DurationMS < 0 {
				t.Errorf("tool results record %+v: want the call's id, start and duration", r)
			}
		}
	}
	if replies != 4 || results != 2 {
		t.Fatalf("%d replies and %d tool results, want 4 and 2", replies, results)
	}
	turns := turnRecords(recs)
	if len(turns) != 2 {
		t.Fatalf("turn records %+v", turns)
	}
	for i, want := range []streamjson.Continuation{streamjson.ContinuationFresh, streamjson.ContinuationResident} {
		r := turns[i]
		if r.Continuation != string(want) || r.Start.IsZero() || !r.Start.Before(r.Time) || !r.Queued.IsZero() {
			t.Errorf("turn %d record %+v: want %s, a start before its end, not queued", i+1, r, want)
		}
	}
}

// A turn that waited for a slot records when it was scheduled; one that did not, nothing.
func TestTranscriptRecordsQueueTime(t *testing.T) {
	t.Parallel()
	g := newGate("", "done")
	h := newHarness(t, g.gen, func(c *RegistryConfig) { c.MaxBackground = 1 })
	first := h.launchBG("one")
	g.wait(t)
	second := h.launch(LaunchRequest{Prompt: "two", Background: true})
	if second.Status != StatusQueued {
		t.Fatalf("second launch %s, want queued", second.Status)
	}
	close(g.release)
	h.collect(first)
	h.collect(second.TaskID)
	if r := turnRecords(taskRecords(t, h, first)); len(r) != 1 || !r[0].Queued.IsZero() {
		t.Fatalf("first turn records %+v: it did not wait", r)
	}
	r := turnRecords(taskRecords(t, h, second.TaskID))
	if len(r) != 1 || r[0].Queued.IsZero() || !r[0].Queued.Before(r[0].Start) {
		t.Fatalf("second turn records %+v: want a queued time before its start", r)
	}
}
