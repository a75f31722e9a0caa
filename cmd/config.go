package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/agents/secrets"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless"
	"github.com/stoke-cli/stoke/headless/progress"
)

// settingsFile is the name of a settings file, in $STOKE_HOME and in <project>/.stoke.
const settingsFile = "settings.yaml"

// Config is the configuration of one run after viper has layered, from strongest to
// weakest: flags, environment, the project's .stoke/settings.yaml, $STOKE_HOME/settings.yaml
// and defaults. Keys are the flag names; api-key and log-level have no flag.
type Config struct {
	Provider           string                    `mapstructure:"provider"`
	Model              string                    `mapstructure:"model"`
	BaseURL            string                    `mapstructure:"base-url"`
	APIKey             string                    `mapstructure:"api-key"`
	Scenario           string                    `mapstructure:"scenario"`
	OutputFormat       string                    `mapstructure:"output-format"`
	InputFormat        string                    `mapstructure:"input-format"`
	MaxTurns           int                       `mapstructure:"max-turns"`
	Timeout            time.Duration             `mapstructure:"timeout"`
	RequestTimeout     time.Duration             `mapstructure:"request-timeout"`
	ApprovalMode       tools.Mode                `mapstructure:"approval-mode"`
	BackgroundOnExit   headless.BackgroundPolicy `mapstructure:"background-on-exit"`
	MaxBackground      int                       `mapstructure:"max-background"`
	MaxForeground      int                       `mapstructure:"max-foreground"`
	MaxQueued          int                       `mapstructure:"max-queued"`
	NoBackgroundAgents bool                      `mapstructure:"no-background-agents"`
	Verbose            bool                      `mapstructure:"verbose"`
	Debug              bool                      `mapstructure:"debug"`
	LogLevel           string                    `mapstructure:"log-level"`
	TraceFile          string                    `mapstructure:"trace-file"`
	Progress           string                    `mapstructure:"progress"`

	// Per-run values: flags and STOKE_* environment only; a settings file cannot set them.
	Prompt         string        `mapstructure:"prompt"`
	WaitForSession time.Duration `mapstructure:"wait-for-session"`
	Resume         string        `mapstructure:"resume"`
	Continue       bool          `mapstructure:"continue"`
	SessionID      string        `mapstructure:"session-id"`
	ForkSession    bool          `mapstructure:"fork-session"`
	Bare           bool          `mapstructure:"bare"`
	TrustProject   bool          `mapstructure:"trust-project"`

	// Structured settings-file values, merged entry by entry across files (never through
	// viper, whose key paths would split model names like gpt-4.1 at the dot).
	Prices map[string]price.Price `mapstructure:"-"`
	Hooks  hooks.Config           `mapstructure:"-"`
	// MCPServers is mcp-servers (home settings; a project's only when it is trusted).
	MCPServers map[string]any `mapstructure:"-"`
	// ModelAliases is model-aliases: the model names that agent files' model values
	// (sonnet, opus, haiku, fast, provider:model) stand for (any settings file).
	ModelAliases map[string]string `mapstructure:"-"`
	// Home-settings lists: variables kept out of child processes (path.Match patterns),
	// and the projects whose settings are read in full.
	EnvDeny         []string `mapstructure:"-"`
	TrustedProjects []string `mapstructure:"-"`

	// Trusted: the project's settings and agent files were taken in full, because of
	// --trust-project or trusted-projects. Without it project scope can only narrow.
	Trusted bool `mapstructure:"-"`

	// sources names, per key, where the value in use came from: "--model", "STOKE_MODEL",
	// a settings file path. Keys left at their defaults are absent.
	sources map[string]string
}

