package llmtest

import (
	"errors"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

// SendMedia checks that m takes b (llm.InputChecker), then sends m one user message,
// the text "look" followed by b, and returns the body of the first request mock
// received and the text m answered. Behind mock, a model that answers with what it
// saw (the scripted provider's {{ media }}) tells what reached it.
func SendMedia(t *testing.T, mock Mock, m llm.Model, b llm.Block) (body []byte, text string) {
	t.Helper()
	c, ok := m.(llm.InputChecker)
	if !ok {
		t.Fatalf("%T does not implement llm.InputChecker", m)
	}
	if err := c.CheckInput(b); err != nil {
		t.Fatalf("CheckInput: %v", err)
	}
	req := &llm.Request{Agent: "parent", Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{llm.TextBlock("look"), b}}}}
	evs, err := Collect(t.Context(), m, req)
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	return mock.Requests()[0], TextOf(evs)
}

// CheckRefused checks that m refuses each of blocks with an *llm.InputError that names
// model and wraps llm.ErrUnsupportedInput.
func CheckRefused(t *testing.T, m llm.InputChecker, model string, blocks ...llm.Block) {
	t.Helper()
	for _, b := range blocks {
		err := m.CheckInput(b)
		var ie *llm.InputError
		if !errors.As(err, &ie) || !errors.Is(err, llm.ErrUnsupportedInput) || ie.Model != model {
			t.Errorf("CheckInput(%+v) = %v, want an *llm.InputError naming the model", b, err)
		}
	}
}
