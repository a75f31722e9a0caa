package sdkhost

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/catalog"
)

func TestWorkspaceToolFilter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sdk  Options
		want []string
	}{
		{"no options: all", Options{}, nil},
		{"--tools in Claude's names", Options{Tools: []string{"Read", "Bash"}}, []string{"read_file", "shell"}},
		{"--tools empty: none", Options{Tools: []string{}}, []string{}},
		{"a bare disallowed name takes the tool away", Options{DisallowedTools: []string{"Bash", "Write(x)"}}, []string{"read_file", "write_file", "edit", "glob", "grep"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := workspaceTools(tt.sdk, slog.New(slog.DiscardHandler))
			if (got == nil) != (tt.want == nil) || strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("workspaceTools = %#v, want %#v", got, tt.want)
			}
		})
	}
}

// What an initialize request adds lives in the Host: the caller's Options (and the
// slices they share with the caller) are never written to.
func TestInitializeLeavesOptionsAlone(t *testing.T) {
	t.Parallel()
	agentsBuf := make([]catalog.Definition, 1, 4)
	agentsBuf[0] = catalog.Definition{Name: "mine", Prompt: "p"}
	opts := Options{Agents: agentsBuf, AppendSystemPrompt: "flag"}
	in, err := parseInitialize(json.RawMessage(`{"request":{"subtype":"initialize","systemPrompt":"host prompt","appendSystemPrompt":"more","agents":{"theirs":{"description":"d","prompt":"q"}}}}`), DialectClaude, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	got := opts.with(in)
	if names := []string{got.Agents[0].Name, got.Agents[1].Name}; len(got.Agents) != 2 || names[1] != "theirs" {
		t.Fatalf("agents = %+v", got.Agents)
	}
	if got.SystemPrompt != "host prompt" || got.AppendSystemPrompt != "flag\n\nmore" {
		t.Fatalf("prompts = %q, %q", got.SystemPrompt, got.AppendSystemPrompt)
	}
	if opts.SystemPrompt != "" || opts.AppendSystemPrompt != "flag" || len(opts.Agents) != 1 {
		t.Fatalf("the caller's options changed: %+v", opts)
	}
	if spare := agentsBuf[:2][1]; spare.Name != "" {
		t.Fatalf("the caller's agents slice was written past its length: %+v", spare)
	}
}