// LogValue keeps the API key out of logs.
func (c Config) LogValue() slog.Value {
	key := ""
	if c.APIKey != "" {
		key = "<redacted>"
	}
	return slog.GroupValue(
		slog.String("provider", c.Provider),
		slog.String("model", c.Model),
		slog.String("base-url", c.BaseURL),
		slog.String("api-key", key),
		slog.String("scenario", c.Scenario),
		slog.String("output-format", c.OutputFormat),
		slog.String("input-format", c.InputFormat),
		slog.Int("max-turns", c.MaxTurns),
		slog.Duration("timeout", c.Timeout),
		slog.String("approval-mode", string(c.ApprovalMode)),
		slog.String("background-on-exit", string(c.BackgroundOnExit)),
		slog.Int("max-background", c.MaxBackground),
		slog.Int("max-foreground", c.MaxForeground),
		slog.Int("max-queued", c.MaxQueued),
		slog.Bool("no-background-agents", c.NoBackgroundAgents),
		slog.Bool("bare", c.Bare),
	)
}

// kind is the type of a configuration value.
type kind int

const (
	kindString kind = iota
	kindInt
	kindBool
	kindDuration
	// kindMap is a structured settings-file value (prices, hooks): no flag, no environment
	// variable; entries of a later file replace same-named entries of an earlier one.
	kindMap
	// kindList is a list of strings in the home settings (env-deny, trusted-projects): no
	// flag, no environment variable.
	kindList
)

// scope says which settings files may set a key. The project's file is a checkout's:
// anyone may have written it. Unless the project is trusted (--trust-project, or its
// path under trusted-projects in the home settings), it may only narrow what the run
// does: a key that sends credentials elsewhere, runs commands or writes outside the
// workspace is ignored from it with one warning, and so is a wider value of a cap.
type scope int

const (
	// scopeTrusted (the zero value: a new key starts here): the home settings, and the
	// project's only when it is trusted.
	scopeTrusted scope = iota
	// scopeAny: any settings file; nothing a project sets here widens what the run does.
	scopeAny
	// scopeNarrow: the project's value counts only when it is no wider than the home
	// settings' (or the default); a trusted project's always counts.
	scopeNarrow
	// scopeHome: the home settings only, trusted project or not.
	scopeHome
)

// setting is one configuration key.
type setting struct {
	key    string // the flag name, the settings-file key; STOKE_<KEY> in the environment
	kind   kind
	flag   bool // has a command-line flag
	perRun bool // flags and environment only
	def    any  // default; nil for none
	scope  scope
	// narrower reports whether the project's value v grants no more than base (the home
	// settings' value or the default); for scopeNarrow keys.
	narrower func(v, base any) bool
	// why says what the key does, for the warning when a project's value is dropped.
	why string
}

