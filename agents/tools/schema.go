package tools

import (
	"encoding/json"
	"fmt"
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
	raw, err := json.Marshal(s)
	if err != nil {
		panic(fmt.Sprintf("tool input schema: %v", err))
	}
	return raw
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
