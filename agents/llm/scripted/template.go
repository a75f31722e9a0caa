package scripted

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"text/template"
	"text/template/parse"
)

// Template function names.
const (
	fnMatch          = "match"
	fnLastMatch      = "lastMatch"
	fnMatchAll       = "matchAll"
	fnLastUser       = "lastUser"
	fnLastToolResult = "lastToolResult"
	fnStep           = "step"
	fnAgent          = "agent"
	fnMedia          = "media"
)

// tmpl is a parsed reply template and the regular expressions its match, lastMatch and
// matchAll calls name literally, compiled at load.
type tmpl struct {
	t   *template.Template
	res map[string]*regexp.Regexp
}

// parseTemplate parses text as a template. It returns nil (and no error) when text has
// no actions, so plain strings are used as they are.
func parseTemplate(name, text string) (*tmpl, error) {
	if !strings.Contains(text, "{{") {
		return nil, nil
	}
	t, err := template.New(name).Option("missingkey=error").Funcs(stubFuncs()).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("parse template %s: %w", name, err)
	}
	out := &tmpl{t: t, res: map[string]*regexp.Regexp{}}
	var errs []error
	walk(t.Tree.Root, func(cmd *parse.CommandNode) {
		if len(cmd.Args) != 2 {
			return
		}
		id, ok := cmd.Args[0].(*parse.IdentifierNode)
		if !ok || (id.Ident != fnMatch && id.Ident != fnLastMatch && id.Ident != fnMatchAll) {
			return
		}
		lit, ok := cmd.Args[1].(*parse.StringNode)
		if !ok {
			return // a computed pattern is compiled when the template runs
		}
		re, err := regexp.Compile(lit.Text)
		if err != nil {
			errs = append(errs, fmt.Errorf("template %s: %s %q: %w", name, id.Ident, lit.Text, err))
			return
		}
		out.res[lit.Text] = re
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// walk calls fn for every command in the tree under n.
func walk(n parse.Node, fn func(*parse.CommandNode)) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			walk(c, fn)
		}
	case *parse.ActionNode:
		walk(n.Pipe, fn)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			walk(c, fn)
		}
	case *parse.CommandNode:
		fn(n)
		for _, a := range n.Args {
			walk(a, fn)
		}
	case *parse.IfNode:
		walkBranch(&n.BranchNode, fn)
	case *parse.RangeNode:
		walkBranch(&n.BranchNode, fn)
	case *parse.WithNode:
		walkBranch(&n.BranchNode, fn)
	case *parse.TemplateNode:
		walk(n.Pipe, fn)
	}
}

func walkBranch(b *parse.BranchNode, fn func(*parse.CommandNode)) {
	walk(b.Pipe, fn)
	walk(b.List, fn)
	walk(b.ElseList, fn)
}

// stubFuncs declares the template functions for parsing; funcs binds them to a request.
func stubFuncs() template.FuncMap {
	return funcs(&view{}, nil)
}

// funcs returns the template functions reading v. res holds precompiled patterns.
func funcs(v *view, res map[string]*regexp.Regexp) template.FuncMap {
	compile := func(pattern string) (*regexp.Regexp, error) {
		if re, ok := res[pattern]; ok {
			return re, nil
		}
		return regexp.Compile(pattern)
	}
	find := func(newestFirst bool) func(string) (string, error) {
		return func(pattern string) (string, error) {
			re, err := compile(pattern)
			if err != nil {
				return "", err
			}
			return v.find(re, newestFirst), nil
		}
	}
	return template.FuncMap{
		fnMatch:     find(false),
		fnLastMatch: find(true),
		fnMatchAll: func(pattern string) ([]string, error) {
			re, err := compile(pattern)
			if err != nil {
				return nil, err
			}
			return v.findAll(re), nil
		},
		fnLastUser:       func() string { return v.lastUser },
		fnLastToolResult: func() string { return v.lastToolResult },
		fnStep:           func() int { return v.step },
		fnMedia:          func() string { return v.media },
		fnAgent: func() string {
			if v.req == nil {
				return ""
			}
			return v.req.Agent
		},
	}
}

// find returns the first match of re in the history: messages oldest first (or newest
// first, taking the last match within each text), then the system prompt. With a
// capture group it returns group 1. It returns "" when nothing matches.
func (v *view) find(re *regexp.Regexp, newestFirst bool) string {
	group := 0
	if re.NumSubexp() > 0 {
		group = 1
	}
	n := len(v.segments)
	for i := range n + 1 {
		var s string
		switch {
		case i == n:
			s = v.req.System
		case newestFirst:
			s = v.segments[n-1-i]
		default:
			s = v.segments[i]
		}
		var m []string
		if newestFirst {
			if all := re.FindAllStringSubmatch(s, -1); len(all) > 0 {
				m = all[len(all)-1]
			}
		} else {
			m = re.FindStringSubmatch(s)
		}
		if m != nil {
			return m[group]
		}
	}
	return ""
}

// findAll returns every match of re in the history, in the order find(re, false) looks:
// messages oldest first, each match of a text in order, then the system prompt. With a
// capture group it returns group 1 of each.
func (v *view) findAll(re *regexp.Regexp) []string {
	group := 0
	if re.NumSubexp() > 0 {
		group = 1
	}
	out := []string{}
	for _, s := range append(append([]string(nil), v.segments...), v.req.System) {
		for _, m := range re.FindAllStringSubmatch(s, -1) {
			out = append(out, m[group])
		}
	}
	return out
}

// render executes t against v; a nil t renders fallback unchanged.
func (t *tmpl) render(v *view, fallback string) (string, error) {
	if t == nil {
		return fallback, nil
	}
	c, err := t.t.Clone()
	if err != nil {
		return "", fmt.Errorf("clone template %s: %w", t.t.Name(), err)
	}
	var b strings.Builder
	if err := c.Funcs(funcs(v, t.res)).Execute(&b, nil); err != nil {
		return "", fmt.Errorf("render %w", err)
	}
	return b.String(), nil
}

// compileValue turns a decoded YAML value into one whose strings are parsed templates
// (*tmpl) where they hold actions. Maps, lists and scalars keep their shape.
func compileValue(path string, v any, literal bool) (any, error) {
	switch v := v.(type) {
	case string:
		if literal {
			return v, nil
		}
		t, err := parseTemplate(path, v)
		if err != nil || t == nil {
			return v, err
		}
		return t, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, err := compileValue(path+"."+k, e, literal)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case map[any]any:
		return nil, fmt.Errorf("%s: map keys must be strings", path)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := compileValue(fmt.Sprintf("%s[%d]", path, i), e, literal)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	default:
		return v, nil
	}
}

// renderValue renders the templates of a compiled value, keeping everything else.
func renderValue(c any, v *view) (any, error) {
	switch c := c.(type) {
	case *tmpl:
		return c.render(v, "")
	case map[string]any:
		out := make(map[string]any, len(c))
		for k, e := range c {
			r, err := renderValue(e, v)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(c))
		for i, e := range c {
			r, err := renderValue(e, v)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	default:
		return c, nil
	}
}