// settings lists every configuration key, with the scope a project may set it in
// (README: "Running on untrusted checkouts").
func settings() []setting {
	return []setting{
		{key: "prompt", kind: kindString, flag: true, perRun: true},
		{key: "output-format", kind: kindString, flag: true, def: headless.OutputText, scope: scopeAny},
		{key: "input-format", kind: kindString, flag: true, def: headless.InputText, scope: scopeAny},
		{key: "provider", kind: kindString, flag: true, why: "it picks which provider key is sent"},
		{key: "model", kind: kindString, flag: true, scope: scopeAny},
		{key: "base-url", kind: kindString, flag: true, why: "the API key is sent there"},
		{key: "api-key", kind: kindString, why: "a credential"},
		{key: "scenario", kind: kindString, flag: true, why: "a scenario replaces the model with a script"},
		{key: "max-turns", kind: kindInt, flag: true, def: agents.DefaultMaxTurns, scope: scopeNarrow, narrower: lowerCap(intValue)},
		{key: "timeout", kind: kindDuration, flag: true, def: time.Duration(0), scope: scopeNarrow, narrower: lowerCap(durationValue)},
		{key: "request-timeout", kind: kindDuration, flag: true, def: defaultRequestTimeout, scope: scopeNarrow, narrower: lowerCap(durationValue)},
		{key: "approval-mode", kind: kindString, flag: true, def: string(tools.ModeDefault), scope: scopeNarrow, narrower: lowerMode},
		{key: "background-on-exit", kind: kindString, flag: true, def: string(headless.BackgroundWait), scope: scopeNarrow, narrower: cancelsSooner},
		{key: "max-background", kind: kindInt, flag: true, def: agents.DefaultMaxBackground, scope: scopeNarrow, narrower: fewer},
		{key: "max-foreground", kind: kindInt, flag: true, def: agents.DefaultMaxForeground, scope: scopeNarrow, narrower: fewer},
		{key: "max-queued", kind: kindInt, flag: true, def: agents.DefaultMaxQueued, scope: scopeNarrow, narrower: fewer},
		{key: "no-background-agents", kind: kindBool, flag: true, def: false, scope: scopeNarrow, narrower: turnsOff},
		{key: "resume", kind: kindString, flag: true, perRun: true},
		{key: "continue", kind: kindBool, flag: true, perRun: true},
		{key: "session-id", kind: kindString, flag: true, perRun: true},
		{key: "fork-session", kind: kindBool, flag: true, perRun: true},
		{key: "wait-for-session", kind: kindDuration, flag: true, perRun: true},
		{key: "bare", kind: kindBool, flag: true, perRun: true},
		{key: "trust-project", kind: kindBool, flag: true, perRun: true},
		{key: "verbose", kind: kindBool, flag: true, def: false, scope: scopeAny},
		{key: "debug", kind: kindBool, flag: true, def: false, scope: scopeAny},
		{key: "log-level", kind: kindString, scope: scopeAny},
		{key: "trace-file", kind: kindString, flag: true, why: "it writes a file anywhere"},
		{key: "progress", kind: kindString, flag: true, def: progress.ModeAuto, scope: scopeAny},
		{key: "prices", kind: kindMap, why: "prices decide --max-budget-usd"},
		{key: "hooks", kind: kindMap, why: "hooks run commands"},
		{key: "mcp-servers", kind: kindMap, why: "MCP servers run commands and receive credentials"},
		// A project may name models for its agent files as it may name the parent's
		// (model) and write model: in those files: a model name sends nothing elsewhere.
		{key: "model-aliases", kind: kindMap, scope: scopeAny},
		{key: "env-deny", kind: kindList, scope: scopeHome},
		{key: "trusted-projects", kind: kindList, scope: scopeHome},
	}
}

// envName is the environment variable of a key: STOKE_ and the key in upper case, dashes
// as underscores.
func envName(key string) string {
	return "STOKE_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
}

// providerEnv lists a provider's own variables, which count only when that provider runs
// and the STOKE_ variable of the same key is not set.
func providerEnv(provider string) map[string]string {
	switch provider {
	case providerOpenAI:
		return map[string]string{"api-key": "OPENAI_API_KEY", "base-url": "OPENAI_BASE_URL", "model": "OPENAI_MODEL"}
	case providerAnthropic:
		return map[string]string{"api-key": "ANTHROPIC_API_KEY", "base-url": "ANTHROPIC_BASE_URL", "model": "ANTHROPIC_MODEL"}
	}
	return nil
}

// ignoredKey is a settings-file key that was dropped (or a whole file, when key is ""),
// reported once the logger exists.
type ignoredKey struct {
	file, key, reason string
}

// log writes the warning line.
func (k ignoredKey) log(logger *slog.Logger) {
	if k.key == "" {
		logger.Warn("settings file ignored", "file", k.file, "reason", k.reason)
		return
	}
	logger.Warn("settings key ignored", "file", k.file, "key", k.key, "reason", k.reason)
}

// configInput is what loadConfig reads besides viper.
type configInput struct {
	flags     *pflag.FlagSet
	lookupEnv func(string) (string, bool)
	cwd       string // the project: <cwd>/.stoke/settings.yaml
	home      string // $STOKE_HOME: <home>/settings.yaml
}

