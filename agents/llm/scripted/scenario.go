package scripted

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stoke-cli/stoke/agents/llm"
)

// DefaultModel is the model name reported when a scenario names none.
const DefaultModel = "scripted"

// AnyAgent is the Rule.Agent value that matches every agent (also the default).
const AnyAgent = "*"

// Scenario is a parsed scenario file. Build one with Load or Parse; the exported fields
// mirror the YAML so a recorder can marshal a Scenario back to a file. Do not modify a
// Scenario after handing it to New.
type Scenario struct {
	// Name identifies the scenario in errors (default: the file name without extension).
	Name string `yaml:"name,omitempty"`
	// Model is the model name reported in events (default DefaultModel).
	Model string `yaml:"model,omitempty"`
	// Media are the media types of the images and documents the model takes in user
	// messages ("image/png", "application/pdf", "text/plain"; "*" for any). Without it the
	// model takes text only, as a text model would (llm.CheckInput refuses the rest).
	Media []string `yaml:"media,omitempty"`
	// Rules are tried in order; the first match wins.
	Rules []Rule `yaml:"rules"`
	// Cassette is a recording's header (agents/llm/cassette); the scripted provider
	// ignores it, so that a cassette is also a scenario.
	Cassette yaml.Node `yaml:"cassette,omitempty"`

	rules []*rule // compiled Rules, set by Parse
}

// Rule is one candidate answer.
type Rule struct {
	// Agent is "parent", a subagent type, or "*" (default) for any agent.
	Agent string `yaml:"agent,omitempty"`
	// When holds conditions that must all hold.
	When *Conditions `yaml:"when,omitempty"`
	// Unless holds conditions that, when they all hold, make the rule skip the request.
	Unless *Conditions `yaml:"unless,omitempty"`
	// Once makes the rule fire at most once per Model (a recorded run replays in order).
	Once bool `yaml:"once,omitempty"`
	// Reply is what the model answers.
	Reply Reply `yaml:"reply"`
	// Call is a recorded call's metadata (agents/llm/cassette); the scripted provider
	// ignores it.
	Call yaml.Node `yaml:"call,omitempty"`
}

// Conditions on a request. Unset fields are not checked.
type Conditions struct {
	// Step is the agent's step: 1 + the number of assistant messages in the request.
	Step                   int    `yaml:"step,omitempty"`
	LastUserContains       string `yaml:"last_user_contains,omitempty"`
	LastUserMatches        string `yaml:"last_user_matches,omitempty"`
	HistoryContains        string `yaml:"history_contains,omitempty"`
	HistoryMatches         string `yaml:"history_matches,omitempty"`
	LastToolResultContains string `yaml:"last_tool_result_contains,omitempty"`
	LastToolResultMatches  string `yaml:"last_tool_result_matches,omitempty"`
	SystemContains         string `yaml:"system_contains,omitempty"`
	SystemMatches          string `yaml:"system_matches,omitempty"`
	ToolsInclude           string `yaml:"tools_include,omitempty"`
}

// Reply is the answer of a rule.
type Reply struct {
	// Text is the assistant text (a text/template unless Literal).
	Text string `yaml:"text,omitempty"`
	// ToolCalls are emitted after the text, in order.
	ToolCalls []ToolCall `yaml:"tool_calls,omitempty"`
	// Delay waits before answering; a cancelled ctx ends the wait with an error.
	Delay time.Duration `yaml:"delay,omitempty"`
	// Partial is an answer cut short: its text (a template unless Literal) is streamed,
	// then the call holds until it is cancelled, and fails with the cancellation — what a
	// model that was still answering leaves: the agent's partial findings. It takes no
	// Text, ToolCalls or Error.
	Partial string `yaml:"partial,omitempty"`
	// Signal, when set, is posted once the reply has streamed: an answer after its last
	// event, a Partial one after its text, as it starts to hold. WaitFor waits for it.
	Signal string `yaml:"signal,omitempty"`
	// WaitFor, when set, holds the call before anything else (its Delay included) until a
	// reply of this Model has posted that Signal (at once when one already has); a
	// cancelled ctx ends the wait with an error. It orders the calls of parallel agents
	// without a clock.
	WaitFor string `yaml:"wait_for,omitempty"`
	// Error, when set, fails the call with an *llm.ProviderError carrying this message.
	Error string `yaml:"error,omitempty"`
	// ErrorStatus is the HTTP status of that error (0: none; 429 and 5xx are retryable).
	ErrorStatus int `yaml:"error_status,omitempty"`
	// Literal turns template rendering off for Text and tool inputs (recorded replies).
	Literal bool `yaml:"literal,omitempty"`
	// Usage, when set, replaces the estimated token usage (recorded replies).
	Usage *Usage `yaml:"usage,omitempty"`
	// StopReason, when set, replaces the stop reason (recorded replies).
	StopReason string `yaml:"stop_reason,omitempty"`
}

