package tools

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// InputSchema returns the JSON Schema of a tool's input type T, derived by
// jsonschema.For: an object with one property per field, named by the field's JSON name
// and described by its jsonschema tag, required unless the field is omitempty, and no
// other properties. A pointer field (*string, to tell an absent argument from an empty
// one) is described as its element type: the model is never asked for null. adjust, when
// not nil, edits the schema before it is encoded: bounds and defaults, which For cannot
// read from a tag, and descriptions that hold a value known only at run time.
//
// It panics when T cannot be described: input types are fixed when stoke is built, and
// the spec tests describe each one.
func InputSchema[T any](adjust func(*jsonschema.Schema)) json.RawMessage {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("tool input schema: %v", err))
	}
	for _, p := range s.Properties {
		if len(p.Types) == 2 && p.Types[0] == "null" {
			p.Type, p.Types = p.Types[1], nil
		}
	}
	if adjust != nil {
		adjust(s)
	}
	raw, err := encodeSchema(s)
	if err != nil {
		panic(fmt.Sprintf("tool input schema: %v", err))
	}
	return raw
}

// encodeSchema encodes s byte for byte as json.Marshal does (Schema.MarshalJSON: type,
// then the properties in PropertyOrder, then the other keywords in the order of the
// Schema struct), for the keywords tool inputs use: type, properties, description,
// default, minimum, maximum, minLength, required, additionalProperties false, anyOf. A
// schema with any other keyword is left to json.Marshal. The library's encoder builds
// its reflection caches on first use, a quarter of a millisecond of every start-up that
// declares tools; this one takes microseconds.
func encodeSchema(s *jsonschema.Schema) ([]byte, error) {
	if !plainSchema(s) {
		return json.Marshal(s)
	}
	return appendSchema(nil, s), nil
}

// plainSchema reports whether s (and every schema in it) uses only the keywords
// appendSchema writes.
func plainSchema(s *jsonschema.Schema) bool {
	if s == nil {
		return false
	}
	rest := *s
	rest.Type, rest.Description, rest.Default = "", "", nil
	rest.Minimum, rest.Maximum, rest.MinLength = nil, nil, nil
	rest.Properties, rest.PropertyOrder, rest.Required = nil, nil, nil
	rest.AdditionalProperties, rest.AnyOf = nil, nil
	if !reflect.ValueOf(rest).IsZero() || s.AdditionalProperties != nil && !falseSchema(s.AdditionalProperties) {
		return false
	}
	for _, p := range s.Properties {
		if !plainSchema(p) {
			return false
		}
	}
	for _, a := range s.AnyOf {
		if !plainSchema(a) {
			return false
		}
	}
	return true
}

// falseSchema reports whether s is the schema that fails every value, {"not": {}}.
func falseSchema(s *jsonschema.Schema) bool {
	rest := *s
	rest.Not = nil
	return s.Not != nil && reflect.ValueOf(*s.Not).IsZero() && reflect.ValueOf(rest).IsZero()
}

// appendSchema appends the encoding of the plain schema s to b.
func appendSchema(b []byte, s *jsonschema.Schema) []byte {
	start := len(b)
	b = append(b, '{')
	key := func(k string) {
		if len(b) > start+1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, k...)
		b = append(b, '"', ':')
	}
	str := func(v string) {
		q, _ := json.Marshal(v) // escapes as the library's encoding does
		b = append(b, q...)
	}
	// seq writes n elements between left and right, comma-separated, each by elem.
	seq := func(left, right byte, n int, elem func(i int)) {
		b = append(b, left)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			elem(i)
		}
		b = append(b, right)
	}
	num := func(k string, f *float64) {
		if f != nil {
			key(k)
			q, _ := json.Marshal(*f)
			b = append(b, q...)
		}
	}
	if s.Type != "" {
		key("type")
		str(s.Type)
	}
	if s.Properties != nil {
		key("properties")
		names := slices.Clone(s.PropertyOrder)
		names = slices.DeleteFunc(names, func(n string) bool { _, ok := s.Properties[n]; return !ok })
		var rest []string
		for n := range s.Properties {
			if !slices.Contains(names, n) {
				rest = append(rest, n)
			}
		}
		slices.Sort(rest)
		names = append(names, rest...)
		seq('{', '}', len(names), func(i int) {
			str(names[i])
			b = append(b, ':')
			b = appendSchema(b, s.Properties[names[i]])
		})
	}
	if s.Description != "" {
		key("description")
		str(s.Description)
	}
	if len(s.Default) > 0 {
		key("default")
		b = append(b, s.Default...)
	}
	num("minimum", s.Minimum)
	num("maximum", s.Maximum)
	if s.MinLength != nil {
		key("minLength")
		b = strconv.AppendInt(b, int64(*s.MinLength), 10)
	}
	if len(s.Required) > 0 {
		key("required")
		seq('[', ']', len(s.Required), func(i int) { str(s.Required[i]) })
	}
	if s.AdditionalProperties != nil {
		key("additionalProperties")
		b = append(b, "false"...)
	}
	if len(s.AnyOf) > 0 {
		key("anyOf")
		seq('[', ']', len(s.AnyOf), func(i int) { b = appendSchema(b, s.AnyOf[i]) })
	}
	if len(b) == start+1 {
		return append(b[:start], "true"...) // {} is true, as the library writes it
	}
	return append(b, '}')
}

// Description returns a tool description kept in a Markdown file (embedded beside the
// tool), without the file's surrounding blank space; args fill its fmt verbs (limits
// the description states).
func Description(md string, args ...any) string {
	md = strings.TrimSpace(md)
	if len(args) == 0 {
		return md
	}
	return fmt.Sprintf(md, args...)
}

// schemaCache keeps the input schemas of the workspace tools, each built on first use
// (deriving and encoding one takes tens of microseconds) and shared by a workspace and
// its copies, so that the tool sets of many agents build each schema once. Safe for
// concurrent use.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]json.RawMessage
}

// get returns the schema of the tool name, built by build the first time.
func (c *schemaCache) get(name string, build func() json.RawMessage) json.RawMessage {
	if c == nil {
		return build()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if raw, ok := c.m[name]; ok {
		return raw
	}
	if c.m == nil {
		c.m = make(map[string]json.RawMessage)
	}
	raw := build()
	c.m[name] = raw
	return raw
}

// minLength sets the least length of the string property name.
func minLength(s *jsonschema.Schema, name string, n int) {
	s.Properties[name].MinLength = jsonschema.Ptr(n)
}

// bounds sets the least and (when hi is not nil) the greatest value of the number
// property name.
func bounds(s *jsonschema.Schema, name string, lo float64, hi *float64) {
	p := s.Properties[name]
	p.Minimum, p.Maximum = jsonschema.Ptr(lo), hi
}