// loadConfig layers defaults, settings files, environment and flags in v and decodes the
// result. Settings-file keys that were dropped come back, to be logged once the logger
// exists. Every error is a usage error.
func loadConfig(v *viper.Viper, in configInput) (*Config, []ignoredKey, error) {
	all := settings()
	sources := make(map[string]string)
	var ignored []ignoredKey

	for _, s := range all {
		if s.def != nil {
			v.SetDefault(s.key, s.def)
		}
	}

	// --bare and --trust-project are needed before the project settings are read.
	bare, err := boolFromFlagOrEnv(in, "bare")
	if err != nil {
		return nil, nil, err
	}
	trust, err := boolFromFlagOrEnv(in, "trust-project")
	if err != nil {
		return nil, nil, err
	}

	homePath := filepath.Join(in.home, settingsFile)
	home, drop, err := readSettings(homePath, all)
	if err != nil {
		return nil, nil, err
	}
	ignored = append(ignored, drop...)
	lists, drop := homeLists(homePath, home)
	ignored = append(ignored, drop...)
	trusted := trust || listed(in.cwd, lists["trusted-projects"])
	layers := []settingsLayer{{path: homePath, m: home}}
	if project := filepath.Join(in.cwd, ".stoke", settingsFile); !bare && project != homePath {
		m, drop, err := readProjectSettings(project, in.cwd, all)
		if err != nil {
			return nil, nil, err
		}
		ignored = append(ignored, drop...)
		m, drop = narrowProject(project, m, home, all, trusted, homePath)
		ignored = append(ignored, drop...)
		layers = append(layers, settingsLayer{path: project, m: m, project: true})
	}
	var prices map[string]price.Price
	var hookCfg hooks.Config
	var mcpServers map[string]any
	var modelAliases map[string]string
	for _, l := range layers {
		for k := range l.m {
			sources[k] = l.path
		}
		if p, ok := l.m["prices"]; ok {
			var ps map[string]price.Price
			data, _ := yaml.Marshal(p)
			if err := yaml.Unmarshal(data, &ps); err != nil {
				return nil, nil, usageErrorf("settings: prices (from %s): %v", l.path, err)
			}
			if prices == nil {
				prices = map[string]price.Price{}
			}
			maps.Copy(prices, ps)
		}
		if hk, ok := l.m["hooks"]; ok {
			hc, err := hooks.ParseConfig(hk)
			if err != nil {
				return nil, nil, usageErrorf("settings: hooks (from %s): %v", l.path, err)
			}
			if l.project {
				var warnings []string
				hc, warnings = hooks.WithoutOutsideScripts(hc, in.cwd)
				for _, w := range warnings {
					ignored = append(ignored, ignoredKey{l.path, "hooks", w})
				}
			}
			if hookCfg == nil {
				hookCfg = hooks.Config{}
			}
			maps.Copy(hookCfg, hc) // an event's list replaces the earlier file's
		}
		if ma, ok := l.m["model-aliases"].(map[string]any); ok {
			if modelAliases == nil {
				modelAliases = map[string]string{}
			}
			for alias, v := range ma { // an alias of a later file replaces the earlier one
				name, ok := v.(string)
				if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(alias) == "" {
					return nil, nil, usageErrorf("settings: model-aliases (from %s): %q: want a model name", l.path, alias)
				}
				modelAliases[strings.TrimSpace(alias)] = strings.TrimSpace(name)
			}
		}
		if ms, ok := l.m["mcp-servers"].(map[string]any); ok {
			if mcpServers == nil {
				mcpServers = map[string]any{}
			}
			maps.Copy(mcpServers, ms) // a server of a later file replaces the earlier one
		}
		flat := make(map[string]any, len(l.m))
		for k, v := range l.m {
			if i := slices.IndexFunc(all, func(s setting) bool { return s.key == k }); i >= 0 && all[i].kind < kindMap {
				flat[k] = v
			}
		}
		if err := v.MergeConfigMap(flat); err != nil {
			return nil, nil, usageErrorf("settings file %s: %v", l.path, err)
		}
	}

	env := make(map[string]any)
	for _, s := range all {
		if s.kind >= kindMap {
			continue // settings files only
		}
		name := envName(s.key)
		val, ok := in.lookupEnv(name)
		if !ok {
			continue
		}
		if err := checkValue(s.kind, val); err != nil {
			return nil, nil, usageErrorf("%s=%q: %v", name, redact(s.key, val), err)
		}
		env[s.key] = val
		sources[s.key] = name
	}
	if err := v.MergeConfigMap(env); err != nil {
		return nil, nil, usageErrorf("environment: %v", err)
	}

	for _, s := range all {
		if !s.flag {
			continue
		}
		f := in.flags.Lookup(s.key)
		if f == nil {
			continue // a command that takes only some of the run's flags (stoke agents check)
		}
		if err := v.BindPFlag(s.key, f); err != nil {
			return nil, nil, fmt.Errorf("bind flag --%s: %w", s.key, err)
		}
		if f.Changed {
			sources[s.key] = "--" + s.key
		}
	}

	// The provider decides which provider variables apply; they rank with the
	// environment, below STOKE_* variables of the same key and below flags.
	provider := v.GetString("provider")
	if provider == "" {
		provider = defaultProvider(v.GetString("scenario"), in.lookupEnv)
		v.SetDefault("provider", provider)
	}
	penv := make(map[string]any)
	for key, name := range providerEnv(provider) {
		if _, ok := in.lookupEnv(envName(key)); ok {
			continue
		}
		if val, ok := in.lookupEnv(name); ok && val != "" {
			penv[key] = val
			if !strings.HasPrefix(sources[key], "--") {
				sources[key] = name
			}
		}
	}
	if err := v.MergeConfigMap(penv); err != nil {
		return nil, nil, usageErrorf("environment: %v", err)
	}

	var cfg Config
	if err := v.Unmarshal(&cfg); err != nil {
		return nil, nil, usageErrorf("configuration: %v", err)
	}
	cfg.Prices, cfg.Hooks, cfg.MCPServers, cfg.ModelAliases = prices, hookCfg, mcpServers, modelAliases
	cfg.EnvDeny, cfg.TrustedProjects = lists["env-deny"], lists["trusted-projects"]
	cfg.Trusted = trusted && !bare
	cfg.sources = sources
	return &cfg, ignored, nil
}

