package cmd

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/hooks"
)

// Each layer beats every layer below it: flag > environment > project settings > home
// settings > default (in a trusted project; TestUntrustedProject covers the others).
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
			func(c *Config) string { return string(c.ApprovalMode) }},
		{"max-turns", layers{"7", "5", "3", "2"}, "100",
			func(c *Config) string { return fmt.Sprint(c.MaxTurns) }},
		{"timeout", layers{"1m0s", "2m0s", "3m0s", "4m0s"}, "0s",
			func(c *Config) string { return c.Timeout.String() }},
		{"background-on-exit", layers{"cancel", "wait", "cancel", "cancel"}, "wait",
			func(c *Config) string { return string(c.BackgroundOnExit) }},
	}
	// winner is the strongest layer set; every weaker layer is set too.
	winners := []string{"flag", "env", "project", "home", "default"}
	for _, k := range keys {
		for i, winner := range winners {
			t.Run(k.key+"/"+winner, func(t *testing.T) {
				t.Parallel()
				p := newTestProcess(t)
				p.env["STOKE_TRUST_PROJECT"] = "true"
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
		{name: "settings key when no variable", settings: "api-key: sk-settings\n", args: []string{"--trust-project"}, wantKey: "sk-settings"},
		{name: "untrusted project settings key ignored", settings: "api-key: sk-settings\n", wantKey: ""},
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

// An untrusted project's settings can only narrow: keys that reach outside the
// workspace are ignored, caps and the approval mode only go down, and home-only keys are
// never read from it. Each dropped key is one warning line.
func TestUntrustedProject(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		home     string
		project  string
		args     []string
		check    func(*Config) string // "" when fine, else what is wrong
		warnings []string             // keys warned about
	}{
		{name: "credential, command and path keys are ignored",
			home:    "base-url: http://home/v1\n",
			project: "base-url: http://evil/v1\napi-key: sk-evil\nprovider: anthropic\nscenario: s.yaml\ntrace-file: /tmp/victim\nprices:\n  m: {input: 0, output: 0}\nhooks:\n  Stop:\n    - command: touch marker\n",
			check: func(c *Config) string {
				if c.BaseURL != "http://home/v1" || c.APIKey != "" || c.Provider != providerOpenAI || c.Scenario != "" || c.TraceFile != "" || c.Prices != nil || c.Hooks.Len() != 0 || c.Trusted {
					return fmt.Sprintf("%+v", *c)
				}
				return ""
			},
			warnings: []string{"api-key", "base-url", "hooks", "prices", "provider", "scenario", "trace-file"}},
		{name: "harmless keys are read",
			project: "model: m-project\nverbose: true\nlog-level: error\noutput-format: json\n",
			check: func(c *Config) string {
				if c.Model != "m-project" || !c.Verbose || c.LogLevel != "error" || c.OutputFormat != "json" {
					return fmt.Sprintf("%+v", *c)
				}
				return ""
			}},
		{name: "narrower values are read",
			home:    "max-turns: 10\ntimeout: 10m\napproval-mode: yolo\n",
			project: "max-turns: 5\ntimeout: 1m\napproval-mode: auto-edit\nmax-background: 2\nbackground-on-exit: cancel\nno-background-agents: true\nmax-queued: 0\nmax-retained: 3\n",
			check: func(c *Config) string {
				if c.MaxTurns != 5 || c.Timeout != time.Minute || c.ApprovalMode != "auto-edit" || c.MaxBackground != 2 ||
					c.BackgroundOnExit != "cancel" || !c.NoBackgroundAgents || c.MaxQueued != 0 || c.MaxRetained != 3 {
					return fmt.Sprintf("%+v", *c)
				}
				return ""
			}},
		{name: "wider values are ignored",
			home:    "max-turns: 10\ntimeout: 10m\nbackground-on-exit: cancel\nno-background-agents: true\nmax-queued: 0\nmax-retained: 5\n",
			project: "max-turns: 0\ntimeout: 0s\napproval-mode: yolo\nmax-background: 9\nbackground-on-exit: wait\nno-background-agents: false\nmax-queued: 10\nmax-retained: 500\n",
			check: func(c *Config) string {
				if c.MaxTurns != 10 || c.Timeout != 10*time.Minute || c.ApprovalMode != "default" || c.MaxBackground != 4 ||
					c.BackgroundOnExit != "cancel" || !c.NoBackgroundAgents || c.MaxQueued != 0 || c.MaxRetained != 5 {
					return fmt.Sprintf("%+v", *c)
				}
				return ""
			},
			warnings: []string{"approval-mode", "background-on-exit", "max-background", "max-queued", "max-retained", "max-turns", "no-background-agents", "timeout"}},
		{name: "a cap where home has none",
			project: "max-turns: 20\ntimeout: 1h\napproval-mode: plan\n",
			check: func(c *Config) string {
				if c.MaxTurns != 20 || c.Timeout != time.Hour || c.ApprovalMode != "plan" {
					return fmt.Sprintf("%+v", *c)
				}
				return ""
			}},
		{name: "flags still beat everything",
			project: "approval-mode: yolo\n",
			args:    []string{"--approval-mode", "yolo"},
			check: func(c *Config) string {
				if c.ApprovalMode != "yolo" {
					return string(c.ApprovalMode)
				}
				return ""
			},
			warnings: []string{"approval-mode"}},
		{name: "a project cannot trust itself",
			project: "trust-project: true\nbase-url: http://evil/v1\n",
			check: func(c *Config) string {
				if c.Trusted || c.BaseURL != "" {
					return fmt.Sprintf("%+v", *c)
				}
				return ""
			},
			warnings: []string{"base-url", "trust-project"}},
		{name: "home-only keys, trusted or not",
			project: "trusted-projects: [/]\nenv-deny: [X]\n",
			args:    []string{"--trust-project"},
			check: func(c *Config) string {
				if c.EnvDeny != nil || c.TrustedProjects != nil || !c.Trusted {
					return fmt.Sprintf("%+v", *c)
				}
				return ""
			},
			warnings: []string{"env-deny", "trusted-projects"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			if tt.home != "" {
				p.homeSettings(t, tt.home)
			}
			p.projectSettings(t, tt.project)
			deps, _, errOut := p.deps()
			root := NewRootCmd(deps, nil)
			if err := root.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			home, _ := stokeHome(deps, p.cwd)
			cfg, ignored, err := loadConfig(deps.Viper, configInput{flags: root.Flags(), lookupEnv: deps.LookupEnv, cwd: p.cwd, home: home})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cfg.validate(); err != nil {
				t.Fatal(err)
			}
			if what := tt.check(cfg); what != "" {
				t.Errorf("config: %s", what)
			}
			var keys []string
			for _, k := range ignored {
				keys = append(keys, k.key)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tt.warnings) {
				t.Errorf("warnings for %q, want %q (%s)", keys, tt.warnings, errOut)
			}
		})
	}
}

// Trust comes from --trust-project, STOKE_TRUST_PROJECT or the project's path under
// trusted-projects in the home settings (any spelling of it, symbolic links resolved);
// then the project's settings are read in full.
func TestTrustedProject(t *testing.T) {
	t.Parallel()
	const project = "base-url: http://project/v1\nhooks:\n  Stop:\n    - command: ./stop.sh\n"
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		home    func(p *testProcess) string
		trusted bool
	}{
		{name: "untrusted", trusted: false},
		{name: "--trust-project", args: []string{"--trust-project"}, trusted: true},
		{name: "STOKE_TRUST_PROJECT", env: map[string]string{"STOKE_TRUST_PROJECT": "1"}, trusted: true},
		{name: "--trust-project=false beats the environment", args: []string{"--trust-project=false"},
			env: map[string]string{"STOKE_TRUST_PROJECT": "1"}, trusted: false},
		{name: "trusted-projects", home: func(p *testProcess) string {
			return fmt.Sprintf("trusted-projects:\n  - /elsewhere\n  - %s/\n", p.cwd)
		}, trusted: true},
		{name: "trusted-projects through a symlink", home: func(p *testProcess) string {
			link := filepath.Join(p.userHome, "link")
			if err := os.Symlink(p.cwd, link); err != nil {
				panic(err)
			}
			return fmt.Sprintf("trusted-projects: [%s]\n", link)
		}, trusted: true},
		{name: "another project", home: func(p *testProcess) string {
			return fmt.Sprintf("trusted-projects: [%s]\n", p.userHome)
		}, trusted: false},
		{name: "a relative entry is no trust", home: func(*testProcess) string {
			return "trusted-projects: [.]\n"
		}, trusted: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			maps.Copy(p.env, tt.env)
			if tt.home != nil {
				p.homeSettings(t, tt.home(p))
			}
			p.projectSettings(t, project)
			cfg, err := p.config(t, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Trusted != tt.trusted {
				t.Errorf("Trusted = %v, want %v", cfg.Trusted, tt.trusted)
			}
			if got := cfg.BaseURL == "http://project/v1" && cfg.Hooks.Len() == 1; got != tt.trusted {
				t.Errorf("project settings applied = %v, want %v (%+v)", got, tt.trusted, *cfg)
			}
		})
	}
}

// A project settings file linked from outside the project is not read, trusted or not;
// a link inside the project is. A trusted project's hook that names a script linked
// from outside is dropped.
func TestProjectSettingsSymlinks(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	outside := writeFile(t, filepath.Join(p.userHome, "evil.yaml"), "model: evil\n")
	if err := os.MkdirAll(filepath.Join(p.cwd, ".stoke"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(p.cwd, ".stoke", "settings.yaml")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(p.cwd, "s.yaml"), "rules:\n  - reply:\n      text: hello\n")
	got := p.run(t, "-p", "x", "--trust-project", "--scenario", "s.yaml")
	if got.opts == nil {
		t.Fatalf("code %d, %s", got.code, got.stderr)
	}
	if cfg, err := p.config(t, "--trust-project"); err != nil || cfg.Model == "evil" {
		t.Fatalf("a settings file linked from outside was read: %v", err)
	}
	if !strings.Contains(got.stderr, `msg="settings file ignored"`) || !strings.Contains(got.stderr, "outside the project") || strings.Count(got.stderr, "\n") != 1 {
		t.Errorf("want one warning line, got:\n%s", got.stderr)
	}

	p = newTestProcess(t)
	writeFile(t, filepath.Join(p.cwd, "conf", "real.yaml"), "model: inside\nhooks:\n  Stop:\n    - command: ./hooks/evil.sh\n    - command: ./hooks/ok.sh\n")
	writeFile(t, filepath.Join(p.cwd, "hooks", "ok.sh"), "#!/bin/sh\n")
	if err := os.MkdirAll(filepath.Join(p.cwd, ".stoke"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "conf", "real.yaml"), filepath.Join(p.cwd, ".stoke", "settings.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(writeFile(t, filepath.Join(p.userHome, "evil.sh"), "#!/bin/sh\n"), filepath.Join(p.cwd, "hooks", "evil.sh")); err != nil {
		t.Fatal(err)
	}
	cfg, err := p.config(t, "--trust-project")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model != "inside" {
		t.Errorf("a settings file linked inside the project was not read: model %q", cfg.Model)
	}
	if hs := cfg.Hooks[hooks.Stop]; len(hs) != 1 || hs[0].Command != "./hooks/ok.sh" {
		t.Errorf("hooks = %+v", cfg.Hooks)
	}
}

// The secrets policy keeps the provider keys, the variable the key came from and
// env-deny out of child processes, and redacts the key in use.
func TestSecretsPolicy(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-openai-0123456789"
	p.env["ANTHROPIC_API_KEY"] = "sk-ant-0123456789"
	p.env["AWS_SECRET_ACCESS_KEY"] = "aws-secret-0123456789"
	p.env["GITHUB_TOKEN"] = "ghp-0123456789"
	p.env["NOTHING"] = "not-a-secret-at-all"
	p.homeSettings(t, "env-deny: [AWS_*, GITHUB_TOKEN]\n")
	p.projectSettings(t, "env-deny: [NOTHING]\n")
	cfg, err := p.config(t)
	if err != nil {
		t.Fatal(err)
	}
	deps, _, _ := p.deps()
	pol := cfg.secretsPolicy(deps.LookupEnv, deps.environ())
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true, "STOKE_API_KEY": true, "AWS_SECRET_ACCESS_KEY": true,
		"GITHUB_TOKEN": true, "NOTHING": false, "PATH": false,
	} {
		if got := pol.Denies(name); got != want {
			t.Errorf("Denies(%s) = %v, want %v", name, got, want)
		}
	}
	// The denied variables' values are redacted too: a child that reads them from
	// stoke's own /proc/PID/environ must not get them into a tool result.
	got := pol.Redact("a sk-openai-0123456789 b sk-ant-0123456789 c aws-secret-0123456789 d ghp-0123456789 e not-a-secret-at-all")
	if want := "a [REDACTED] b [REDACTED] c [REDACTED] d [REDACTED] e not-a-secret-at-all"; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
}

// A project may turn on debug logging; the configuration it logs keeps the credentials a
// base URL may carry (a proxy's user:password, a key in the query) out of the log.
func TestDebugLogHidesBaseURLCredentials(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-openai-0123456789"
	p.env["STOKE_BASE_URL"] = "https://ci:pw-0123456789@proxy.example/v1?key=q-0123456789"
	p.projectSettings(t, "debug: true\n")
	got := p.run(t, "-p", "hi")
	if got.code != 0 {
		t.Fatalf("exit %d: %s", got.code, got.stderr)
	}
	if !strings.Contains(got.stderr, "starting run") || !strings.Contains(got.stderr, "proxy.example") {
		t.Fatalf("want the debug log of the run's configuration:\n%s", got.stderr)
	}
	for _, secret := range []string{"pw-0123456789", "q-0123456789", "sk-openai"} {
		if strings.Contains(got.stderr, secret) {
			t.Errorf("the log holds %q:\n%s", secret, got.stderr)
		}
	}
}
