package streamjson

import (
	"bytes"
	"encoding/json"
	"strings"
)

// marshalNoEscape is json.Marshal without HTML escaping, so that '<', '>' and '&' (common
// in prompts, code and <task-notification> text) reach consumers as written. A MarshalJSON
// method must use it: the outer encoder's SetEscapeHTML(false) does not undo escapes that a
// nested json.Marshal already made.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encode ends every value with '\n'
}

// MarshalJSON writes the init line with every list present ([] rather than null), even
// when the Init was built without NewInit.
func (i Init) MarshalJSON() ([]byte, error) {
	type plain Init
	p := plain(i)
	p.Tools = nonNil(p.Tools)
	p.Agents = nonNil(p.Agents)
	p.MCPServers = nonNil(p.MCPServers)
	p.SlashCommands = nonNil(p.SlashCommands)
	p.Skills = nonNil(p.Skills)
	p.Plugins = nonNil(p.Plugins)
	return marshalNoEscape(p)
}

// MarshalJSON writes the result line with modelUsage and permission_denials always present,
// and errors always present (possibly []) on error_* subtypes: the SDKs read errors
// without a guard when the subtype is an error (a missing key makes the TS SDK throw).
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	p := plain(r)
	if p.ModelUsage == nil {
		p.ModelUsage = map[string]ModelUsage{}
	}
	p.PermissionDenials = nonNil(p.PermissionDenials)
	if !strings.HasPrefix(r.Subtype, "error_") {
		return marshalNoEscape(p)
	}
	return marshalNoEscape(struct {
		plain
		Errors []string `json:"errors"` // shadows the omitempty field of plain
	}{p, nonNil(r.Errors)})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