// settingsLayer is one settings file's keys.
type settingsLayer struct {
	path    string
	m       map[string]any
	project bool
}

// readProjectSettings reads the project's settings file, unless it is a symbolic link
// (or sits in a directory that is one) to a file outside the project: then it is not
// read, with one warning.
func readProjectSettings(path, cwd string, all []setting) (map[string]any, []ignoredKey, error) {
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, usageErrorf("read settings file %s: %v", path, err)
	}
	root, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return nil, nil, usageErrorf("resolve the working directory: %v", err)
	}
	if !within(root, real) {
		return nil, []ignoredKey{{path, "", fmt.Sprintf("it is a symbolic link to %s, outside the project", real)}}, nil
	}
	return readSettings(path, all)
}

// within reports whether p is dir or below it (both clean and absolute).
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// narrowProject drops from the project's settings m what the project may not set: keys
// of the home settings only, and, unless the project is trusted, keys that reach outside
// the workspace and values wider than the home settings' (or the defaults). Each drop is
// one warning.
func narrowProject(path string, m, home map[string]any, all []setting, trusted bool, homePath string) (map[string]any, []ignoredKey) {
	untrusted := fmt.Sprintf("the project is not trusted (pass --trust-project, or list it under trusted-projects in %s)", homePath)
	var ignored []ignoredKey
	out := make(map[string]any, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		val := m[k]
		s := all[slices.IndexFunc(all, func(s setting) bool { return s.key == k })]
		switch s.scope {
		case scopeHome:
			ignored = append(ignored, ignoredKey{path, k, "only " + homePath + " may set it"})
			continue
		case scopeNarrow:
			base, ok := home[k]
			if !ok {
				base = s.def
			}
			if !trusted && !s.narrower(val, base) {
				ignored = append(ignored, ignoredKey{path, k, fmt.Sprintf("%s and may only narrow it: %v is wider than %v", untrusted, val, base)})
				continue
			}
		case scopeTrusted:
			if !trusted {
				reason := untrusted
				if s.why != "" {
					reason += ": " + s.why
				}
				ignored = append(ignored, ignoredKey{path, k, reason})
				continue
			}
		}
		out[k] = val
	}
	return out, ignored
}

