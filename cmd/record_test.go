package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/cassette"
	"github.com/stoke-cli/stoke/headless"
)

func TestRecordReplayFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"both", []string{"-p", "x", "--record", "a.yaml", "--replay", "b.yaml"}, nil, "--record and --replay cannot be used together"},
		{"both from env", []string{"-p", "x", "--record", "a.yaml"}, map[string]string{"STOKE_REPLAY": "b.yaml"}, "--record and --replay cannot be used together"},
		{"mode", []string{"-p", "x", "--replay", "b.yaml", "--replay-mode", "loose"}, nil, `invalid --replay-mode "loose": want one of strict, lenient`},
		{"mode from env", []string{"-p", "x", "--replay", "b.yaml"}, map[string]string{"STOKE_REPLAY_MODE": "loose"}, `invalid --replay-mode "loose" (from STOKE_REPLAY_MODE)`},
		{"timing", []string{"-p", "x", "--replay", "b.yaml", "--replay-timing", "fast"}, nil, `invalid --replay-timing "fast": want one of zero, real`},
		{"mode without replay", []string{"-p", "x", "--replay-mode", "lenient"}, nil, "--replay-mode and --replay-timing need --replay FILE"},
		{"missing cassette", []string{"-p", "x", "--replay", "missing.yaml"}, nil, "read cassette"},
		{"record into a missing directory", []string{"-p", "x", "--scenario", "s.yaml", "--record", "no/such/dir/c.yaml"}, nil, "record:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			writeFile(t, filepath.Join(p.cwd, "s.yaml"), "rules: [{reply: {text: hi}}]\n")
			for k, v := range tc.env {
				p.env[k] = v
			}
			got := p.run(t, tc.args...)
			if got.code != 2 || !strings.Contains(got.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", got.code, got.stderr, tc.want)
			}
			requireOneErrorLine(t, got.stderr)
		})
	}
}

func TestRecordWrapsTheProviderAndReplayReplacesIt(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	writeFile(t, filepath.Join(p.cwd, "s.yaml"), "model: scripted-x\nrules: [{reply: {text: hi}}]\n")

	got := p.run(t, "-p", "x", "--scenario", "s.yaml", "--record", "c.yaml")
	if got.code != 0 {
		t.Fatalf("record: exit %d, %s", got.code, got.stderr)
	}
	if _, ok := got.opts.Model.(*cassette.Recorder); !ok || got.opts.NewTaskID == nil || got.opts.ModelName != "scripted-x" {
		t.Fatalf("record: model %T, NewTaskID set %v, name %q", got.opts.Model, got.opts.NewTaskID != nil, got.opts.ModelName)
	}
	data, err := os.ReadFile(filepath.Join(p.cwd, "c.yaml")) // relative to the working directory
	if err != nil || !strings.Contains(string(data), "# end of recording: 0 calls") || !strings.Contains(string(data), "provider: scripted") {
		t.Fatalf("cassette: %v\n%s", err, data)
	}
	id := got.opts.NewTaskID(agents.LaunchRequest{ToolUseID: "call_1"})
	if _, err := agents.ParseTaskID(string(id)); err != nil {
		t.Errorf("task id %q: %v", id, err)
	}

	// No provider configuration is needed to replay: no key, no scenario.
	p.env["STOKE_REPLAY"] = "c.yaml"
	got = p.run(t, "-p", "x", "--provider", "openai")
	if got.code != 0 {
		t.Fatalf("replay: exit %d, %s", got.code, got.stderr)
	}
	if _, ok := got.opts.Model.(*cassette.Replayer); !ok || got.opts.ModelName != "scripted-x" {
		t.Fatalf("replay: model %T named %q", got.opts.Model, got.opts.ModelName)
	}
	if again := got.opts.NewTaskID(agents.LaunchRequest{ToolUseID: "call_1"}); again != id {
		t.Errorf("replayed task id %s, recorded %s", again, id)
	}
}

func TestSecretsAreTheKeysInUse(t *testing.T) {
	t.Parallel()
	env := map[string]string{"OPENAI_API_KEY": "sk-openai", "ANTHROPIC_API_KEY": "sk-ant", "STOKE_API_KEY": " "}
	got := (&Config{APIKey: "sk-openai"}).secretValues(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if strings.Join(got, ",") != "sk-openai,sk-ant" {
		t.Errorf("secrets = %q", got)
	}
}

// A cassette is committed to a repository: it holds none of the values the run redacts
// from tool results, the env-deny variables' included, even in a reply that quotes one.
func TestRecordRedactsWhatTheRunRedacts(t *testing.T) {
	t.Parallel()
	const token = "ghp-0123456789abcdef"
	p := newTestProcess(t)
	p.env["GITHUB_TOKEN"] = token
	p.homeSettings(t, "env-deny: [GITHUB_TOKEN]\n")
	writeFile(t, filepath.Join(p.cwd, "s.yaml"), "rules: [{reply: {text: 'the token is "+token+"'}}]\n")
	deps, _, errOut := p.deps()
	runF := func(ctx context.Context, opts headless.Options) error {
		req := &llm.Request{Agent: "parent", Messages: []llm.Message{llm.UserText("which token?")}}
		for _, err := range opts.Model.Generate(ctx, req) {
			if err != nil {
				return err
			}
		}
		return nil
	}
	if code := execute(t.Context(), deps, runF, []string{"-p", "x", "--scenario", "s.yaml", "--record", "c.yaml"}); code != 0 {
		t.Fatalf("record: exit %d, %s", code, errOut)
	}
	data, err := os.ReadFile(filepath.Join(p.cwd, "c.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), token) || !strings.Contains(string(data), "the token is [REDACTED]") {
		t.Errorf("the cassette holds the env-deny variable's value, or not the reply:\n%s", data)
	}
}
