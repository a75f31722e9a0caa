package cmd

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
)

// The steps of loadConfig, each on its own: what it reads, what it gives the layers above.

// stepInput is a configInput over fresh directories, with the flags of the run parsed
// from args and the environment env.
func stepInput(t *testing.T, args []string, env map[string]string) configInput {
	t.Helper()
	deps, _, _ := newTestProcess(t).deps()
	flags := NewRootCmd(deps, nil).Flags()
	if err := flags.Parse(args); err != nil {
		t.Fatal(err)
	}
	return configInput{
		flags:     flags,
		lookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		cwd:       t.TempDir(),
		home:      t.TempDir(),
	}
}

func TestFileLayer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		home, project string // settings files ("": none)
		args          []string
		env           map[string]string
		trustedList   bool           // the home settings list the project under trusted-projects
		noProject     bool           // no project layer
		wantHome      map[string]any // nil: not checked
		wantProject   map[string]any // nil: not checked
		wantTrusted   bool
		wantIgnored   []string // file base name and key, "project:base-url"
		wantAliases   map[string]string
		wantPrices    []string
		wantHooks     []string
		wantErr       string
	}{
		{name: "no files", wantHome: map[string]any{}, wantProject: map[string]any{}},
		{name: "an untrusted project only narrows",
			home:        "model: m-home\napproval-mode: auto-edit\nbase-url: http://home/v1\n",
			project:     "model: m-project\napproval-mode: plan\nbase-url: http://evil/v1\nmax-background: 9\n",
			wantHome:    map[string]any{"model": "m-home", "approval-mode": "auto-edit", "base-url": "http://home/v1"},
			wantProject: map[string]any{"model": "m-project", "approval-mode": "plan"},
			wantIgnored: []string{"project:base-url", "project:max-background"}},
		{name: "--trust-project takes the project in full",
			project:     "base-url: http://project/v1\nmax-background: 9\n",
			args:        []string{"--trust-project"},
			wantHome:    map[string]any{},
			wantProject: map[string]any{"base-url": "http://project/v1", "max-background": 9},
			wantTrusted: true},
		{name: "STOKE_TRUST_PROJECT",
			project:     "scenario: s.yaml\n",
			env:         map[string]string{"STOKE_TRUST_PROJECT": "true"},
			wantHome:    map[string]any{},
			wantProject: map[string]any{"scenario": "s.yaml"},
			wantTrusted: true},
		{name: "trusted-projects",
			project:     "scenario: s.yaml\n",
			trustedList: true,
			wantProject: map[string]any{"scenario": "s.yaml"},
			wantTrusted: true},
		{name: "--bare reads no project, and trusts none",
			home:        "model: m-home\n",
			project:     "model: [\n", // malformed: never read
			args:        []string{"--bare", "--trust-project"},
			noProject:   true,
			wantHome:    map[string]any{"model": "m-home"},
			wantTrusted: false},
		{name: "home-only and per-run keys",
			home:        "prompt: hi\nenv-deny: [AWS_*]\n",
			project:     "env-deny: [X]\nresume: abc\n",
			args:        []string{"--trust-project"},
			wantHome:    map[string]any{"env-deny": []any{"AWS_*"}},
			wantProject: map[string]any{},
			wantTrusted: true,
			wantIgnored: []string{"home:prompt", "project:resume", "project:env-deny"}},
		{name: "structured values merge entry by entry, the project's last",
			home:        "model-aliases: {fast: m-small, best: m-big}\nprices:\n  m1: {input: 1, output: 2}\nhooks:\n  Stop:\n    - command: echo home\n",
			project:     "model-aliases: {fast: m-tiny}\nprices:\n  m2: {input: 3, output: 4}\nhooks:\n  Stop:\n    - command: echo project\n  SubagentStop:\n    - command: echo sub\n",
			args:        []string{"--trust-project"},
			wantTrusted: true,
			wantAliases: map[string]string{"fast": "m-tiny", "best": "m-big"},
			wantPrices:  []string{"m1", "m2"},
			wantHooks:   []string{"Stop: echo project", "SubagentStop: echo sub"}},
		{name: "a malformed home file", home: "model: [\n", wantErr: "malformed settings file"},
		{name: "a value of the wrong type", home: "max-turns: many\n", wantErr: "max-turns: want a whole number"},
		{name: "STOKE_BARE that is not a boolean", env: map[string]string{"STOKE_BARE": "maybe"}, wantErr: `STOKE_BARE="maybe": want true or false`},
		{name: "a bad model alias", home: "model-aliases: {fast: ''}\n", wantErr: "model-aliases"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := stepInput(t, tt.args, tt.env)
			home := tt.home
			if tt.trustedList {
				home += fmt.Sprintf("trusted-projects: [%s]\n", in.cwd)
			}
			if home != "" {
				writeFile(t, filepath.Join(in.home, settingsFile), home)
			}
			if tt.project != "" {
				writeFile(t, filepath.Join(in.cwd, ".stoke", settingsFile), tt.project)
			}
			files, err := fileLayer(in, settings())
			if failed(t, err, tt.wantErr) {
				return
			}
			if files.trusted != tt.wantTrusted {
				t.Errorf("trusted = %v, want %v", files.trusted, tt.wantTrusted)
			}
			if want := 2 - btoi(tt.noProject); len(files.layers) != want {
				t.Fatalf("%d layers, want %d", len(files.layers), want)
			}
			if tt.wantHome != nil {
				if d := cmp.Diff(tt.wantHome, keysOf(files.layers[0].m)); d != "" || files.layers[0].project {
					t.Errorf("home layer (-want +got):\n%s", d)
				}
			}
			if tt.wantProject != nil {
				p := files.layers[1]
				if d := cmp.Diff(tt.wantProject, keysOf(p.m)); d != "" || !p.project {
					t.Errorf("project layer (-want +got):\n%s", d)
				}
			}
			var ignored []string
			for _, k := range files.ignored {
				where := "home"
				if strings.HasPrefix(k.file, in.cwd) {
					where = "project"
				}
				ignored = append(ignored, where+":"+k.key)
			}
			if !slices.Equal(ignored, tt.wantIgnored) {
				t.Errorf("ignored = %q, want %q", ignored, tt.wantIgnored)
			}
			if !maps.Equal(files.modelAliases, tt.wantAliases) {
				t.Errorf("model aliases = %v, want %v", files.modelAliases, tt.wantAliases)
			}
			if got := slices.Sorted(maps.Keys(files.prices)); !slices.Equal(got, tt.wantPrices) {
				t.Errorf("prices = %v, want %v", got, tt.wantPrices)
			}
			var hooks []string
			for ev, hs := range files.hooks {
				for _, h := range hs {
					hooks = append(hooks, fmt.Sprintf("%s: %s", ev, h.Command))
				}
			}
			slices.Sort(hooks)
			if !slices.Equal(hooks, tt.wantHooks) {
				t.Errorf("hooks = %q, want %q", hooks, tt.wantHooks)
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// keysOf is m, empty rather than nil.
func keysOf(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// A settings file's maps and lists are not layered by viper: settingsFiles.merge and
// homeLists decode them.
func TestSettingsLayerFlat(t *testing.T) {
	t.Parallel()
	l := settingsLayer{m: map[string]any{
		"model": "m", "max-turns": 3, "hooks": map[string]any{}, "prices": map[string]any{}, "env-deny": []any{"X"},
	}}
	if d := cmp.Diff(map[string]any{"model": "m", "max-turns": 3}, l.flat(settings())); d != "" {
		t.Errorf("flat (-want +got):\n%s", d)
	}
}

func TestEnvLayer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		env         map[string]string
		wantValues  map[string]any
		wantSources map[string]string
		wantErr     string
	}{
		{name: "none", wantValues: map[string]any{}, wantSources: map[string]string{}},
		{name: "every kind of single value",
			env:        map[string]string{"STOKE_MODEL": "m", "STOKE_MAX_TURNS": "7", "STOKE_TIMEOUT": "90s", "STOKE_VERBOSE": "1", "STOKE_API_KEY": "sk-x"},
			wantValues: map[string]any{"model": "m", "max-turns": "7", "timeout": "90s", "verbose": "1", "api-key": "sk-x"},
			wantSources: map[string]string{"model": "STOKE_MODEL", "max-turns": "STOKE_MAX_TURNS", "timeout": "STOKE_TIMEOUT",
				"verbose": "STOKE_VERBOSE", "api-key": "STOKE_API_KEY"}},
		{name: "maps and lists come from files only",
			env:        map[string]string{"STOKE_HOOKS": "x", "STOKE_PRICES": "x", "STOKE_ENV_DENY": "X", "STOKE_TRUSTED_PROJECTS": "/"},
			wantValues: map[string]any{}, wantSources: map[string]string{}},
		{name: "a per-run key", env: map[string]string{"STOKE_RESUME": "abc"},
			wantValues: map[string]any{"resume": "abc"}, wantSources: map[string]string{"resume": "STOKE_RESUME"}},
		{name: "not a number", env: map[string]string{"STOKE_MAX_TURNS": "many"}, wantErr: `STOKE_MAX_TURNS="many": want a whole number`},
		{name: "not a duration", env: map[string]string{"STOKE_TIMEOUT": "90"}, wantErr: `STOKE_TIMEOUT="90": want a duration`},
		{name: "not a boolean", env: map[string]string{"STOKE_VERBOSE": "loud"}, wantErr: `STOKE_VERBOSE="loud": want true or false`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := envLayer(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }, settings())
			if failed(t, err, tt.wantErr) {
				return
			}
			checkLayer(t, got, layer{values: tt.wantValues, sources: tt.wantSources})
		})
	}
}