// homeLists decodes the list keys of the home settings. A trusted-projects entry that is
// not an absolute path is dropped with a warning.
func homeLists(path string, home map[string]any) (map[string][]string, []ignoredKey) {
	out := map[string][]string{}
	var ignored []ignoredKey
	for _, key := range []string{"env-deny", "trusted-projects"} {
		items, _ := home[key].([]any)
		for _, it := range items {
			s := strings.TrimSpace(fmt.Sprint(it))
			if key == "trusted-projects" && !filepath.IsAbs(s) {
				ignored = append(ignored, ignoredKey{path, key, fmt.Sprintf("%q is not an absolute path", s)})
				continue
			}
			out[key] = append(out[key], s)
		}
	}
	return out, ignored
}

// listed reports whether cwd is one of the trusted projects, compared after both are
// made absolute and their symbolic links resolved.
func listed(cwd string, projects []string) bool {
	if len(projects) == 0 {
		return false
	}
	real := func(p string) string {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		return filepath.Clean(p)
	}
	here := real(cwd)
	for _, p := range projects {
		if real(p) == here {
			return true
		}
	}
	return false
}

// The narrowing rules of the scopeNarrow keys: the project's value v against base. A
// value that is not valid at all is let through: validation then stops the run with a
// usage error naming the file, as for any settings file.

// lowerMode: an approval mode that allows no more (plan < default < auto-edit < yolo).
func lowerMode(v, base any) bool {
	rank := func(x any) int {
		m, err := tools.ParseMode(fmt.Sprint(x))
		if err != nil {
			return -1
		}
		return m.Rank()
	}
	r := rank(v)
	return r < 0 || r <= max(rank(base), 0) // an unknown mode fails validation
}

// lowerCap is the rule of a cap where 0 means none (max-turns, timeout): a lower,
// non-zero one.
func lowerCap[T int | time.Duration](value func(any) (T, bool)) func(v, base any) bool {
	return func(v, base any) bool {
		n, ok1 := value(v)
		b, ok2 := value(base)
		switch {
		case !ok1 || n < 0:
			return true // fails validation
		case !ok2 || b == 0:
			return ok2
		}
		return n != 0 && n <= b
	}
}

// fewer: a cap of at least 1 (max-background, max-foreground, max-queued).
func fewer(v, base any) bool {
	n, ok1 := intValue(v)
	b, ok2 := intValue(base)
	return !ok1 || n < 1 || ok2 && n <= b // a value below 1 fails validation
}

// cancelsSooner: cancel ends background agents with the run; wait lets them finish.
func cancelsSooner(v, base any) bool {
	s := fmt.Sprint(v)
	return s == string(headless.BackgroundCancel) || s == fmt.Sprint(base) || s != string(headless.BackgroundWait) // another value fails validation
}

// turnsOff: a project may turn background agents off, not on.
func turnsOff(v, base any) bool {
	on, ok1 := boolValue(v)
	b, ok2 := boolValue(base)
	return ok1 && ok2 && (on || on == b)
}

func intValue(x any) (int, bool) {
	switch x := x.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case uint64:
		return int(x), true
	case string:
		n, err := strconv.Atoi(x)
		return n, err == nil
	}
	return 0, false
}

func durationValue(x any) (time.Duration, bool) {
	switch x := x.(type) {
	case time.Duration:
		return x, true
	case int:
		return time.Duration(x), x == 0
	case string:
		d, err := time.ParseDuration(x)
		return d, err == nil
	}
	return 0, false
}

func boolValue(x any) (bool, bool) {
	switch x := x.(type) {
	case bool:
		return x, true
	case string:
		b, err := strconv.ParseBool(x)
		return b, err == nil
	}
	return false, false
}

// secretsPolicy is what keeps credentials out of child processes and tool results: the
// provider keys, the variable the API key in use came from and env-deny are kept out of
// their environment; the API key in use and the values of the provider key variables
// are redacted.
func (c *Config) secretsPolicy(lookupEnv func(string) (string, bool)) *secrets.Policy {
	deny := slices.Clone(c.EnvDeny)
	if src := c.sources["api-key"]; src != "" && !strings.HasPrefix(src, "--") && !strings.ContainsRune(src, filepath.Separator) {
		deny = append(deny, src) // an environment variable
	}
	return secrets.New(secrets.Config{Deny: deny, Values: c.secretValues(lookupEnv)})
}

