package scripted

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/stoke-cli/stoke/agents/llm"
)

func TestLoadBadFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		src  string // file content; "" with missing: true means no file
		want []string
	}{
		{"empty", "", []string{"empty file"}},
		{"yaml syntax", "rules: [\n", []string{"yaml:"}},
		{"unknown key", "rulez: []\n", []string{"rulez"}},
		{"unknown condition", "rules:\n  - when: {last_usr_contains: x}\n    reply: {text: x}\n", []string{"last_usr_contains"}},
		{"no rules", "name: x\n", []string{"no rules"}},
		{"bad duration", "rules:\n  - reply: {delay: soon}\n", []string{"soon"}},
		{"bad regex in when", "name: x\nrules:\n  - reply: {text: a}\n  - when: {last_user_matches: '('}\n    reply: {text: x}\n", []string{"rules[1] (line 4)", "when: last_user_matches", "missing closing )"}},
		{"bad regex in unless", "rules:\n  - unless: {history_matches: '[z-a]'}\n    reply: {text: x}\n", []string{"rules[0] (line 2)", "unless: history_matches"}},
		{"empty unless", "rules:\n  - unless: {}\n    reply: {text: x}\n", []string{"unless: no conditions"}},
		{"negative step", "rules:\n  - when: {step: -1}\n    reply: {text: x}\n", []string{"step"}},
		{"bad template syntax", "rules:\n  - reply: {text: '{{ lastUser '}\n", []string{"reply.text"}},
		{"unknown template function", "rules:\n  - reply: {text: '{{ nonesuch }}'}\n", []string{"nonesuch"}},
		{"bad regex in template", "rules:\n  - reply: {text: '{{ match `(` }}'}\n", []string{"reply.text", "match \"(\""}},
		{"bad template in tool input", "rules:\n  - reply: {tool_calls: [{name: t, input: {a: [x, '{{ lastMatch `+` }}']}}]}\n", []string{"reply.tool_calls[0].input.a[1]", "lastMatch"}},
		{"tool call without name", "rules:\n  - reply: {tool_calls: [{input: {a: 1}}]}\n", []string{"reply.tool_calls[0]: no name"}},
		{"non-string input key", "rules:\n  - reply: {tool_calls: [{name: t, input: {a: {1: x}}}]}\n", []string{"input.a: map keys must be strings"}},
		{"error status without error", "rules:\n  - reply: {error_status: 500}\n", []string{"error_status without error"}},
		{"partial with text", "rules:\n  - reply: {partial: so far, text: x}\n", []string{"rules[0]", "partial is an answer cut short"}},
		{"partial with tool calls", "rules:\n  - reply: {partial: so far, tool_calls: [{name: t}]}\n", []string{"partial is an answer cut short"}},
		{"bad template in partial", "rules:\n  - reply: {partial: '{{ lastUser '}\n", []string{"reply.partial"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "bad.yaml")
			if err := os.WriteFile(path, []byte(tt.src), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if !errors.Is(err, llm.ErrBadConfig) {
				t.Fatalf("Load error = %v, want one wrapping llm.ErrBadConfig", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q spans lines, want one line", err)
			}
			for _, want := range append([]string{path}, tt.want...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "nope.yaml")
	for name, load := range map[string]func() error{
		"Load": func() error { _, err := Load(path); return err },
		"Open": func() error { _, err := Open(path); return err },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := load()
			if !errors.Is(err, llm.ErrBadConfig) || !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("error = %v, want llm.ErrBadConfig and fs.ErrNotExist", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
		})
	}
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	s, err := Parse("dir/my-run.yaml", []byte("rules:\n  - reply: {text: x, delay: 50ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "my-run" || s.Model != DefaultModel {
		t.Errorf("name, model = %q, %q; want my-run, %q", s.Name, s.Model, DefaultModel)
	}
	if s.Rules[0].Reply.Delay != 50*time.Millisecond {
		t.Errorf("delay = %v, want 50ms", s.Rules[0].Reply.Delay)
	}
	if got := s.rules[0].agent; got != AnyAgent {
		t.Errorf("default agent = %q, want %q", got, AnyAgent)
	}
}

// TestHelloScenario keeps scenarios/hello.yaml loadable and doing what its comment says.
func TestHelloScenario(t *testing.T) {
	t.Parallel()
	m, err := Open(filepath.Join("..", "..", "..", "scenarios", "hello.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "scripted-demo" {
		t.Errorf("Name = %q, want scripted-demo", m.Name())
	}
	r := mustGenerate(t, m, &llm.Request{Agent: "parent", Messages: []llm.Message{llm.UserText("good morning")}})
	if r.text != "Hello! You said: good morning" || r.done.StopReason != llm.StopEndTurn {
		t.Errorf("reply = %q (%s), want the greeting echoing the prompt, end_turn", r.text, r.done.StopReason)
	}
	if u := m.Unused(); u != nil {
		t.Errorf("Unused = %v, want none", u)
	}
}

// TestMarshalRoundTrip: a Scenario marshals back to YAML that parses to the same rules,
// which is what a recorder writing a replayable file relies on.
func TestMarshalRoundTrip(t *testing.T) {
	t.Parallel()
	s := mustParse(t, nonceScenario+`
  - agent: parent
    once: true
    when: {step: 9}
    reply:
      literal: true
      text: "{{ verbatim }}"
      delay: 2s
      usage: {input_tokens: 10, output_tokens: 3}
      tool_calls: [{name: shell, input: {command: "echo {{ x }}", timeout_ms: 100}}]
`)
	data, err := yaml.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Parse("again.yaml", data)
	if err != nil {
		t.Fatalf("Parse(marshalled):\n%s\n%v", data, err)
	}
	if diff := cmp.Diff(s.Rules, again.Rules); diff != "" {
		t.Errorf("rules after a round trip (-want +got):\n%s", diff)
	}
}

// TestReadmeExamples keeps every YAML example of scenarios/README.md loadable.
func TestReadmeExamples(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "scenarios", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(data), "```yaml\n")[1:]
	if len(blocks) < 3 {
		t.Fatalf("found %d yaml examples, want at least 3", len(blocks))
	}
	for i, b := range blocks {
		src, _, ok := strings.Cut(b, "```")
		if !ok {
			t.Fatalf("example %d is not closed", i)
		}
		if _, err := Parse(fmt.Sprintf("README example %d", i), []byte(src)); err != nil {
			t.Errorf("%v\n%s", err, src)
		}
	}
}

// TestScenarioFilesLoad keeps every file in scenarios/ loadable.
func TestScenarioFilesLoad(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob(filepath.Join("..", "..", "..", "scenarios", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("glob scenarios: %v (%d files)", err, len(paths))
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			t.Parallel()
			if _, err := Load(p); err != nil {
				t.Error(err)
			}
		})
	}
}

// The fan-out scenario parses, launches every job in one reply and answers each agent
// from its own prompt.
func TestFanOutScenario(t *testing.T) {
	t.Parallel()
	s, err := Parse("fan-out", FanOut{Agents: 12, Spread: time.Second}.YAML())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(s.Rules[0].Reply.ToolCalls); n != 12 {
		t.Fatalf("%d task calls, want 12", n)
	}
	if d := s.Rules[2+7].Reply.Delay; d != 800*time.Millisecond {
		t.Fatalf("delay of the jobs ending in 7 = %v", d)
	}
}
