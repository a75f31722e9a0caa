package llmtest

import (
	"errors"
	"iter"
	"strings"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Answer is a model's whole answer to one request, as a mock sends it when the client
// did not ask for a stream.
type Answer struct {
	Text  string      // the text deltas, joined
	Calls []llm.Block // the tool calls, in order
	Done  llm.Event   // the final event
}

// ReadAnswer reads a model's answer up to its final event. Its error is the model's, or
// says that the answer ended without a final event: a mock answers it with the status
// ErrorStatus gives and the message "model: " + err.Error().
func ReadAnswer(events iter.Seq2[llm.Event, error]) (Answer, error) {
	var (
		a    Answer
		text strings.Builder
	)
	for ev, err := range events {
		if err != nil {
			return Answer{}, err
		}
		switch ev.Kind {
		case llm.EventTextDelta:
			text.WriteString(ev.Text)
		case llm.EventToolCall:
			a.Calls = append(a.Calls, ev.ToolCall)
		case llm.EventDone:
			a.Text, a.Done = text.String(), ev
			return a, nil
		}
	}
	return Answer{}, errors.New("stream ended without a final event")
}

// Input is a tool call's input as the mocks send it: "{}" when the model gave none.
func Input(b llm.Block) string {
	if len(b.Input) == 0 {
		return "{}"
	}
	return string(b.Input)
}
