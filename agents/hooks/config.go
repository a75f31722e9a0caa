// Package hooks runs command hooks: shell commands that a settings file or an agent
// definition attaches to lifecycle events (a subagent starting or stopping, the parent
// stopping). A hook reads a JSON description of the event on stdin and may block the
// event, as Claude Code's command hooks do: exit code 2 (the reason on stderr), or
// {"decision":"block","reason":"..."} on stdout.
//
// The configuration is the value of a `hooks:` key, in a settings file or in agent front
// matter. Two shapes are accepted and normalised into the same Config:
//
//	hooks:
//	  SubagentStop:
//	    - command: ./scripts/check.sh
//	      timeout: 30s            # a Go duration, or a number of seconds; default 60s
//	      matcher: "reviewer"     # optional; see Hook.Matcher
//
// and Claude Code's nested form, where timeout is a number of seconds:
//
//	hooks:
//	  SubagentStop:
//	    - matcher: "*"
//	      hooks:
//	        - type: command
//	          command: ./scripts/check.sh
//	          timeout: 30
package hooks

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Event names a point in the agent lifecycle at which hooks run.
type Event string

// The events hooks can be attached to: every event stoke meets. What a block means is the
// caller's to decide; the convention (Claude Code's) is written on each.
const (
	// SubagentStart runs before a subagent's turn begins (a fresh launch, a resident
	// continuation or a revival). Claude Code does not let it block; its hooks'
	// additionalContext is context for the subagent.
	SubagentStart Event = "SubagentStart"
	// SubagentStop runs when a subagent's turn is about to end. A block means "do not
	// stop": the subagent goes on, with the Reason as its next instruction.
	SubagentStop Event = "SubagentStop"
	// Stop runs when the parent agent's turn is about to end. A block means "do not
	// stop": the parent goes on, with the Reason as its next instruction.
	Stop Event = "Stop"
	// PreToolUse runs before a tool call (the parent's and every subagent's; the matcher
	// selects tool names). A block (exit 2, "decision":"block", permissionDecision deny)
	// refuses the call, with the reason as its result; permissionDecision allow runs it
	// without asking the approval mode, ask leaves it to the approval mode; updatedInput
	// replaces its arguments.
	PreToolUse Event = "PreToolUse"
	// PostToolUse runs after a tool call. A block gives the model the reason with the
	// result; additionalContext is added to the result.
	PostToolUse Event = "PostToolUse"
	// UserPromptSubmit runs before a user prompt reaches the parent. A block refuses the
	// prompt (an error result, and the session goes on); additionalContext, or plain
	// stdout, is added to the prompt as context.
	UserPromptSubmit Event = "UserPromptSubmit"
	// SessionStart runs once as a session starts (source startup or resume);
	// additionalContext, or plain stdout, is context added to the first prompt.
	SessionStart Event = "SessionStart"
	// SessionEnd runs once as a session ends; it cannot block.
	SessionEnd Event = "SessionEnd"
)

// Events returns the supported events, in a fixed order.
func Events() []Event {
	return []Event{SubagentStart, SubagentStop, Stop, PreToolUse, PostToolUse, UserPromptSubmit, SessionStart, SessionEnd}
}

// stops reports whether e is an event whose block means "go on".
func (e Event) stops() bool { return e == Stop || e == SubagentStop }

// tool reports whether e is about one tool call: its matchers select tool names.
func (e Event) tool() bool { return e == PreToolUse || e == PostToolUse }

// context reports whether plain stdout of a hook of e that exits 0 is context, as in
// Claude Code.
func (e Event) context() bool { return e == UserPromptSubmit || e == SessionStart }

// DefaultTimeout bounds a hook that names no timeout.
const DefaultTimeout = 60 * time.Second

// Hook is one command hook.
type Hook struct {
	// Command is run as `bash -c Command` (see Runner.Shell).
	Command string
	// Timeout bounds the command; ParseConfig sets DefaultTimeout when none is given.
	Timeout time.Duration
	// Matcher selects the targets the hook applies to: for SubagentStart and
	// SubagentStop the subagent type. Empty or "*" matches everything; anything else is
	// an unanchored regular expression, as in Claude Code ("reviewer", "^code-review$",
	// "test|lint"). For PreToolUse and PostToolUse it selects tool names, matched whole
	// as Claude Code matches them ("Bash", "Write|Edit", "mcp__fs__.*"; see ForTool).
	// The other events have no target and ignore it.
	Matcher string
}

// MatchesTool reports whether h applies to a call of a tool known by any of names (its
// name and Claude Code's for it): Empty or "*" matches every tool; anything else is a
// regular expression that must match a whole name.
func (h Hook) MatchesTool(names ...string) bool {
	if h.Matcher == "" || h.Matcher == "*" {
		return true
	}
	re, err := regexp.Compile("^(?:" + h.Matcher + ")$")
	if err != nil {
		return false
	}
	for _, n := range names {
		if n != "" && re.MatchString(n) {
			return true
		}
	}
	return false
}

