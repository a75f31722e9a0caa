package llmtest

import (
	"errors"
	"iter"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/llm"
)

func TestReadAnswer(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	final := llm.Event{Kind: llm.EventDone, StopReason: llm.StopToolUse}
	tests := []struct {
		name    string
		events  iter.Seq2[llm.Event, error]
		want    Answer
		wantErr string
	}{
		{name: "text and calls up to the final event, nothing after it",
			events: Fixed{Text("a"), ToolCall("c1", "glob", `{"pattern":"*"}`), Text("b"), final, Text("late")}.Generate(t.Context(), nil),
			want:   Answer{Text: "ab", Calls: []llm.Block{{Type: llm.BlockToolUse, ID: "c1", Name: "glob", Input: []byte(`{"pattern":"*"}`)}}, Done: final}},
		{name: "no final event", events: Fixed{Text("a")}.Generate(t.Context(), nil),
			wantErr: "stream ended without a final event"},
		{name: "the model's error", events: func(yield func(llm.Event, error) bool) {
			if yield(Text("a"), nil) {
				yield(llm.Event{}, boom)
			}
		}, wantErr: "boom"},
	}
	for _, tt := range tests {
		got, err := ReadAnswer(tt.events)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr || ErrorStatus(err) != 500 {
				t.Errorf("%s: err = %v, want %q (status 500)", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: answer (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestInput(t *testing.T) {
	t.Parallel()
	if got := Input(llm.Block{}); got != "{}" {
		t.Errorf("Input of no input = %q, want {}", got)
	}
	if got := Input(llm.Block{Input: []byte(`{"a":1}`)}); got != `{"a":1}` {
		t.Errorf("Input = %q", got)
	}
}
