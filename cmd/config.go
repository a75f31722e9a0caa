package cmd

import (
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm"
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
	MaxRetained        int                       `mapstructure:"max-retained"`
	NoBackgroundAgents bool                      `mapstructure:"no-background-agents"`
	Verbose            bool                      `mapstructure:"verbose"`
	Debug              bool                      `mapstructure:"debug"`
	LogLevel           string                    `mapstructure:"log-level"`
	TraceFile          string                    `mapstructure:"trace-file"`
	Report             string                    `mapstructure:"report"`
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
	ACP            bool          `mapstructure:"acp"`

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

// LogValue keeps the API key, and the credentials a base URL may carry (user:password,
// a query), out of logs.
func (c Config) LogValue() slog.Value {
	key := ""
	if c.APIKey != "" {
		key = "<redacted>"
	}
	baseURL := c.BaseURL
	if baseURL != "" {
		baseURL = llm.RedactURL(baseURL)
	}
	return slog.GroupValue(
		slog.String("provider", c.Provider),
		slog.String("model", c.Model),
		slog.String("base-url", baseURL),
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
		slog.Int("max-retained", c.MaxRetained),
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
		{key: "max-queued", kind: kindInt, flag: true, def: agents.DefaultMaxQueued, scope: scopeNarrow, narrower: fewerOrNone},
		{key: "max-retained", kind: kindInt, flag: true, def: agents.DefaultMaxRetained, scope: scopeNarrow, narrower: fewer},
		{key: "no-background-agents", kind: kindBool, flag: true, def: false, scope: scopeNarrow, narrower: turnsOff},
		{key: "resume", kind: kindString, flag: true, perRun: true},
		{key: "continue", kind: kindBool, flag: true, perRun: true},
		{key: "session-id", kind: kindString, flag: true, perRun: true},
		{key: "fork-session", kind: kindBool, flag: true, perRun: true},
		{key: "wait-for-session", kind: kindDuration, flag: true, perRun: true},
		{key: "bare", kind: kindBool, flag: true, perRun: true},
		{key: "trust-project", kind: kindBool, flag: true, perRun: true},
		{key: "acp", kind: kindBool, flag: true, perRun: true},
		{key: "verbose", kind: kindBool, flag: true, def: false, scope: scopeAny},
		{key: "debug", kind: kindBool, flag: true, def: false, scope: scopeAny},
		{key: "log-level", kind: kindString, scope: scopeAny},
		{key: "trace-file", kind: kindString, flag: true, why: "it writes a file anywhere"},
		{key: "report", kind: kindString, flag: true, why: "it writes a file anywhere"},
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

// secretsPolicy is what keeps credentials out of child processes and tool results: the
// provider keys, the variable the API key in use came from and env-deny are kept out of
// their environment; the values redactedValues lists are redacted.
func (c *Config) secretsPolicy(lookupEnv func(string) (string, bool), environ []string) *secrets.Policy {
	deny, values := c.redactedValues(lookupEnv, environ)
	return secrets.New(secrets.Config{Deny: deny, Values: values})
}

// redactedValues returns the variables a run keeps out of child processes (env-deny, and
// the variable the API key in use came from) and the values it redacts: the API key in use
// and the values of the variables kept out (of environ, the process environment), so that
// a child that reads them elsewhere, such as from stoke's own /proc/PID/environ, does not
// get them into a tool result, nor a recording into its cassette.
func (c *Config) redactedValues(lookupEnv func(string) (string, bool), environ []string) (deny, values []string) {
	deny = slices.Clone(c.EnvDeny)
	if src := c.sources["api-key"]; src != "" && !strings.HasPrefix(src, "--") && !strings.ContainsRune(src, filepath.Separator) {
		deny = append(deny, src) // an environment variable
	}
	values = c.secretValues(lookupEnv)
	denied := secrets.New(secrets.Config{Deny: deny})
	for _, kv := range environ {
		if name, v, _ := strings.Cut(kv, "="); denied.Denies(name) && !slices.Contains(values, v) {
			values = append(values, v)
		}
	}
	return deny, values
}

// homeSecrets is the secrets policy of a command that handles stored sessions rather than
// running one (stoke sessions export): what a run here would redact, from the
// environment and the home settings (api-key, env-deny), without the project's.
func homeSecrets(deps *Deps, home string) (*secrets.Policy, error) {
	path := filepath.Join(home, settingsFile)
	m, _, err := readSettings(path, settings())
	if err != nil {
		return nil, err
	}
	lists, _ := homeLists(path, m)
	c := Config{EnvDeny: lists["env-deny"]}
	c.APIKey, _ = m["api-key"].(string)
	return c.secretsPolicy(deps.LookupEnv, deps.environ()), nil
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

// enumValues are the words each configuration key of a few fixed values takes: validate
// checks them, and shell completion offers them (completion.go).
func enumValues() map[string][]string {
	return map[string][]string{
		"provider":           {providerOpenAI, providerAnthropic, providerScripted},
		"output-format":      {headless.OutputText, headless.OutputJSON, headless.OutputStreamJSON},
		"input-format":       {headless.InputText, headless.InputStreamJSON},
		"approval-mode":      names(tools.Modes()),
		"background-on-exit": names(headless.BackgroundPolicies()),
		"progress":           progress.Modes(),
	}
}

// validate checks enums and ranges, canonicalises the session id and returns the log
// level. Every error is a usage error naming the flag and the allowed values.
func (c *Config) validate() (slog.Level, error) {
	enums := []struct{ key, val string }{
		{"provider", c.Provider},
		{"output-format", c.OutputFormat},
		{"input-format", c.InputFormat},
		{"approval-mode", string(c.ApprovalMode)},
		{"background-on-exit", string(c.BackgroundOnExit)},
		{"progress", c.Progress},
	}
	words := enumValues()
	for _, e := range enums {
		if allowed := words[e.key]; !slices.Contains(allowed, e.val) {
			return 0, usageErrorf("invalid --%s %q%s: want one of %s", e.key, e.val, c.from(e.key), strings.Join(allowed, ", "))
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
	if c.MaxQueued < 0 {
		return 0, usageErrorf("invalid --max-queued %d%s: want 0 (no queue) or more", c.MaxQueued, c.from("max-queued"))
	}
	if c.MaxRetained < 1 {
		return 0, usageErrorf("invalid --max-retained %d%s: want 1 or more", c.MaxRetained, c.from("max-retained"))
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