// failed checks err against wantErr (a part of the message, "" for none) and reports
// whether the step failed, as it should have.
func failed(t *testing.T, err error, wantErr string) bool {
	t.Helper()
	switch {
	case wantErr == "" && err != nil:
		t.Fatal(err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Fatalf("err = %v, want one containing %q", err, wantErr)
	}
	return err != nil
}

// checkLayer compares a step's layer with want.
func checkLayer(t *testing.T, got, want layer) {
	t.Helper()
	if d := cmp.Diff(want.values, got.values); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want.sources, got.sources); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
}

func TestFlagLayer(t *testing.T) {
	t.Parallel()
	below := map[string]any{"model": "m-file", "max-turns": 9, "approval-mode": "auto-edit"} // the layers below
	tests := []struct {
		name        string
		define      []string // the flags the command has (nil: the run's)
		args        []string
		wantSources map[string]string
		want        map[string]any // viper's values afterwards
	}{
		{name: "flags given win and are sources", args: []string{"--model", "m", "--max-turns=3"},
			wantSources: map[string]string{"model": "--model", "max-turns": "--max-turns"},
			want:        map[string]any{"model": "m", "max-turns": 3, "approval-mode": "auto-edit"}},
		{name: "a flag not given leaves the value to the layers below",
			wantSources: map[string]string{},
			want:        map[string]any{"model": "m-file", "max-turns": 9, "approval-mode": "auto-edit"}},
		{name: "a command with only some of the run's flags", define: []string{"approval-mode"}, args: []string{"--approval-mode", "plan"},
			wantSources: map[string]string{"approval-mode": "--approval-mode"},
			want:        map[string]any{"approval-mode": "plan", "model": "m-file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var flags *pflag.FlagSet
			if tt.define == nil {
				flags = stepInput(t, tt.args, nil).flags
			} else {
				flags = pflag.NewFlagSet("x", pflag.ContinueOnError)
				for _, name := range tt.define {
					flags.String(name, "", "")
				}
				if err := flags.Parse(tt.args); err != nil {
					t.Fatal(err)
				}
			}
			v := viper.New()
			if err := v.MergeConfigMap(maps.Clone(below)); err != nil {
				t.Fatal(err)
			}
			got, err := flagLayer(v, flags, settings())
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.wantSources, got); d != "" {
				t.Errorf("sources (-want +got):\n%s", d)
			}
			for key, want := range tt.want {
				if fmt.Sprint(v.Get(key)) != fmt.Sprint(want) {
					t.Errorf("%s = %v, want %v", key, v.Get(key), want)
				}
			}
		})
	}
}