// Matches reports whether h applies to target (see Matcher). A matcher that is not a
// valid regular expression (ParseConfig rejects those) matches nothing.
func (h Hook) Matches(target string) bool {
	if h.Matcher == "" || h.Matcher == "*" {
		return true
	}
	re, err := regexp.Compile(h.Matcher)
	return err == nil && re.MatchString(target)
}

// Config maps each event to its hooks, in the order they were written.
type Config map[Event][]Hook

// Len returns the number of hooks over all events.
func (c Config) Len() int {
	n := 0
	for _, hs := range c {
		n += len(hs)
	}
	return n
}

// For returns the hooks of ev that apply to target: the subagent type for SubagentStart
// and SubagentStop; the events without a target (Stop, UserPromptSubmit, SessionStart,
// SessionEnd) ignore it. For the tool events use ForTool.
func (c Config) For(ev Event, target string) []Hook {
	var out []Hook
	for _, h := range c[ev] {
		if ev.tool() {
			if h.MatchesTool(target) {
				out = append(out, h)
			}
			continue
		}
		if (ev != SubagentStart && ev != SubagentStop) || h.Matches(target) {
			out = append(out, h)
		}
	}
	return out
}

// ForTool returns the hooks of a tool event (PreToolUse, PostToolUse) that apply to a
// call of the tool known by names (see Hook.MatchesTool).
func (c Config) ForTool(ev Event, names ...string) []Hook {
	var out []Hook
	for _, h := range c[ev] {
		if h.MatchesTool(names...) {
			out = append(out, h)
		}
	}
	return out
}

// Merge returns c with the hooks of other added after c's, event by event (a definition's
// hooks after the settings').
func (c Config) Merge(other Config) Config {
	out := Config{}
	for _, ev := range Events() {
		if hs := append(append([]Hook(nil), c[ev]...), other[ev]...); len(hs) > 0 {
			out[ev] = hs
		}
	}
	return out
}

// ParseConfig normalises the value of a `hooks:` key. v is a *yaml.Node (or yaml.Node),
// or a value decoded generically from YAML or JSON (map[string]any and []any, as yaml
// and viper produce); nil is an empty Config. Event names match case-insensitively,
// because viper lower-cases keys. An event stoke does not meet, a hook type other than
// "command", a hook without a command, a timeout that is not positive, or a matcher that
// is not a regular expression is an error: a hook that cannot run as written must not
// be dropped quietly, since it may be a guard. Unknown keys inside a hook are ignored.
func ParseConfig(v any) (Config, error) {
	cfg, unmet, err := Parse(v)
	if err == nil && len(unmet) > 0 {
		err = fmt.Errorf("hooks: event %q is not supported (supported: %s)", unmet[0], eventList())
	}
	return cfg, err
}

// Parse is ParseConfig, except that the hooks of an event stoke does not meet
// (Notification, PreCompact, ...) are left out and their events returned, in the order
// written, for a warning: a settings file written for Claude Code may name events stoke
// never meets, and its other hooks still count.
func Parse(v any) (cfg Config, unmet []string, err error) {
	var n *yaml.Node
	switch v := v.(type) {
	case nil:
		return Config{}, nil, nil
	case *yaml.Node:
		n = v
	case yaml.Node:
		n = &v
	default:
		data, err := yaml.Marshal(v)
		if err != nil {
			return nil, nil, fmt.Errorf("encode hooks config: %w", err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, nil, fmt.Errorf("decode hooks config: %w", err)
		}
		n = &doc
	}
	return parseNode(n)
}

// UnmarshalYAML lets a Config be a field of a struct decoded by yaml.
func (c *Config) UnmarshalYAML(n *yaml.Node) error {
	cfg, err := ParseConfig(n)
	if err != nil {
		return err
	}
	*c = cfg
	return nil
}

func parseNode(n *yaml.Node) (Config, []string, error) {
	n = resolve(n)
	if n == nil || isNull(n) {
		return Config{}, nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("hooks: want a map of event to hook list, got %s", kindName(n))
	}
	cfg := Config{}
	var unmet []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], resolve(n.Content[i+1])
		ev, ok := eventNamed(key.Value)
		if !ok {
			unmet = append(unmet, key.Value)
			continue
		}
		if _, dup := cfg[ev]; dup {
			return nil, nil, fmt.Errorf("hooks: line %d: event %s given twice", key.Line, ev)
		}
		hs, err := parseEntries(ev, val)
		if err != nil {
			return nil, nil, err
		}
		cfg[ev] = hs
	}
	for ev, hs := range cfg {
		if len(hs) == 0 {
			delete(cfg, ev)
		}
	}
	return cfg, unmet, nil
}

