package cmd

import (
	"strings"
	"testing"
)

func TestDefaultProvider(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		settings string
		want     string
	}{
		{name: "nothing set", want: providerOpenAI},
		{name: "a scenario", args: []string{"--scenario", "s.yaml"}, want: providerScripted},
		{name: "a scenario beats ANTHROPIC_API_KEY", args: []string{"--scenario", "s.yaml"}, env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant"}, want: providerScripted},
		{name: "STOKE_SCENARIO", env: map[string]string{"STOKE_SCENARIO": "s.yaml"}, want: providerScripted},
		{name: "--provider beats a scenario", args: []string{"--scenario", "s.yaml", "--provider", "openai"}, want: providerOpenAI},
		{name: "STOKE_PROVIDER", env: map[string]string{"STOKE_PROVIDER": "anthropic"}, want: providerAnthropic},
		{name: "only ANTHROPIC_API_KEY", env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant"}, want: providerAnthropic},
		{name: "only ANTHROPIC_BASE_URL", env: map[string]string{"ANTHROPIC_BASE_URL": "http://proxy"}, want: providerAnthropic},
		{name: "an empty ANTHROPIC_API_KEY", env: map[string]string{"ANTHROPIC_API_KEY": ""}, want: providerOpenAI},
		{name: "both keys", env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "OPENAI_API_KEY": "sk-oai"}, want: providerOpenAI},
		{name: "Anthropic's key and OpenAI's base URL", env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "OPENAI_BASE_URL": "http://local/v1"}, want: providerOpenAI},
		{name: "only OPENAI_API_KEY", env: map[string]string{"OPENAI_API_KEY": "sk-oai"}, want: providerOpenAI},
		{name: "the flag wins", env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant"}, args: []string{"--provider", "openai"}, want: providerOpenAI},
		{name: "STOKE_PROVIDER wins", env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "STOKE_PROVIDER": "openai"}, want: providerOpenAI},
		{name: "a settings file wins", env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant"}, settings: "provider: openai\n", want: providerOpenAI},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			p.env = tt.env
			if p.env == nil {
				p.env = map[string]string{}
			}
			if tt.settings != "" {
				p.homeSettings(t, tt.settings)
			}
			cfg, err := p.config(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Provider != tt.want {
				t.Errorf("provider = %q, want %q", cfg.Provider, tt.want)
			}
		})
	}
}

// Only Anthropic's variables: the run uses them, with no --provider.
func TestInferredAnthropicRuns(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["ANTHROPIC_API_KEY"] = "sk-ant"
	got := p.run(t, "-p", "hi")
	if got.code != 0 || got.opts == nil {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	if got.opts.ModelName != defaultAnthropicModel {
		t.Errorf("model = %q, want the anthropic default", got.opts.ModelName)
	}
}

func TestProviderConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		args []string
		says []string
		not  []string
	}{
		{
			name: "openai without its key, Anthropic's set",
			env:  map[string]string{"ANTHROPIC_API_KEY": "sk-ant-secret"},
			args: []string{"--provider", "openai"},
			says: []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY is set: pass --provider anthropic"},
			not:  []string{"sk-ant-secret"},
		},
		{
			name: "anthropic without its key, OpenAI's set",
			env:  map[string]string{"OPENAI_API_KEY": "sk-oai-secret"},
			args: []string{"--provider", "anthropic"},
			says: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY is set: pass --provider openai"},
			not:  []string{"sk-oai-secret"},
		},
		{
			name: "no key at all",
			says: []string{"OPENAI_API_KEY"},
			not:  []string{"is set"},
		},
		{
			name: "a request timeout of zero",
			env:  map[string]string{"OPENAI_API_KEY": "sk-oai", "STOKE_REQUEST_TIMEOUT": "0s"},
			says: []string{"invalid --request-timeout 0s (from STOKE_REQUEST_TIMEOUT)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			if tt.env != nil {
				p.env = tt.env
			}
			got := p.run(t, append([]string{"-p", "hi"}, tt.args...)...)
			if got.code != 2 {
				t.Errorf("exit code %d, want 2", got.code)
			}
			requireOneErrorLine(t, got.stderr)
			for _, s := range tt.says {
				if !strings.Contains(got.stderr, s) {
					t.Errorf("stderr %q does not say %q", got.stderr, s)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(got.stderr, s) {
					t.Errorf("stderr %q says %q", got.stderr, s)
				}
			}
		})
	}
}

func TestKeyName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		source, want string
	}{
		{"OPENAI_API_KEY", "OPENAI_API_KEY"},
		{"STOKE_API_KEY", "STOKE_API_KEY"},
		{"/home/u/.stoke/settings.yaml", "api-key in /home/u/.stoke/settings.yaml"},
		{"", ""},
	}
	for _, tt := range tests {
		cfg := &Config{sources: map[string]string{}}
		if tt.source != "" {
			cfg.sources["api-key"] = tt.source
		}
		if got := keyName(cfg); got != tt.want {
			t.Errorf("keyName(from %q) = %q, want %q", tt.source, got, tt.want)
		}
	}
}
