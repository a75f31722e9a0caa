package cmd

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// Each layer beats every layer below it: flag > environment > project settings > home
// settings > default.
func TestConfigPrecedence(t *testing.T) {
	t.Parallel()
	type layers struct{ flag, env, project, home string }
	keys := []struct {
		key  string
		vals layers // a different value per layer
		def  string
		get  func(*Config) string
	}{
		{"model", layers{"m-flag", "m-env", "m-project", "m-home"}, "",
			func(c *Config) string { return c.Model }},
		{"base-url", layers{"http://flag/v1", "http://env/v1", "http://project/v1", "http://home/v1"}, "",
			func(c *Config) string { return c.BaseURL }},
		{"approval-mode", layers{"plan", "auto-edit", "yolo", "plan"}, "default",
			func(c *Config) string { return c.ApprovalMode }},
		{"max-turns", layers{"7", "5", "3", "2"}, "0",
			func(c *Config) string { return fmt.Sprint(c.MaxTurns) }},
		{"timeout", layers{"1m0s", "2m0s", "3m0s", "4m0s"}, "0s",
			func(c *Config) string { return c.Timeout.String() }},
		{"background-on-exit", layers{"cancel", "wait", "cancel", "cancel"}, "wait",
			func(c *Config) string { return c.BackgroundOnExit }},
	}
	// winner is the strongest layer set; every weaker layer is set too.
	winners := []string{"flag", "env", "project", "home", "default"}
	for _, k := range keys {
		for i, winner := range winners {
			t.Run(k.key+"/"+winner, func(t *testing.T) {
				t.Parallel()
				p := newTestProcess(t)
				var args []string
				want := k.def
				set := func(layer string) bool { return i <= slices.Index(winners, layer) }
				if set("home") {
					p.homeSettings(t, fmt.Sprintf("%s: %q\n", k.key, k.vals.home))
					want = k.vals.home
				}
				if set("project") {
					p.projectSettings(t, fmt.Sprintf("%s: %q\n", k.key, k.vals.project))
					want = k.vals.project
				}
				if set("env") {
					p.env[envName(k.key)] = k.vals.env
					want = k.vals.env
				}
				if set("flag") {
					args = append(args, "--"+k.key+"="+k.vals.flag)
					want = k.vals.flag
				}
				cfg, err := p.config(t, args...)
				if err != nil {
					t.Fatal(err)
				}
				if got := k.get(cfg); got != want {
					t.Errorf("%s = %q, want %q (the %s value)", k.key, got, want, winner)
				}
			})
		}
	}
}

// Provider variables count for their own provider only, rank with the environment, and
// lose to the STOKE_ variable of the same key.
func TestProviderEnvironment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      map[string]string
		settings string // project settings
		args     []string
		wantKey  string
		wantURL  string
		wantName string
	}{
		{name: "STOKE_API_KEY beats OPENAI_API_KEY",
			env:     map[string]string{"STOKE_API_KEY": "sk-stoke", "OPENAI_API_KEY": "sk-openai"},
			wantKey: "sk-stoke"},
		{name: "OPENAI_API_KEY beats settings",
			env:      map[string]string{"OPENAI_API_KEY": "sk-openai"},
			settings: "api-key: sk-settings\n",
			wantKey:  "sk-openai"},
		{name: "settings key when no variable", settings: "api-key: sk-settings\n", wantKey: "sk-settings"},
		{name: "ANTHROPIC_API_KEY ignored by openai",
			env:     map[string]string{"ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": "http://ant/v1"},
			args:    []string{"--provider", "openai"},
			wantKey: "", wantURL: ""},
		{name: "OPENAI_API_KEY ignored by anthropic",
			env:     map[string]string{"OPENAI_API_KEY": "sk-openai", "ANTHROPIC_API_KEY": "sk-ant"},
			args:    []string{"--provider", "anthropic"},
			wantKey: "sk-ant"},
		{name: "OPENAI variables ignored by scripted",
			env:  map[string]string{"OPENAI_API_KEY": "sk-openai", "OPENAI_BASE_URL": "http://openai/v1", "OPENAI_MODEL": "o-model"},
			args: []string{"--scenario", "s.yaml"}},
		{name: "STOKE_BASE_URL beats OPENAI_BASE_URL",
			env:     map[string]string{"STOKE_BASE_URL": "http://stoke/v1", "OPENAI_BASE_URL": "http://openai/v1"},
			wantURL: "http://stoke/v1"},
		{name: "OPENAI_BASE_URL beats settings",
			env:      map[string]string{"OPENAI_BASE_URL": "http://openai/v1"},
			settings: "base-url: http://settings/v1\n",
			wantURL:  "http://openai/v1"},
		{name: "flag beats OPENAI_BASE_URL",
			env:     map[string]string{"OPENAI_BASE_URL": "http://openai/v1"},
			args:    []string{"--base-url", "http://flag/v1"},
			wantURL: "http://flag/v1"},
		{name: "OPENAI_MODEL", env: map[string]string{"OPENAI_MODEL": "o-model"}, wantName: "o-model"},
		{name: "STOKE_MODEL beats OPENAI_MODEL",
			env:      map[string]string{"STOKE_MODEL": "s-model", "OPENAI_MODEL": "o-model"},
			wantName: "s-model"},
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
				p.projectSettings(t, tt.settings)
			}
			cfg, err := p.config(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.APIKey != tt.wantKey || cfg.BaseURL != tt.wantURL || cfg.Model != tt.wantName {
				t.Errorf("api-key %q, base-url %q, model %q; want %q, %q, %q",
					cfg.APIKey, cfg.BaseURL, cfg.Model, tt.wantKey, tt.wantURL, tt.wantName)
			}
		})
	}
}

