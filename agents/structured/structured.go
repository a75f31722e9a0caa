// Package structured asks an agent for a structured answer, as Claude Code's
// --json-schema and the Claude Agent SDK's outputFormat do: a JSON Schema the answer
// must match (Schema: --json-schema, the SDK's initialize jsonSchema, an agent
// definition's outputSchema), the StructuredOutput tool the model gives it through
// (Tool), and the check of what it gives (Validate, FromText). The agent loop
// (agents/runtime) runs the contract: the turn ends once the answer is valid, an invalid
// one goes back to the model with the validation error, and after MaxAttempts answers
// the turn fails.
//
// Why a tool and not the provider's response format: a tool works the same on every
// provider (OpenAI-compatible endpoints, Anthropic, the scripted model), alongside the
// agent's other tools and its tool rounds, and it is what Claude Code does (an end-turn
// tool: the turn ends on the tool's successful result, with no trailing assistant
// message). The schema is validated as JSON Schema draft 2020-12 (draft-07 when it says
// so) by github.com/google/jsonschema-go.
package structured

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
)

// ToolName is the name of the tool the model gives its structured answer through, as
// Claude Code names it.
const ToolName = "StructuredOutput"

// DefaultMaxAttempts is how many answers the model may give before the turn fails: the
// first and, after each invalid one, another, with the validation error (an invalid
// answer goes back to the model at most DefaultMaxAttempts-1 times). It is Claude Code's
// default (MAX_STRUCTURED_OUTPUT_RETRIES=5: "after 5 attempts").
const DefaultMaxAttempts = 5

// Instruction is added to the system prompt of an agent asked for a structured answer.
const Instruction = "Your final answer must be structured: when you have finished the task, call the " + ToolName +
	" tool once, with your answer as its input (it must match the tool's schema). Do not answer in text instead."

// accepted is the result of a valid call of the tool.
const accepted = "Structured output accepted."

// Schema is a JSON Schema the structured answer must match. It is immutable and safe for
// concurrent use.
type Schema struct {
	raw      json.RawMessage // as given, compact
	params   json.RawMessage // the tool's parameters: raw, with "type":"object" when absent
	resolved *jsonschema.Resolved
}

// Parse reads a JSON Schema from JSON text. It must describe an object (type object, or
// no type: a tool's input is an object, on every provider's API) and resolve without
// remote references.
func Parse(data []byte) (*Schema, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil || m == nil {
		if err == nil {
			err = errors.New("want a JSON object")
		}
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value", ErrSchema)
	}
	switch t := m["type"].(type) {
	case nil:
		m["type"] = "object"
	case string:
		if t != "object" {
			return nil, fmt.Errorf("%w: the answer must be an object (type %q): wrap it in one, e.g. {\"type\":\"object\",\"properties\":{\"value\":...}}", ErrSchema, t)
		}
	default:
		return nil, fmt.Errorf("%w: want \"type\":\"object\"", ErrSchema)
	}
	params, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(params, &s); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchema, err)
	}
	return &Schema{raw: compact.Bytes(), params: params, resolved: resolved}, nil
}

// Load reads the value of --json-schema: JSON text, or @FILE (a path relative to dir).
func Load(arg, dir string) (*Schema, error) {
	arg = strings.TrimSpace(arg)
	data := []byte(arg)
	if name, ok := strings.CutPrefix(arg, "@"); ok {
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		var err error
		if data, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("read schema file %s: %w", name, errors.Unwrap(err))
		}
	}
	return Parse(data)
}

// Raw returns the schema as given (compact JSON).
func (s *Schema) Raw() json.RawMessage { return s.raw }

// Validate reports whether the JSON value v matches the schema, and if not, why (one line).
func (s *Schema) Validate(v json.RawMessage) error {
	var inst any
	if err := json.Unmarshal(v, &inst); err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	if err := s.resolved.Validate(inst); err != nil {
		return errors.New(strings.Join(strings.Fields(err.Error()), " "))
	}
	return nil
}

// FromText reads a final text answer as the structured answer: the text, or the JSON in
// its one ```json fenced block, must be a JSON value that matches the schema. The error
// says what is wrong, for the model.
func (s *Schema) FromText(text string) (json.RawMessage, error) {
	t := strings.TrimSpace(text)
	if body, ok := strings.CutPrefix(t, "```"); ok {
		body = strings.TrimPrefix(body, "json")
		if end := strings.LastIndex(body, "```"); end >= 0 {
			t = strings.TrimSpace(body[:end])
		}
	}
	if t == "" || !json.Valid([]byte(t)) {
		return nil, errors.New("the answer is not JSON")
	}
	if err := s.Validate(json.RawMessage(t)); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	_ = json.Compact(&b, []byte(t))
	return b.Bytes(), nil
}

// Tool is the tool the model gives its structured answer through: its input schema is the
// schema, which the tool set checks before the call runs (an invalid answer is an error
// result naming what does not match).
func (s *Schema) Tool() tools.Tool {
	return tools.Func{
		ToolSpec: llm.ToolSpec{
			Name: ToolName,
			Description: "Give your final answer in the structured form the user asked for. " +
				"Call this once, when you have finished: its input is your answer and must match the schema. " +
				"If it is refused, fix what the error names and call it again.",
			Parameters: s.params,
		},
		Fn: func(context.Context, tools.Call) tools.Result { return tools.Result{Content: accepted} },
	}
}

// Reminder is what an agent that answered in text, without a valid structured answer,
// is told (problem says what was wrong with the text).
func Reminder(problem string) string {
	return fmt.Sprintf("Your answer was not given as structured output (%s). Call the %s tool with your final answer; its input must match the tool's schema.", problem, ToolName)
}
