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

	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/headless"
	"github.com/stoke-cli/stoke/headless/progress"
)

// Approval modes.
const (
	approvalPlan     = "plan"
	approvalDefault  = "default"
	approvalAutoEdit = "auto-edit"
	approvalYolo     = "yolo"
)

// --background-on-exit policies.
const (
	backgroundWait   = "wait"
	backgroundCancel = "cancel"
)

const (
	defaultMaxBackground = 4
	// settingsFile is the name of a settings file, in $STOKE_HOME and in <project>/.stoke.
	settingsFile = "settings.yaml"
)

// Config is the configuration of one run after viper has layered, from strongest to
// weakest: flags, environment, the project's .stoke/settings.yaml, $STOKE_HOME/settings.yaml
// and defaults. Keys are the flag names; api-key and log-level have no flag.
type Config struct {
	Provider           string        `mapstructure:"provider"`
	Model              string        `mapstructure:"model"`
	BaseURL            string        `mapstructure:"base-url"`
	APIKey             string        `mapstructure:"api-key"`
	Scenario           string        `mapstructure:"scenario"`
	OutputFormat       string        `mapstructure:"output-format"`
	InputFormat        string        `mapstructure:"input-format"`
	MaxTurns           int           `mapstructure:"max-turns"`
	Timeout            time.Duration `mapstructure:"timeout"`
	ApprovalMode       string        `mapstructure:"approval-mode"`
	BackgroundOnExit   string        `mapstructure:"background-on-exit"`
	MaxBackground      int           `mapstructure:"max-background"`
	NoBackgroundAgents bool          `mapstructure:"no-background-agents"`
	Verbose            bool          `mapstructure:"verbose"`
	Debug              bool          `mapstructure:"debug"`
	LogLevel           string        `mapstructure:"log-level"`
	TraceFile          string        `mapstructure:"trace-file"`
	Progress           string        `mapstructure:"progress"`

	// Per-run values: flags and STOKE_* environment only; a settings file cannot set them.
	Prompt    string `mapstructure:"prompt"`
	Resume    string `mapstructure:"resume"`
	Continue  bool   `mapstructure:"continue"`
	SessionID string `mapstructure:"session-id"`
	Bare      bool   `mapstructure:"bare"`

	// Structured settings-file values, merged entry by entry across files (never through
	// viper, whose key paths would split model names like gpt-4.1 at the dot).
	Prices map[string]price.Price `mapstructure:"-"`
	Hooks  hooks.Config           `mapstructure:"-"`

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
		slog.String("approval-mode", c.ApprovalMode),
		slog.String("background-on-exit", c.BackgroundOnExit),
		slog.Int("max-background", c.MaxBackground),
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
)

// setting is one configuration key.
type setting struct {
	key    string // the flag name, the settings-file key; STOKE_<KEY> in the environment
	kind   kind
	flag   bool // has a command-line flag
	perRun bool // flags and environment only
	def    any  // default; nil for none
}

// settings lists every configuration key.
func settings() []setting {
	return []setting{
		{key: "prompt", kind: kindString, flag: true, perRun: true},
		{key: "output-format", kind: kindString, flag: true, def: headless.OutputText},
		{key: "input-format", kind: kindString, flag: true, def: headless.InputText},
		{key: "provider", kind: kindString, flag: true},
		{key: "model", kind: kindString, flag: true},
		{key: "base-url", kind: kindString, flag: true},
		{key: "api-key", kind: kindString},
		{key: "scenario", kind: kindString, flag: true},
		{key: "max-turns", kind: kindInt, flag: true, def: 0},
		{key: "timeout", kind: kindDuration, flag: true, def: time.Duration(0)},
		{key: "approval-mode", kind: kindString, flag: true, def: approvalDefault},
		{key: "background-on-exit", kind: kindString, flag: true, def: backgroundWait},
		{key: "max-background", kind: kindInt, flag: true, def: defaultMaxBackground},
		{key: "no-background-agents", kind: kindBool, flag: true, def: false},
		{key: "resume", kind: kindString, flag: true, perRun: true},
		{key: "continue", kind: kindBool, flag: true, perRun: true},
		{key: "session-id", kind: kindString, flag: true, perRun: true},
		{key: "bare", kind: kindBool, flag: true, perRun: true},
		{key: "verbose", kind: kindBool, flag: true, def: false},
		{key: "debug", kind: kindBool, flag: true, def: false},
		{key: "log-level", kind: kindString},
		{key: "trace-file", kind: kindString, flag: true},
		{key: "progress", kind: kindString, flag: true, def: progress.ModeAuto},
		{key: "prices", kind: kindMap},
		{key: "hooks", kind: kindMap},
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

// ignoredKey is a settings-file key that was dropped, reported once the logger exists.
type ignoredKey struct {
	file, key, reason string
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

	// --bare is needed before the project settings are read.
	bare, err := boolFromFlagOrEnv(in, "bare")
	if err != nil {
		return nil, nil, err
	}

	files := []string{filepath.Join(in.home, settingsFile)}
	if project := filepath.Join(in.cwd, ".stoke", settingsFile); !bare && project != files[0] {
		files = append(files, project)
	}
	structured := map[string]map[string]any{}
	for _, path := range files {
		m, drop, err := readSettings(path, all)
		if err != nil {
			return nil, nil, err
		}
		ignored = append(ignored, drop...)
		for k := range m {
			sources[k] = path
		}
		for _, st := range all {
			if sub, ok := m[st.key].(map[string]any); ok && st.kind == kindMap {
				if structured[st.key] == nil {
					structured[st.key] = map[string]any{}
				}
				maps.Copy(structured[st.key], sub)
				delete(m, st.key)
			}
		}
		if err := v.MergeConfigMap(m); err != nil {
			return nil, nil, usageErrorf("settings file %s: %v", path, err)
		}
	}

	env := make(map[string]any)
	for _, s := range all {
		if s.kind == kindMap {
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
		provider = providerOpenAI
		if v.GetString("scenario") != "" {
			provider = providerScripted
		}
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
	if p := structured["prices"]; p != nil {
		data, _ := yaml.Marshal(p)
		if err := yaml.Unmarshal(data, &cfg.Prices); err != nil {
			return nil, nil, usageErrorf("settings: prices (from %s): %v", sources["prices"], err)
		}
	}
	if hk := structured["hooks"]; hk != nil {
		hc, err := hooks.ParseConfig(hk)
		if err != nil {
			return nil, nil, usageErrorf("settings: hooks (from %s): %v", sources["hooks"], err)
		}
		cfg.Hooks = hc
	}
	cfg.sources = sources
	return &cfg, ignored, nil
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
		{"approval-mode", c.ApprovalMode, []string{approvalPlan, approvalDefault, approvalAutoEdit, approvalYolo}},
		{"background-on-exit", c.BackgroundOnExit, []string{backgroundWait, backgroundCancel}},
		{"progress", c.Progress, progress.Modes},
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
	if c.Resume != "" && c.Continue {
		return 0, usageErrorf("--resume and --continue cannot be used together")
	}
	if c.SessionID != "" {
		if c.Resume != "" || c.Continue {
			return 0, usageErrorf("--session-id starts a new session: it cannot be used with --resume or --continue")
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
