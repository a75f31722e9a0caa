package tools

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// encodeSchema writes what json.Marshal writes, byte for byte: on every keyword it knows,
// and by falling back to it on the others.
func TestEncodeSchemaMatchesLibrary(t *testing.T) {
	t.Parallel()
	type input struct {
		Path  string  `json:"path" jsonschema:"A path, like <root>/a & \"b\"."`
		Count int64   `json:"count,omitempty" jsonschema:"How many."`
		Text  *string `json:"text"`
		Flag  bool    `json:"flag,omitempty"`
	}
	derived, err := jsonschema.For[input](nil)
	if err != nil {
		t.Fatal(err)
	}
	derived.Properties["count"].Minimum = jsonschema.Ptr(0.5)
	derived.Properties["count"].Maximum = jsonschema.Ptr(1e21)
	derived.Properties["path"].MinLength = jsonschema.Ptr(1)
	derived.Properties["flag"].Default = json.RawMessage("false")
	derived.AnyOf = []*jsonschema.Schema{{Required: []string{"path"}}, {Required: []string{"text", "count"}}}
	// The same with text a plain string, as InputSchema makes it.
	text := *derived.Properties["text"]
	text.Type, text.Types = "string", nil
	plain := *derived
	plain.Properties = maps.Clone(derived.Properties)
	plain.Properties["text"] = &text
	tests := []struct {
		name  string
		s     *jsonschema.Schema
		plain bool
	}{
		{"derived, with every keyword", &plain, true},
		{"derived, text nullable", derived, false}, // "type": ["null","string"] is not plain
		{"empty", &jsonschema.Schema{}, true},
		{"empty properties", &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}, true},
		{"properties out of order", &jsonschema.Schema{Type: "object", PropertyOrder: []string{"z", "gone"},
			Properties: map[string]*jsonschema.Schema{"b": {Type: "string"}, "a": {}, "z": {Type: "integer", Minimum: jsonschema.Ptr(-3.0)}}}, true},
		{"no more properties", &jsonschema.Schema{Type: "object", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}, true},
		{"other additional properties", &jsonschema.Schema{Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "string"}}, false},
		{"an enum", &jsonschema.Schema{Type: "string", Enum: []any{"wait", "cancel"}, Description: "policy"}, false},
		{"an enum inside", &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"p": {Enum: []any{"x"}}}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			want, err := json.Marshal(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeSchema(tt.s)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("encodeSchema:\n got %s\nwant %s", got, want)
			}
			if plainSchema(tt.s) != tt.plain {
				t.Errorf("plainSchema = %v, want %v", !tt.plain, tt.plain)
			}
		})
	}
}