// parseEntries reads the list of one event: flat hooks, Claude's matcher groups, or both.
func parseEntries(ev Event, n *yaml.Node) ([]Hook, error) {
	if isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("hooks: %s: line %d: want a list of hooks, got %s", ev, n.Line, kindName(n))
	}
	var out []Hook
	for _, e := range n.Content {
		e = resolve(e)
		if e.Kind == yaml.ScalarNode && e.Tag == "!!str" { // "- ./script.sh"
			h, err := parseHook(ev, e, "")
			if err != nil {
				return nil, err
			}
			out = append(out, h)
			continue
		}
		if e.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("hooks: %s: line %d: want a hook (a map with a command), got %s", ev, e.Line, kindName(e))
		}
		matcher, err := stringField(ev, e, "matcher")
		if err != nil {
			return nil, err
		}
		if err := checkMatcher(ev, e, matcher); err != nil {
			return nil, err
		}
		inner := field(e, "hooks")
		if inner == nil { // the flat form: the entry is the hook
			h, err := parseHook(ev, e, matcher)
			if err != nil {
				return nil, err
			}
			out = append(out, h)
			continue
		}
		if isNull(inner) {
			continue
		}
		if inner.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("hooks: %s: line %d: hooks: want a list, got %s", ev, inner.Line, kindName(inner))
		}
		for _, h := range inner.Content {
			hk, err := parseHook(ev, resolve(h), matcher)
			if err != nil {
				return nil, err
			}
			out = append(out, hk)
		}
	}
	return out, nil
}

func parseHook(ev Event, n *yaml.Node, matcher string) (Hook, error) {
	h := Hook{Timeout: DefaultTimeout, Matcher: matcher}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		h.Command = strings.TrimSpace(n.Value)
		if h.Command == "" {
			return Hook{}, fmt.Errorf("hooks: %s: line %d: empty command", ev, n.Line)
		}
		return h, nil
	}
	if n.Kind != yaml.MappingNode {
		return Hook{}, fmt.Errorf("hooks: %s: line %d: want a hook (a map with a command), got %s", ev, n.Line, kindName(n))
	}
	typ, err := stringField(ev, n, "type")
	if err != nil {
		return Hook{}, err
	}
	if typ != "" && typ != "command" {
		return Hook{}, fmt.Errorf("hooks: %s: line %d: hook type %q is not supported (only command)", ev, n.Line, typ)
	}
	if h.Command, err = stringField(ev, n, "command"); err != nil {
		return Hook{}, err
	}
	h.Command = strings.TrimSpace(h.Command)
	if h.Command == "" {
		return Hook{}, fmt.Errorf("hooks: %s: line %d: hook has no command", ev, n.Line)
	}
	if t := resolve(field(n, "timeout")); t != nil && !isNull(t) {
		if h.Timeout, err = parseTimeout(t); err != nil {
			return Hook{}, fmt.Errorf("hooks: %s: line %d: timeout: %w", ev, t.Line, err)
		}
	}
	return h, nil
}

// parseTimeout reads a Go duration ("30s", "1m30s") or a number of seconds (30, 2.5, "30").
func parseTimeout(n *yaml.Node) (time.Duration, error) {
	if n.Kind != yaml.ScalarNode {
		return 0, fmt.Errorf("want a duration such as 30s or a number of seconds, got %s", kindName(n))
	}
	var d time.Duration
	if secs, err := strconv.ParseFloat(n.Value, 64); err == nil {
		if math.IsNaN(secs) || secs > math.MaxInt64/float64(time.Second) {
			return 0, fmt.Errorf("%q is out of range", n.Value)
		}
		d = time.Duration(secs * float64(time.Second))
	} else if d, err = time.ParseDuration(n.Value); err != nil {
		return 0, fmt.Errorf("want a duration such as 30s or a number of seconds, got %q", n.Value)
	}
	if d <= 0 {
		return 0, fmt.Errorf("%q is not positive", n.Value)
	}
	return d, nil
}

func checkMatcher(ev Event, n *yaml.Node, m string) error {
	if m == "" || m == "*" {
		return nil
	}
	if _, err := regexp.Compile(m); err != nil {
		return fmt.Errorf("hooks: %s: line %d: matcher %q: %w", ev, n.Line, m, err)
	}
	return nil
}

func eventNamed(s string) (Event, bool) {
	for _, e := range Events() {
		if strings.EqualFold(s, string(e)) {
			return e, true
		}
	}
	return "", false
}

func eventList() string {
	names := make([]string, 0, len(Events()))
	for _, e := range Events() {
		names = append(names, string(e))
	}
	return strings.Join(names, ", ")
}

// field returns the value of key in the mapping n, or nil.
func field(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// stringField returns the scalar value of key in n ("" when absent or null).
func stringField(ev Event, n *yaml.Node, key string) (string, error) {
	v := resolve(field(n, key))
	if v == nil || isNull(v) {
		return "", nil
	}
	if v.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("hooks: %s: line %d: %s: want a string, got %s", ev, v.Line, key, kindName(v))
	}
	return v.Value, nil
}

// resolve unwraps documents and aliases.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil {
		switch {
		case n.Kind == yaml.DocumentNode && len(n.Content) == 1:
			n = n.Content[0]
		case n.Kind == yaml.DocumentNode:
			return nil
		case n.Kind == yaml.AliasNode:
			n = n.Alias
		default:
			return n
		}
	}
	return nil
}

func isNull(n *yaml.Node) bool {
	return n.Kind == 0 || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a map"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!str" {
			return fmt.Sprintf("the string %q", n.Value)
		}
		return fmt.Sprintf("%q", n.Value)
	default:
		return "nothing"
	}
}
