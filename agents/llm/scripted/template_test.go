package scripted

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stoke-cli/stoke/agents/llm"
)

func TestTemplateFuncs(t *testing.T) {
	t.Parallel()
	marks := &llm.Request{
		Agent:  "general-purpose",
		System: "MARK-SYS and SYSONLY-7",
		Messages: []llm.Message{
			llm.UserText("MARK-OLD"),
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("ID-1 ID-2")}},
			llm.UserText("MARK-NEW"),
		},
	}
	tests := []struct {
		name string
		req  *llm.Request
		text string
		want string
	}{
		{"match first in history", conversation(), "{{ match `NONCE-[A-Z0-9]+` }}", "NONCE-AAA111"},
		{"lastMatch newest in history", conversation(), "{{ lastMatch `NONCE-[A-Z0-9]+` }}", "NONCE-BBB222"},
		{"match capture group", conversation(), "{{ match `Remember (NONCE-[A-Z0-9]+)` }}", "NONCE-AAA111"},
		{"match none", conversation(), "[{{ match `NONCE-ZZZ` }}]", "[]"},
		{"match reads tool input", conversation(), "{{ match `\"file_path\":\"([^\"]+)\"` }}", "a.txt"},
		{"match reads tool result", conversation(), "{{ match `RESULT-[0-9]` }}", "RESULT-1"},
		{"match prefers messages over system", marks, "{{ match `MARK-[A-Z]+` }}", "MARK-OLD"},
		{"lastMatch prefers messages over system", marks, "{{ lastMatch `MARK-[A-Z]+` }}", "MARK-NEW"},
		{"match falls back to system", marks, "{{ match `SYSONLY-[0-9]` }}", "SYSONLY-7"},
		{"lastMatch takes last within a text", marks, "{{ lastMatch `ID-[0-9]` }}", "ID-2"},
		{"match takes first within a text", marks, "{{ match `ID-[0-9]` }}", "ID-1"},
		{"computed pattern", conversation(), `{{ match (printf "%s-[0-9]" "RESULT") }}`, "RESULT-1"},
		{"matchAll every match, oldest first", marks, "{{ range matchAll `(MARK|ID)-[A-Z0-9]+` }}{{ . }} {{ end }}", "MARK ID ID MARK MARK "},
		{"matchAll whole matches", marks, "{{ matchAll `ID-[0-9]` }}", "[ID-1 ID-2]"},
		{"matchAll count", conversation(), "{{ len (matchAll `NONCE-[A-Z0-9]+`) }}", "2"},
		{"matchAll index", marks, "{{ index (matchAll `ID-([0-9])`) 1 }}", "2"},
		{"matchAll none", conversation(), "{{ len (matchAll `NONCE-ZZZ`) }}", "0"},
		{"lastUser", conversation(), "<{{ lastUser }}>", "<second question>"},
		{"lastToolResult", conversation(), "{{ lastToolResult }}", "contents of a.txt: RESULT-1"},
		{"step", conversation(), "step {{ step }}", "step 3"},
		{"agent", marks, "{{ agent }}", "general-purpose"},
		{"conditional", conversation(), "{{ if match `NONCE-ZZZ` }}yes{{ else }}no{{ end }}", "no"},
		{"plain text", conversation(), "no actions here", "no actions here"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tm, err := parseTemplate("t", tt.text)
			if err != nil {
				t.Fatalf("parseTemplate: %v", err)
			}
			got, err := tm.render(newView(tt.req), tt.text)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if got != tt.want {
				t.Errorf("render(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestRenderBadComputedPattern(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, "rules:\n  - reply: {text: '{{ match (printf \"%s\" \"(\") }}'}\n"))
	_, err := collect(t.Context(), m, conversation())
	if err == nil || !strings.Contains(err.Error(), "rules[0]") {
		t.Fatalf("err = %v, want a render error naming rules[0]", err)
	}
}

func TestToolCallInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string
		want map[string]any
	}{
		{
			name: "templates at any depth, other values kept",
			src: `
rules:
  - reply:
      tool_calls:
        - name: probe
          input:
            step: "{{ step }}"
            count: 3
            ratio: 2.5
            background: true
            plain: no template
            list: ["{{ agent }}", 7, {deep: "said {{ lastUser }}"}]
            nested: {nonce: "{{ match ` + "`NONCE-[A-Z0-9]+`" + ` }}"}
`,
			want: map[string]any{
				"step": "3", "count": 3.0, "ratio": 2.5, "background": true, "plain": "no template",
				"list":   []any{"parent", 7.0, map[string]any{"deep": "said second question"}},
				"nested": map[string]any{"nonce": "NONCE-AAA111"},
			},
		},
		{
			name: "literal reply keeps templates verbatim",
			src: `
rules:
  - reply:
      literal: true
      tool_calls:
        - name: probe
          input: {x: "{{ step }}", y: ["{{ agent }}"]}
`,
			want: map[string]any{"x": "{{ step }}", "y": []any{"{{ agent }}"}},
		},
		{
			name: "no input is an empty object",
			src:  "rules:\n  - reply: {tool_calls: [{name: probe}]}\n",
			want: map[string]any{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := mustGenerate(t, New(mustParse(t, tt.src)), conversation())
			if len(r.calls) != 1 || r.calls[0].Name != "probe" {
				t.Fatalf("calls = %+v, want one probe call", r.calls)
			}
			var got map[string]any
			if err := json.Unmarshal(r.calls[0].Input, &got); err != nil {
				t.Fatalf("input %s: %v", r.calls[0].Input, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("input (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLiteralText(t *testing.T) {
	t.Parallel()
	m := New(mustParse(t, "rules:\n  - reply: {literal: true, text: 'say {{ lastUser }}'}\n"))
	if got := mustGenerate(t, m, conversation()).text; got != "say {{ lastUser }}" {
		t.Errorf("text = %q, want it verbatim", got)
	}
}