func TestProviderEnvLayer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		provider    string
		env         map[string]string
		sources     map[string]string // what the layers below gave
		wantValues  map[string]any
		wantSources map[string]string
	}{
		{name: "openai's variables", provider: providerOpenAI,
			env:         map[string]string{"OPENAI_API_KEY": "sk-o", "OPENAI_BASE_URL": "http://o/v1", "OPENAI_MODEL": "o-m"},
			wantValues:  map[string]any{"api-key": "sk-o", "base-url": "http://o/v1", "model": "o-m"},
			wantSources: map[string]string{"api-key": "OPENAI_API_KEY", "base-url": "OPENAI_BASE_URL", "model": "OPENAI_MODEL"}},
		{name: "anthropic's variables", provider: providerAnthropic,
			env:         map[string]string{"ANTHROPIC_API_KEY": "sk-a", "OPENAI_API_KEY": "sk-o"},
			wantValues:  map[string]any{"api-key": "sk-a"},
			wantSources: map[string]string{"api-key": "ANTHROPIC_API_KEY"}},
		{name: "another provider's variables count for nothing", provider: providerOpenAI,
			env:        map[string]string{"ANTHROPIC_API_KEY": "sk-a", "ANTHROPIC_BASE_URL": "http://a"},
			wantValues: map[string]any{}, wantSources: map[string]string{}},
		{name: "the scripted provider has none", provider: providerScripted,
			env:        map[string]string{"OPENAI_API_KEY": "sk-o"},
			wantValues: map[string]any{}, wantSources: map[string]string{}},
		{name: "a STOKE_ variable of the same key wins, even empty", provider: providerOpenAI,
			env:        map[string]string{"OPENAI_API_KEY": "sk-o", "STOKE_API_KEY": ""},
			wantValues: map[string]any{}, wantSources: map[string]string{}},
		{name: "an empty variable sets nothing", provider: providerOpenAI,
			env:        map[string]string{"OPENAI_MODEL": ""},
			wantValues: map[string]any{}, wantSources: map[string]string{}},
		{name: "a flag keeps its source", provider: providerOpenAI,
			env:         map[string]string{"OPENAI_BASE_URL": "http://o/v1", "OPENAI_MODEL": "o-m"},
			sources:     map[string]string{"base-url": "--base-url", "model": "/home/settings.yaml"},
			wantValues:  map[string]any{"base-url": "http://o/v1", "model": "o-m"},
			wantSources: map[string]string{"model": "OPENAI_MODEL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := providerEnvLayer(tt.provider, func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }, tt.sources)
			checkLayer(t, got, layer{values: tt.wantValues, sources: tt.wantSources})
		})
	}
}

// loadConfig records where each value came from, the strongest layer's.
func TestConfigSources(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.homeSettings(t, "model: m-home\ntimeout: 1m\nmax-turns: 9\n")
	p.env["STOKE_TIMEOUT"] = "2m"
	p.env["OPENAI_BASE_URL"] = "http://o/v1"
	p.env["OPENAI_MODEL"] = "o-m"
	cfg, err := p.config(t, "--max-turns", "3")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"model": "OPENAI_MODEL", "timeout": "STOKE_TIMEOUT", "max-turns": "--max-turns", "base-url": "OPENAI_BASE_URL",
	}
	if d := cmp.Diff(want, cfg.sources); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
	if cfg.from("model") != " (from OPENAI_MODEL)" || cfg.from("max-turns") != "" || !cfg.given("timeout") || cfg.given("verbose") {
		t.Errorf("from/given: %q %q", cfg.from("model"), cfg.from("max-turns"))
	}
}