func TestProviderDefault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, providerOpenAI},
		{[]string{"--scenario", "s.yaml"}, nil, providerScripted},
		{nil, map[string]string{"STOKE_SCENARIO": "s.yaml"}, providerScripted},
		{[]string{"--scenario", "s.yaml", "--provider", "openai"}, nil, providerOpenAI},
		{nil, map[string]string{"STOKE_PROVIDER": "anthropic"}, providerAnthropic},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.args, tt.env), func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			for k, v := range tt.env {
				p.env[k] = v
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

func TestBareSkipsProjectSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"project settings apply", nil, nil, "project-model"},
		{"--bare", []string{"--bare"}, nil, "home-model"},
		{"STOKE_BARE", nil, map[string]string{"STOKE_BARE": "true"}, "home-model"},
		{"--bare=false beats STOKE_BARE", []string{"--bare=false"}, map[string]string{"STOKE_BARE": "1"}, "project-model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			for k, v := range tt.env {
				p.env[k] = v
			}
			p.homeSettings(t, "model: home-model\n")
			p.projectSettings(t, "model: project-model\n")
			cfg, err := p.config(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Model != tt.want {
				t.Errorf("model = %q, want %q", cfg.Model, tt.want)
			}
		})
	}
}

// A malformed project settings file does not matter under --bare: it is not read.
func TestBareIgnoresMalformedProjectSettings(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.projectSettings(t, "model: [\n")
	if _, err := p.config(t, "--bare"); err != nil {
		t.Fatal(err)
	}
}

func TestSettingsWarnings(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-test"
	path := p.projectSettings(t, "model: m1\nmodle: m2\nprompt: from settings\n")
	got := p.run(t, "-p", "from flag")
	if got.code != 0 {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	if got.opts.ModelName != "m1" || got.opts.Prompt != "from flag" {
		t.Errorf("model %q, prompt %q; want m1, \"from flag\"", got.opts.ModelName, got.opts.Prompt)
	}
	lines := strings.Split(strings.TrimSuffix(got.stderr, "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want two warnings on stderr, got:\n%s", got.stderr)
	}
	for _, want := range []string{"key=modle reason=\"unknown key\"", "key=prompt reason=\"set it with --prompt or STOKE_PROMPT\""} {
		if !strings.Contains(got.stderr, want) {
			t.Errorf("stderr lacks %s:\n%s", want, got.stderr)
		}
	}
	for _, l := range lines {
		if !strings.Contains(l, "level=WARN") || !strings.Contains(l, "file="+path) {
			t.Errorf("not a WARN record naming %s: %q", path, l)
		}
	}
}

// STOKE_HOME, when set, is where the home settings are read from; a settings file in the
// real home is then not read.
func TestStokeHomeSettings(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.homeSettings(t, "model: default-home\n")
	p.env["STOKE_HOME"] = filepath.Join(p.cwd, "state")
	p.homeSettings(t, "model: stoke-home\ntimeout: 90s\nno-background-agents: true\n")
	cfg, err := p.config(t)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "stoke-home" || cfg.Timeout != 90*time.Second || !cfg.NoBackgroundAgents {
		t.Errorf("config = %+v", cfg)
	}
}

func TestEnvironmentValues(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	for k, v := range map[string]string{
		"STOKE_OUTPUT_FORMAT":        "stream-json",
		"STOKE_TIMEOUT":              "90s",
		"STOKE_MAX_BACKGROUND":       "9",
		"STOKE_NO_BACKGROUND_AGENTS": "true",
		"STOKE_SESSION_ID":           "7B4A4E70-5576-4AC3-B794-8F816B5C26E8",
		"STOKE_VERBOSE":              "1",
	} {
		p.env[k] = v
	}
	cfg, err := p.config(t)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OutputFormat != "stream-json" || cfg.Timeout != 90*time.Second || cfg.MaxBackground != 9 ||
		!cfg.NoBackgroundAgents || !cfg.Verbose || cfg.SessionID != "7b4a4e70-5576-4ac3-b794-8f816b5c26e8" {
		t.Errorf("config = %+v", cfg)
	}
}
