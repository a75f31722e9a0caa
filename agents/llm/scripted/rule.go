package scripted

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// rule is a compiled Rule: regular expressions compiled, templates parsed.
type rule struct {
	agent   string
	when    []check
	unless  []check
	once    bool
	reply   *Reply
	text    *tmpl // nil: reply.Text is used as is
	partial *tmpl // nil: reply.Partial is used as is
	inputs  []any // compiled ToolCalls[i].Input, see compileValue
}

// check is one compiled condition.
type check func(*view) bool

func compileRule(r *Rule) (*rule, error) {
	out := &rule{agent: r.Agent, once: r.Once, reply: &r.Reply}
	if out.agent == "" {
		out.agent = AnyAgent
	}
	var err error
	if out.when, err = compileConditions(r.When); err != nil {
		return nil, fmt.Errorf("when: %w", err)
	}
	if out.unless, err = compileConditions(r.Unless); err != nil {
		return nil, fmt.Errorf("unless: %w", err)
	}
	if r.Unless != nil && len(out.unless) == 0 {
		return nil, errors.New("unless: no conditions")
	}
	if r.Reply.ErrorStatus != 0 && r.Reply.Error == "" {
		return nil, errors.New("reply: error_status without error")
	}
	if r.Reply.Delay < 0 {
		return nil, errors.New("reply: negative delay")
	}
	if r.Reply.Partial != "" && (r.Reply.Text != "" || len(r.Reply.ToolCalls) > 0 || r.Reply.Error != "") {
		return nil, errors.New("reply: partial is an answer cut short: it takes no text, tool_calls or error")
	}
	if !r.Reply.Literal {
		if out.text, err = parseTemplate("reply.text", r.Reply.Text); err != nil {
			return nil, err
		}
		if out.partial, err = parseTemplate("reply.partial", r.Reply.Partial); err != nil {
			return nil, err
		}
	}
	for i, tc := range r.Reply.ToolCalls {
		path := fmt.Sprintf("reply.tool_calls[%d]", i)
		if tc.Name == "" {
			return nil, fmt.Errorf("%s: no name", path)
		}
		in, err := compileValue(path+".input", tc.Input, r.Reply.Literal)
		if err != nil {
			return nil, err
		}
		out.inputs = append(out.inputs, in)
	}
	return out, nil
}

func compileConditions(c *Conditions) ([]check, error) {
	if c == nil {
		return nil, nil
	}
	var checks []check
	if c.Step < 0 {
		return nil, fmt.Errorf("step: %d is not positive", c.Step)
	}
	if c.Step > 0 {
		step := c.Step
		checks = append(checks, func(v *view) bool { return v.step == step })
	}
	contains := []struct {
		sub string
		of  func(*view) string
	}{
		{c.LastUserContains, func(v *view) string { return v.lastUser }},
		{c.HistoryContains, func(v *view) string { return v.history }},
		{c.LastToolResultContains, func(v *view) string { return v.lastToolResult }},
		{c.SystemContains, func(v *view) string { return v.req.System }},
	}
	for _, k := range contains {
		if k.sub == "" {
			continue
		}
		sub, of := k.sub, k.of
		checks = append(checks, func(v *view) bool { return strings.Contains(of(v), sub) })
	}
	matches := []struct {
		field, pattern string
		of             func(*view) string
	}{
		{"last_user_matches", c.LastUserMatches, func(v *view) string { return v.lastUser }},
		{"history_matches", c.HistoryMatches, func(v *view) string { return v.history }},
		{"last_tool_result_matches", c.LastToolResultMatches, func(v *view) string { return v.lastToolResult }},
		{"system_matches", c.SystemMatches, func(v *view) string { return v.req.System }},
	}
	for _, k := range matches {
		if k.pattern == "" {
			continue
		}
		re, err := regexp.Compile(k.pattern)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k.field, err)
		}
		of := k.of
		checks = append(checks, func(v *view) bool { return re.MatchString(of(v)) })
	}
	if c.ToolsInclude != "" {
		name := c.ToolsInclude
		checks = append(checks, func(v *view) bool { return v.hasTool(name) })
	}
	return checks, nil
}

// matches reports whether the rule applies to the request (ignoring Once).
func (r *rule) matches(v *view) bool {
	if r.agent != AnyAgent && r.agent != v.req.Agent {
		return false
	}
	for _, c := range r.when {
		if !c(v) {
			return false
		}
	}
	if len(r.unless) == 0 {
		return true
	}
	for _, c := range r.unless {
		if !c(v) {
			return true
		}
	}
	return false
}
