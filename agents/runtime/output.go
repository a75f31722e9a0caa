package runtime

import (
	"encoding/json"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/structured"
)

// answer is the structured answer of one turn of an agent asked for one (Config.Output):
// the value once the model gave a valid one, and the invalid answers so far. A nil
// *answer asks for nothing: its methods say so.
type answer struct {
	schema   *structured.Schema
	max      int // answers allowed in the turn
	value    json.RawMessage
	attempts int
}

// newAnswer starts the answer of a turn; nil without Config.Output.
func (r *Runtime) newAnswer() *answer {
	if r.cfg.Output == nil {
		return nil
	}
	limit := r.cfg.OutputAttempts
	if limit <= 0 {
		limit = structured.DefaultMaxAttempts
	}
	return &answer{schema: r.cfg.Output, max: limit}
}

// fromTools reads a tool round: a call of the output tool that the tool set accepted
// (its input matched the schema) gives the answer, and given is true; one it refused is
// an invalid answer, which the model reads in its result. Past the allowed answers the
// error ends the turn.
func (a *answer) fromTools(uses []llm.Block, results llm.Message) (given bool, err error) {
	if a == nil {
		return false, nil
	}
	for i, u := range uses {
		if u.Name != structured.ToolName || i >= len(results.Content) {
			continue
		}
		if res := results.Content[i]; res.IsError {
			a.attempts++
		} else {
			a.value, given = u.Input, true
		}
	}
	if !given && a.attempts >= a.max {
		return false, &structured.AttemptsError{Attempts: a.attempts}
	}
	return given, nil
}

// fromText reads an answer without tool calls: when no structured answer was given yet,
// a text that is itself a valid answer gives it (a model that writes the JSON instead of
// calling the tool); any other text is an invalid answer, and remind is what the model is
// told before it goes on. Past the allowed answers the error ends the turn.
func (a *answer) fromText(text string) (remind string, err error) {
	if a == nil || a.value != nil {
		return "", nil
	}
	v, problem := a.schema.FromText(text)
	if problem == nil {
		a.value = v
		return "", nil
	}
	a.attempts++
	if a.attempts >= a.max {
		return "", &structured.AttemptsError{Attempts: a.attempts}
	}
	return structured.Reminder(problem.Error()), nil
}
