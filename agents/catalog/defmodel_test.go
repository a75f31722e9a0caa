package catalog

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolveModel(t *testing.T) {
	t.Parallel()
	aliases := map[string]string{
		"sonnet": "gpt-4.1", "Opus": "o3", "fast": "qwen-turbo", "mine": "inherit",
		"anthropic:claude-opus-4": "gpt-5", "haiku": "sonnet",
	}
	tests := []struct {
		written, provider string
		want              ModelResolution
	}{
		{"", "openai", ModelResolution{}},
		{"inherit", "openai", ModelResolution{Written: "inherit"}},
		{"INHERIT", "openai", ModelResolution{Written: "INHERIT"}},
		{"sonnet", "openai", ModelResolution{Written: "sonnet", Model: "gpt-4.1", Alias: "sonnet"}},
		// a key that differs only in case
		{"opus", "openai", ModelResolution{Written: "opus", Model: "o3", Alias: "Opus"}},
		{" fast ", "openai", ModelResolution{Written: "fast", Model: "qwen-turbo", Alias: "fast"}},
		{"mine", "openai", ModelResolution{Written: "mine", Alias: "mine"}},
		// an alias mapped to another alias is never sent
		{"haiku", "openai", ModelResolution{Written: "haiku", Alias: "haiku", Problem: `model-aliases maps "haiku" to "sonnet", which is an alias too`}},
		{"opusplan", "openai", ModelResolution{Written: "opusplan", Problem: `model "opusplan" is an alias that model-aliases does not map`}},
		{"sonnet[1m]", "openai", ModelResolution{Written: "sonnet[1m]", Problem: `model "sonnet[1m]" is an alias that model-aliases does not map`}},
		// provider:model: a whole entry first, then the run's provider, else another's
		{"anthropic:claude-opus-4", "openai", ModelResolution{Written: "anthropic:claude-opus-4", Model: "gpt-5", Alias: "anthropic:claude-opus-4"}},
		{"openai:gpt-4.1-mini", "openai", ModelResolution{Written: "openai:gpt-4.1-mini", Model: "gpt-4.1-mini"}},
		{"openai:sonnet", "openai", ModelResolution{Written: "openai:sonnet", Model: "gpt-4.1", Alias: "sonnet"}},
		{"anthropic:claude-haiku-4-5", "openai", ModelResolution{Written: "anthropic:claude-haiku-4-5", Problem: `model "anthropic:claude-haiku-4-5" is for provider anthropic; this run uses openai`}},
		{"qwen-oauth:coder-model", "anthropic", ModelResolution{Written: "qwen-oauth:coder-model", Problem: `model "qwen-oauth:coder-model" is for provider qwen-oauth; this run uses anthropic`}},
		// a colon after anything else is part of the name (Ollama)
		{"qwen2.5-coder:32b", "openai", ModelResolution{Written: "qwen2.5-coder:32b", Model: "qwen2.5-coder:32b"}},
		{"claude-sonnet-4-5", "anthropic", ModelResolution{Written: "claude-sonnet-4-5", Model: "claude-sonnet-4-5"}},
	}
	for _, tt := range tests {
		got := ResolveModel(tt.written, aliases, tt.provider)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ResolveModel(%q, %s) (-want +got):\n%s", tt.written, tt.provider, diff)
		}
		if IsModelAlias(got.Model) {
			t.Errorf("ResolveModel(%q) = %q, an alias", tt.written, got.Model)
		}
	}
	if got := ResolveModel("sonnet", nil, "openai"); got.Model != "" || got.Problem == "" {
		t.Errorf("without aliases: %+v", got)
	}
}

// Agent files come from strangers: whatever they hold, parsing returns a definition with
// a valid name or an error, and never panics; a parsed model resolves to a model name
// or the parent's, never to an alias.
func FuzzParseDefinition(f *testing.F) {
	for _, seed := range []string{
		"---\nname: a\nmodel: sonnet\ntools: Read, list_directory\n---\nx ${task_prompt}\n",
		"---\nname: q\nmodelConfig: {model: fast}\nrunConfig: {max_turns: 3, max_time_minutes: 0.5}\napprovalMode: bubble\n---\n",
		"---\nname: h\nhooks:\n  PreToolUse:\n    - command: x\n  Stop:\n    - hooks: [{type: command, command: y, timeout: 3}]\n---\n",
		"---\nname: d\ndescription: Use when: x. Example: y\nmcpServers: [a, {b: {command: c}}]\n---\n",
		"\uFEFF---\r\nname: w\r\n---\r\n",
		"---\nname: [x\n---\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		d, _, err := ParseDefinition("x.md", []byte(data))
		if err != nil {
			return
		}
		if !validName().MatchString(d.Name) || len(d.Name) > 64 {
			t.Fatalf("parsed an invalid name %q", d.Name)
		}
		r := ResolveModel(d.Model, map[string]string{"sonnet": "gpt-4.1"}, "openai")
		if IsModelAlias(r.Model) || strings.EqualFold(r.Model, "inherit") {
			t.Fatalf("model %q resolved to %q", d.Model, r.Model)
		}
	})
}