// Usage is a fixed token count for a reply, in the keys of llm.Usage's JSON.
type Usage struct {
	InputTokens              int64 `yaml:"input_tokens,omitempty"`
	OutputTokens             int64 `yaml:"output_tokens,omitempty"`
	CacheCreationInputTokens int64 `yaml:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int64 `yaml:"cache_read_input_tokens,omitempty"`
}

func (u Usage) toLLM() llm.Usage {
	return llm.Usage{
		InputTokens:              u.InputTokens,
		OutputTokens:             u.OutputTokens,
		CacheCreationInputTokens: u.CacheCreationInputTokens,
		CacheReadInputTokens:     u.CacheReadInputTokens,
	}
}

// ToolCall is one tool call of a reply. String values of Input, at any depth, are
// templates unless the reply is Literal.
type ToolCall struct {
	// ID, when set, is the call's id (recorded replies); else one is made up.
	ID    string         `yaml:"id,omitempty"`
	Name  string         `yaml:"name"`
	Input map[string]any `yaml:"input,omitempty"`
}

// Load reads and compiles a scenario file. Every error wraps llm.ErrBadConfig and names
// the file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: read scenario: %w", llm.ErrBadConfig, err)
	}
	return Parse(path, data)
}

// Parse decodes and compiles a scenario; name is used in errors and as the default
// scenario name. Unknown keys, bad regular expressions and bad templates are errors
// wrapping llm.ErrBadConfig.
func Parse(name string, data []byte) (*Scenario, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: scenario %s: %w", llm.ErrBadConfig, name, fmt.Errorf(format, args...))
	}
	var s Scenario
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, bad("empty file")
		}
		var te *yaml.TypeError
		if errors.As(err, &te) { // one line: "line 3: field x not found in type ..."
			return nil, bad("%s", strings.Join(te.Errors, "; "))
		}
		return nil, bad("%w", err)
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(filepath.Base(name), filepath.Ext(name))
	}
	if s.Model == "" {
		s.Model = DefaultModel
	}
	if len(s.Rules) == 0 {
		return nil, bad("no rules")
	}
	lines := ruleLines(data)
	s.rules = make([]*rule, len(s.Rules))
	for i := range s.Rules {
		r, err := compileRule(&s.Rules[i])
		if err != nil {
			if i < len(lines) {
				return nil, bad("rules[%d] (line %d): %w", i, lines[i], err)
			}
			return nil, bad("rules[%d]: %w", i, err)
		}
		s.rules[i] = r
	}
	return &s, nil
}

// compile fills s.rules for a Scenario that was built by hand.
func (s *Scenario) compile() ([]*rule, error) {
	if s.rules != nil {
		return s.rules, nil
	}
	if len(s.Rules) == 0 {
		return nil, fmt.Errorf("%w: scenario %s: no rules", llm.ErrBadConfig, s.Name)
	}
	out := make([]*rule, len(s.Rules))
	for i := range s.Rules {
		r, err := compileRule(&s.Rules[i])
		if err != nil {
			return nil, fmt.Errorf("%w: scenario %s: rules[%d]: %w", llm.ErrBadConfig, s.Name, i, err)
		}
		out[i] = r
	}
	return out, nil
}

// ruleLines returns the source line of each item of the top-level rules sequence, for
// error messages. It returns nil when the document has no such sequence.
func ruleLines(data []byte) []int {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || len(doc.Content) == 0 {
		return nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "rules" || root.Content[i+1].Kind != yaml.SequenceNode {
			continue
		}
		var lines []int
		for _, item := range root.Content[i+1].Content {
			lines = append(lines, item.Line)
		}
		return lines
	}
	return nil
}
