package streamjsontest

import (
	"fmt"
	"math"
	"strings"

	"github.com/tidwall/gjson"
)

// checker checks the keys of one line. Rules are named "<kind>.<path>", with array indices
// written as '#' (e.g. "assistant.message.content.#.id"); the detail names the exact path.
type checker struct {
	v    *validator
	line int
	kind string // "init", "assistant", "task_started", …
	obj  gjson.Result
}

func (c *checker) fail(path, format string, args ...any) {
	rule, detail := c.kind, fmt.Sprintf(format, args...)
	if path != "" {
		rule += "." + ruleOf(path)
		detail = path + ": " + detail
	}
	c.v.add(c.line, rule, detail)
}

// ruleOf replaces the array indices of a gjson path with '#'.
func ruleOf(path string) string {
	parts := strings.Split(path, ".")
	for i, p := range parts {
		if p != "" && strings.Trim(p, "0123456789") == "" {
			parts[i] = "#"
		}
	}
	return strings.Join(parts, ".")
}

// describe says what a value is, for a violation's detail.
func describe(r gjson.Result) string {
	if !r.Exists() {
		return "missing"
	}
	raw := r.Raw
	if len(raw) > 60 {
		raw = raw[:57] + "..."
	}
	return "got " + raw
}

// str requires a string (possibly empty).
func (c *checker) str(path string) (string, bool) {
	r := c.obj.Get(path)
	if r.Type != gjson.String {
		c.fail(path, "want a string, %s", describe(r))
		return "", false
	}
	return r.Str, true
}

// nonEmpty requires a non-empty string.
func (c *checker) nonEmpty(path string) (string, bool) {
	r := c.obj.Get(path)
	if r.Type != gjson.String || r.Str == "" {
		c.fail(path, "want a non-empty string, %s", describe(r))
		return "", false
	}
	return r.Str, true
}

// oneOf requires one of the given strings.
func (c *checker) oneOf(path string, allowed ...string) (string, bool) {
	r := c.obj.Get(path)
	if r.Type == gjson.String {
		for _, a := range allowed {
			if r.Str == a {
				return r.Str, true
			}
		}
	}
	c.fail(path, "want one of %q, %s", allowed, describe(r))
	return "", false
}

// count requires a non-negative integer.
func (c *checker) count(path string) (int64, bool) {
	r := c.obj.Get(path)
	if r.Type != gjson.Number || r.Num < 0 || r.Num != math.Trunc(r.Num) {
		c.fail(path, "want a non-negative integer, %s", describe(r))
		return 0, false
	}
	return int64(r.Num), true
}

// number requires a non-negative number.
func (c *checker) number(path string) {
	r := c.obj.Get(path)
	if r.Type != gjson.Number || r.Num < 0 {
		c.fail(path, "want a non-negative number, %s", describe(r))
	}
}

// boolean requires true or false.
func (c *checker) boolean(path string) (bool, bool) {
	r := c.obj.Get(path)
	if !r.IsBool() {
		c.fail(path, "want a boolean, %s", describe(r))
		return false, false
	}
	return r.Bool(), true
}

// object requires an object.
func (c *checker) object(path string) bool {
	r := c.obj.Get(path)
	if !r.IsObject() {
		c.fail(path, "want an object, %s", describe(r))
		return false
	}
	return true
}

// list requires an array and returns its elements.
func (c *checker) list(path string) ([]gjson.Result, bool) {
	r := c.obj.Get(path)
	if !r.IsArray() {
		c.fail(path, "want a list, %s", describe(r))
		return nil, false
	}
	return r.Array(), true
}

// stringList requires an array of strings.
func (c *checker) stringList(path string) {
	items, ok := c.list(path)
	if !ok {
		return
	}
	for i, it := range items {
		if it.Type != gjson.String {
			c.fail(fmt.Sprintf("%s.%d", path, i), "want a string, %s", describe(it))
		}
	}
}

// nullableID requires the key to be present, holding null or a non-empty string.
func (c *checker) nullableID(path string) (string, bool) {
	r := c.obj.Get(path)
	switch {
	case r.Type == gjson.Null && r.Exists():
		return "", true
	case r.Type == gjson.String && r.Str != "":
		return r.Str, true
	}
	c.fail(path, "want null or a non-empty string, %s", describe(r))
	return "", false
}

// has reports whether the key is present (null counts as present).
func (c *checker) has(path string) bool { return c.obj.Get(path).Exists() }

// taskUsage requires the {total_tokens, tool_uses, duration_ms} usage of task events.
func (c *checker) taskUsage(path string) {
	if !c.object(path) {
		return
	}
	for _, k := range []string{"total_tokens", "tool_uses", "duration_ms"} {
		c.count(path + "." + k)
	}
}