// secretValues are the values nothing stoke records may hold: the API key in use and the
// values of the provider key variables, each once, blank ones left out.
func (c *Config) secretValues(lookupEnv func(string) (string, bool)) []string {
	var values []string
	add := func(v string) {
		if strings.TrimSpace(v) != "" && !slices.Contains(values, v) {
			values = append(values, v)
		}
	}
	add(c.APIKey)
	names := secrets.ProviderKeys()
	for _, p := range []string{providerOpenAI, providerAnthropic} {
		names = append(names, providerEnv(p)["api-key"])
	}
	for _, n := range names {
		if v, ok := lookupEnv(n); ok {
			add(v)
		}
	}
	return values
}

// boolFromFlagOrEnv reads a per-run boolean before viper has its layers.
func boolFromFlagOrEnv(in configInput, key string) (bool, error) {
	if f := in.flags.Lookup(key); f != nil && f.Changed {
		return in.flags.GetBool(key)
	}
	name := envName(key)
	val, ok := in.lookupEnv(name)
	if !ok {
		return false, nil
	}
	b, err := strconv.ParseBool(val)
	if err != nil {
		return false, usageErrorf("%s=%q: want true or false", name, val)
	}
	return b, nil
}

// readSettings reads one settings file. A missing file is no settings. Unknown keys and
// per-run keys are dropped and returned; a value of the wrong type or YAML that does not
// parse is a usage error naming the file.
func readSettings(path string, all []setting) (map[string]any, []ignoredKey, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, usageErrorf("read settings file %s: %v", path, err)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, nil, usageErrorf("malformed settings file %s: %v", path, err)
	}
	out := make(map[string]any, len(raw))
	var ignored []ignoredKey
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		val := raw[k]
		key := strings.ToLower(k)
		i := slices.IndexFunc(all, func(s setting) bool { return s.key == key })
		switch {
		case i < 0:
			ignored = append(ignored, ignoredKey{path, k, "unknown key"})
			continue
		case all[i].perRun:
			ignored = append(ignored, ignoredKey{path, k, fmt.Sprintf("set it with --%s or %s", key, envName(key))})
			continue
		case val == nil:
			continue // "model:" with no value sets nothing
		}
		if err := checkValue(all[i].kind, val); err != nil {
			return nil, nil, usageErrorf("settings file %s: %s: %v", path, k, err)
		}
		out[key] = val
	}
	return out, ignored, nil
}

// checkValue reports whether val, from the environment (a string) or YAML, can be
// decoded as k.
func checkValue(k kind, val any) error {
	switch k {
	case kindMap:
		if _, ok := val.(map[string]any); !ok {
			return errors.New("want a map")
		}
	case kindList:
		items, ok := val.([]any)
		if !ok {
			return errors.New("want a list")
		}
		for _, it := range items {
			switch it.(type) {
			case map[string]any, []any, nil:
				return errors.New("want a list of strings")
			}
		}
	case kindString:
		switch val.(type) {
		case map[string]any, []any:
			return errors.New("want a single value")
		}
	case kindInt:
		switch x := val.(type) {
		case int, int64, uint64:
		case string:
			if _, err := strconv.Atoi(x); err != nil {
				return errors.New("want a whole number")
			}
		default:
			return errors.New("want a whole number")
		}
	case kindBool:
		switch x := val.(type) {
		case bool:
		case string:
			if _, err := strconv.ParseBool(x); err != nil {
				return errors.New("want true or false")
			}
		default:
			return errors.New("want true or false")
		}
	case kindDuration:
		switch x := val.(type) {
		case string:
			if _, err := time.ParseDuration(x); err != nil {
				return errors.New("want a duration with a unit, like 90s or 10m")
			}
		case int:
			if x != 0 {
				return errors.New("want a duration with a unit, like 90s or 10m")
			}
		default:
			return errors.New("want a duration with a unit, like 90s or 10m")
		}
	}
	return nil
}

