package hooks

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want Config
	}{
		{
			name: "flat form with duration and default timeout",
			yaml: `
SubagentStart:
  - command: "./scripts/on-start.sh"
    timeout: 30s
SubagentStop:
  - command: ./check.sh
Stop:
  - command: echo done
    timeout: 1m30s
`,
			want: Config{
				SubagentStart: {{Command: "./scripts/on-start.sh", Timeout: 30 * time.Second}},
				SubagentStop:  {{Command: "./check.sh", Timeout: DefaultTimeout}},
				Stop:          {{Command: "echo done", Timeout: 90 * time.Second}},
			},
		},
		{
			name: "claude nested form with seconds",
			yaml: `
SubagentStop:
  - matcher: "*"
    hooks:
      - type: command
        command: "$CLAUDE_PROJECT_DIR/.claude/hooks/check.sh"
        timeout: 30
      - type: command
        command: ./second.sh
  - matcher: "reviewer|auditor"
    hooks:
      - command: ./third.sh
        timeout: 2.5
`,
			want: Config{SubagentStop: {
				{Command: "$CLAUDE_PROJECT_DIR/.claude/hooks/check.sh", Timeout: 30 * time.Second, Matcher: "*"},
				{Command: "./second.sh", Timeout: DefaultTimeout, Matcher: "*"},
				{Command: "./third.sh", Timeout: 2500 * time.Millisecond, Matcher: "reviewer|auditor"},
			}},
		},
		{
			name: "both forms mixed, string shorthand, flat timeout in seconds",
			yaml: `
Stop:
  - ./plain.sh
  - command: ./flat.sh
    timeout: 5
    statusMessage: ignored
  - hooks: [{command: ./nested.sh}]
`,
			want: Config{Stop: {
				{Command: "./plain.sh", Timeout: DefaultTimeout},
				{Command: "./flat.sh", Timeout: 5 * time.Second},
				{Command: "./nested.sh", Timeout: DefaultTimeout},
			}},
		},
		{
			name: "event names are case-insensitive (viper lower-cases keys)",
			yaml: "subagentstop:\n  - command: a\nSTOP:\n  - command: b\n",
			want: Config{
				SubagentStop: {{Command: "a", Timeout: DefaultTimeout}},
				Stop:         {{Command: "b", Timeout: DefaultTimeout}},
			},
		},
		{
			name: "empty lists and null are no hooks",
			yaml: "Stop: []\nSubagentStop:\nSubagentStart:\n  - matcher: x\n    hooks: []\n",
			want: Config{},
		},
		{name: "null document", yaml: "", want: Config{}},
		{
			name: "anchors and aliases",
			yaml: "SubagentStop: &h\n  - command: a\nStop: *h\n",
			want: Config{
				SubagentStop: {{Command: "a", Timeout: DefaultTimeout}},
				Stop:         {{Command: "a", Timeout: DefaultTimeout}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tt.yaml), &n); err != nil {
				t.Fatal(err)
			}
			got, err := ParseConfig(&n)
			if err != nil {
				t.Fatalf("ParseConfig(node): %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseConfig(node) (-want +got):\n%s", diff)
			}

			// The same config decoded generically, as a settings reader hands it over.
			var generic any
			if err := yaml.Unmarshal([]byte(tt.yaml), &generic); err != nil {
				t.Fatal(err)
			}
			got, err = ParseConfig(generic)
			if err != nil {
				t.Fatalf("ParseConfig(generic): %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseConfig(generic) (-want +got):\n%s", diff)
			}

			// And as a struct field.
			var s struct {
				Hooks Config `yaml:"hooks"`
			}
			indented := "hooks:\n" + indent(tt.yaml)
			if err := yaml.Unmarshal([]byte(indented), &s); err != nil {
				t.Fatalf("unmarshal struct: %v", err)
			}
			if diff := cmp.Diff(tt.want, s.Hooks, cmpEmpty); diff != "" {
				t.Errorf("UnmarshalYAML (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpEmpty treats a nil Config (a null `hooks:` key leaves the field untouched) as empty.
var cmpEmpty = cmp.Transformer("nilConfig", func(c Config) map[Event][]Hook {
	if c == nil {
		return map[Event][]Hook{}
	}
	return c
})

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("  " + line)
	}
	return b.String()
}

func TestParseConfigJSONShape(t *testing.T) {
	t.Parallel()
	// A decoded settings.json: numbers are float64.
	v := map[string]any{
		"SubagentStop": []any{
			map[string]any{"matcher": "", "hooks": []any{
				map[string]any{"type": "command", "command": "./a.sh", "timeout": float64(10)},
			}},
		},
	}
	got, err := ParseConfig(v)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{SubagentStop: {{Command: "./a.sh", Timeout: 10 * time.Second}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got, err := ParseConfig(nil); err != nil || len(got) != 0 {
		t.Errorf("ParseConfig(nil) = %v, %v; want empty, nil", got, err)
	}
}

func TestParseConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, want string
	}{
		{"not a map", "- command: a", "want a map of event to hook list"},
		{"unknown event", "Notification:\n  - command: a", `event "Notification" is not supported`},
		{"event twice", "Stop:\n  - command: a\nstop:\n  - command: b", "given twice"},
		{"list is a map", "Stop:\n  command: a", "want a list of hooks"},
		{"no command", "Stop:\n  - timeout: 5s", "hook has no command"},
		{"empty command", "Stop:\n  - command: '  '", "hook has no command"},
		{"empty shorthand", "Stop:\n  - ''", "empty command"},
		{"number entry", "Stop:\n  - 5", "want a hook"},
		{"command not a string", "Stop:\n  - command: [a, b]", "command: want a string"},
		{"bad duration", "Stop:\n  - command: a\n    timeout: soon", `got "soon"`},
		{"zero timeout", "Stop:\n  - command: a\n    timeout: 0", "not positive"},
		{"negative timeout", "Stop:\n  - command: a\n    timeout: -5s", "not positive"},
		{"huge timeout", "Stop:\n  - command: a\n    timeout: 1e300", "out of range"},
		{"prompt hook", "Stop:\n  - hooks:\n      - type: prompt\n        prompt: check", `hook type "prompt" is not supported`},
		{"bad matcher", "SubagentStop:\n  - matcher: '(['\n    hooks: [{command: a}]", `matcher "(["`},
		{"nested hooks not a list", "Stop:\n  - hooks: {command: a}", "hooks: want a list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(tt.yaml), &n); err != nil {
				t.Fatal(err)
			}
			_, err := ParseConfig(&n)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseConfig error = %v; want one containing %q", err, tt.want)
			}
		})
	}
}

func TestConfigFor(t *testing.T) {
	t.Parallel()
	all := Hook{Command: "all"}
	star := Hook{Command: "star", Matcher: "*"}
	rev := Hook{Command: "rev", Matcher: "review"}
	exact := Hook{Command: "exact", Matcher: "^lint$"}
	c := Config{SubagentStop: {all, star, rev, exact}, Stop: {rev}}
	tests := []struct {
		ev     Event
		target string
		want   []Hook
	}{
		{SubagentStop, "code-reviewer", []Hook{all, star, rev}},
		{SubagentStop, "lint", []Hook{all, star, exact}},
		{SubagentStop, "linter", []Hook{all, star}},
		{Stop, "", []Hook{rev}}, // Stop has no target: matchers do not apply
		{SubagentStart, "lint", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, c.For(tt.ev, tt.target)); diff != "" {
			t.Errorf("For(%s, %q) (-want +got):\n%s", tt.ev, tt.target, diff)
		}
	}
	if got := c.Len(); got != 5 {
		t.Errorf("Len = %d; want 5", got)
	}
}
