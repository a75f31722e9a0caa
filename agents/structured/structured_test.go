package structured

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/tools"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schema string
		ok     bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, true},
		{`{"properties":{"a":{"type":"integer"}}}`, true}, // no type: an object
		{`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`, true},
		{`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","$defs":{"n":{"type":"number"}},"properties":{"x":{"$ref":"#/$defs/n"}}}`, true},
		{`{"type":"array"}`, false},
		{`{"type":["object","null"]}`, false},
		{`[1]`, false},
		{`{"type":"object"} {}`, false},
		{`not json`, false},
		{`{"type":"object","properties":{"x":{"$ref":"https://example.com/s.json"}}}`, false}, // remote reference
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.schema))
		if (err == nil) != tt.ok {
			t.Errorf("Parse(%s) = %v, want ok %v", tt.schema, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrSchema) {
			t.Errorf("Parse(%s) error %v is not ErrSchema", tt.schema, err)
		}
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "s.json"), []byte(`{"type":"object","required":["ok"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, arg := range []string{"@s.json", "@" + filepath.Join(dir, "s.json"), ` {"type":"object","required":["ok"]} `} {
		s, err := Load(arg, dir)
		if err != nil {
			t.Fatalf("Load(%q): %v", arg, err)
		}
		if string(s.Raw()) != `{"type":"object","required":["ok"]}` {
			t.Errorf("Load(%q).Raw() = %s", arg, s.Raw())
		}
	}
	if _, err := Load("@missing.json", dir); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("Load of a missing file = %v, want an error naming it", err)
	}
}

func TestValidateAndFromText(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(`{"type":"object","properties":{"verdict":{"enum":["pass","fail"]},"findings":{"type":"array","items":{"type":"string"}}},"required":["verdict"],"additionalProperties":false}`))
	if err != nil {
		t.Fatal(err)
	}
	for v, ok := range map[string]bool{
		`{"verdict":"pass"}`:                     true,
		`{"verdict":"fail","findings":["a.go"]}`: true,
		`{"verdict":"maybe"}`:                    false,
		`{"findings":[]}`:                        false,
		`{"verdict":"pass","extra":1}`:           false,
		`{"verdict":"pass","findings":[1]}`:      false,
	} {
		if err := s.Validate(json.RawMessage(v)); (err == nil) != ok {
			t.Errorf("Validate(%s) = %v, want ok %v", v, err, ok)
		}
	}
	for text, want := range map[string]string{
		`{"verdict": "pass"}`:                     `{"verdict":"pass"}`,
		"```json\n{\"verdict\": \"fail\"}\n```\n": `{"verdict":"fail"}`,
		"```\n{\"verdict\":\"pass\"}\n```":        `{"verdict":"pass"}`,
		"It passes.":                              "",
		`{"verdict": "maybe"}`:                    "",
	} {
		got, err := s.FromText(text)
		if string(got) != want || (err == nil) != (want != "") {
			t.Errorf("FromText(%q) = %s, %v; want %s", text, got, err, want)
		}
	}
}

// The tool's schema is the schema, which the tool set checks before the call runs.
func TestTool(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(`{"properties":{"n":{"type":"integer"}},"required":["n"]}`))
	if err != nil {
		t.Fatal(err)
	}
	set := tools.NewSet(s.Tool())
	if res := set.Run(context.Background(), tools.Call{Name: ToolName, Input: json.RawMessage(`{"n":1}`)}); res.IsError {
		t.Errorf("a valid answer is refused: %s", res.Content)
	}
	res := set.Run(context.Background(), tools.Call{Name: ToolName, Input: json.RawMessage(`{"n":"one"}`)})
	if !res.IsError || !strings.Contains(res.Content, "n") {
		t.Errorf("an invalid answer = %+v, want an error naming the property", res)
	}
	if spec := s.Tool().Spec(); !strings.Contains(string(spec.Parameters), `"type":"object"`) {
		t.Errorf("tool parameters %s lack type object", spec.Parameters)
	}
}