// names returns the values of an enumeration as strings.
func names[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// redact hides the value of secret keys in messages.
func redact(key, val string) string {
	if key == "api-key" {
		return "<redacted>"
	}
	return val
}

// from says where a value came from, for messages: " (from STOKE_MODEL)". Empty when it
// came from the flag itself or is a default.
func (c *Config) from(key string) string {
	src, ok := c.sources[key]
	if !ok || src == "--"+key {
		return ""
	}
	return " (from " + src + ")"
}

// given reports whether the user set key at all (flag, environment or settings).
func (c *Config) given(key string) bool {
	_, ok := c.sources[key]
	return ok
}

// validate checks enums and ranges, canonicalises the session id and returns the log
// level. Every error is a usage error naming the flag and the allowed values.
func (c *Config) validate() (slog.Level, error) {
	enums := []struct {
		key, val string
		allowed  []string
	}{
		{"provider", c.Provider, []string{providerOpenAI, providerAnthropic, providerScripted}},
		{"output-format", c.OutputFormat, []string{headless.OutputText, headless.OutputJSON, headless.OutputStreamJSON}},
		{"input-format", c.InputFormat, []string{headless.InputText, headless.InputStreamJSON}},
		{"approval-mode", string(c.ApprovalMode), names(tools.Modes())},
		{"background-on-exit", string(c.BackgroundOnExit), names(headless.BackgroundPolicies())},
		{"progress", c.Progress, progress.Modes()},
	}
	for _, e := range enums {
		if !slices.Contains(e.allowed, e.val) {
			return 0, usageErrorf("invalid --%s %q%s: want one of %s", e.key, e.val, c.from(e.key), strings.Join(e.allowed, ", "))
		}
	}
	if c.MaxTurns < 0 {
		return 0, usageErrorf("invalid --max-turns %d%s: want 0 (no cap) or more", c.MaxTurns, c.from("max-turns"))
	}
	if c.Timeout < 0 {
		return 0, usageErrorf("invalid --timeout %v%s: want 0 (none) or a positive duration", c.Timeout, c.from("timeout"))
	}
	if c.MaxBackground < 1 {
		return 0, usageErrorf("invalid --max-background %d%s: want 1 or more (--no-background-agents turns them off)", c.MaxBackground, c.from("max-background"))
	}
	if c.MaxForeground < 1 {
		return 0, usageErrorf("invalid --max-foreground %d%s: want 1 or more", c.MaxForeground, c.from("max-foreground"))
	}
	if c.MaxQueued < 1 {
		return 0, usageErrorf("invalid --max-queued %d%s: want 1 or more", c.MaxQueued, c.from("max-queued"))
	}
	if c.Resume != "" && c.Continue {
		return 0, usageErrorf("--resume and --continue cannot be used together")
	}
	if c.ForkSession && c.Resume == "" && !c.Continue {
		return 0, usageErrorf("--fork-session forks a stored session: use it with --resume SESSION_ID or --continue")
	}
	if c.WaitForSession < 0 {
		return 0, usageErrorf("invalid --wait-for-session %v%s: want 0 (do not wait) or a positive duration", c.WaitForSession, c.from("wait-for-session"))
	}
	if c.SessionID != "" {
		if (c.Resume != "" || c.Continue) && !c.ForkSession {
			return 0, usageErrorf("--session-id starts a new session: it cannot be used with --resume or --continue (except to name the fork of --fork-session)")
		}
		id, err := uuid.Parse(c.SessionID)
		if err != nil {
			return 0, usageErrorf("invalid --session-id %q%s: want a UUID", c.SessionID, c.from("session-id"))
		}
		c.SessionID = id.String()
	}
	level := slog.LevelWarn
	if c.LogLevel != "" {
		if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
			return 0, usageErrorf("invalid log level %q%s: want one of debug, info, warn, error", c.LogLevel, c.from("log-level"))
		}
	}
	if c.Debug {
		level = slog.LevelDebug
	}
	return level, nil
}
