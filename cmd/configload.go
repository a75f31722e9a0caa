package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/cmd/internal/settingsfile"
)

// configInput is what loadConfig reads besides viper.
type configInput struct {
	flags     *pflag.FlagSet
	lookupEnv func(string) (string, bool)
	cwd       string // the project: <cwd>/.stoke/settings.yaml
	home      string // $STOKE_HOME: <home>/settings.yaml
}

// loadConfig layers the configuration in v, from the weakest layer to the strongest —
// defaults, the settings files, the environment, the flags, the provider's own
// variables — and decodes the result. Each layer is one step: fileLayer, envLayer,
// flagLayer, providerEnvLayer. Settings-file keys that were dropped come back, to be
// logged once the logger exists. Every error is a usage error.
func loadConfig(v *viper.Viper, in configInput) (*Config, []ignoredKey, error) {
	all := settings()
	for _, s := range all {
		if s.def != nil {
			v.SetDefault(s.key, s.def)
		}
	}
	sources := make(map[string]string) // key → where its value came from; later layers win

	files, err := fileLayer(in, all)
	if err != nil {
		return nil, nil, err
	}
	for _, l := range files.layers {
		if err := v.MergeConfigMap(l.flat(all)); err != nil {
			return nil, nil, usageErrorf("settings file %s: %v", l.path, err)
		}
		for k := range l.m {
			sources[k] = l.path
		}
	}

	env, err := envLayer(in.lookupEnv, all)
	if err != nil {
		return nil, nil, err
	}
	if err := v.MergeConfigMap(env.values); err != nil {
		return nil, nil, usageErrorf("environment: %v", err)
	}
	maps.Copy(sources, env.sources)

	flagSources, err := flagLayer(v, in.flags, all)
	if err != nil {
		return nil, nil, err
	}
	maps.Copy(sources, flagSources)

	provider := v.GetString("provider")
	if provider == "" {
		provider = defaultProvider(v.GetString("scenario"), in.lookupEnv)
		v.SetDefault("provider", provider)
	}
	penv := providerEnvLayer(provider, in.lookupEnv, sources)
	if err := v.MergeConfigMap(penv.values); err != nil {
		return nil, nil, usageErrorf("environment: %v", err)
	}
	maps.Copy(sources, penv.sources)

	var cfg Config
	if err := v.Unmarshal(&cfg); err != nil {
		return nil, nil, usageErrorf("configuration: %v", err)
	}
	cfg.Prices, cfg.Hooks, cfg.MCPServers, cfg.ModelAliases = files.prices, files.hooks, files.mcpServers, files.modelAliases
	cfg.EnvDeny, cfg.TrustedProjects = files.lists["env-deny"], files.lists["trusted-projects"]
	cfg.SandboxWritable, cfg.SandboxDenyRead = files.lists["sandbox-writable"], files.lists["sandbox-deny-read"]
	cfg.Trusted = files.trusted
	cfg.sources = sources
	return &cfg, files.ignored, nil
}

// layer is what one step of loadConfig adds: values by key, and where each came from (a
// variable's name, a flag).
type layer struct {
	values  map[string]any
	sources map[string]string
}

// settingsFiles is what the settings files give (fileLayer): each file's keys, home
// first, as layers merged in that order; the structured values merged across them; the
// home settings' lists; whether the project is trusted; the keys dropped.
type settingsFiles struct {
	layers       []settingsLayer
	prices       map[string]price.Price
	hooks        hooks.Config
	mcpServers   map[string]any
	modelAliases map[string]string
	lists        map[string][]string // env-deny, trusted-projects, sandbox-writable, sandbox-deny-read
	// trusted: the project's settings and agent files are taken in full (--trust-project,
	// STOKE_TRUST_PROJECT or trusted-projects), and --bare is not given.
	trusted bool
	ignored []ignoredKey
}

// fileLayer reads the settings files: $STOKE_HOME/settings.yaml, then, unless --bare
// (or STOKE_BARE), the project's .stoke/settings.yaml, narrowed to what the project may
// set (narrowProject) unless it is trusted. --bare and --trust-project are read here,
// before any other layer, since they decide which files count.
func fileLayer(in configInput, all []setting) (settingsFiles, error) {
	var out settingsFiles
	bare, err := boolFromFlagOrEnv(in, "bare")
	if err != nil {
		return out, err
	}
	trust, err := boolFromFlagOrEnv(in, "trust-project")
	if err != nil {
		return out, err
	}

	homePath := filepath.Join(in.home, settingsFile)
	home, drop, err := readSettings(homePath, all)
	if err != nil {
		return out, err
	}
	out.ignored = append(out.ignored, drop...)
	out.lists, drop = homeLists(homePath, home)
	out.ignored = append(out.ignored, drop...)
	trusted := trust || listed(in.cwd, out.lists["trusted-projects"])
	out.trusted = trusted && !bare
	out.layers = []settingsLayer{{path: homePath, m: home}}
	if !bare {
		// Claude Code's project settings, for their hooks, before stoke's own: an event's
		// hooks in .stoke/settings.yaml replace theirs.
		layers, drop := readClaudeHooks(in.cwd, trusted, homePath)
		out.layers = append(out.layers, layers...)
		out.ignored = append(out.ignored, drop...)
	}
	if project := filepath.Join(in.cwd, ".stoke", settingsFile); !bare && project != homePath {
		m, drop, err := readProjectSettings(project, in.cwd, all)
		if err != nil {
			return out, err
		}
		out.ignored = append(out.ignored, drop...)
		m, drop = narrowProject(project, m, home, all, trusted, homePath)
		out.ignored = append(out.ignored, drop...)
		out.layers = append(out.layers, settingsLayer{path: project, m: m, project: true})
	}
	for _, l := range out.layers {
		if err := out.merge(l, in.cwd); err != nil {
			return out, err
		}
	}
	return out, nil
}

// merge adds the structured values of the settings file l to those of the files before
// it: an entry of a later file replaces the same-named entry of an earlier one (a
// price, an event's hooks, an alias, a server). A project's hooks lose the scripts that
// lead outside it, one warning each.
func (f *settingsFiles) merge(l settingsLayer, cwd string) error {
	if p, ok := l.m["prices"]; ok {
		var ps map[string]price.Price
		data, _ := yaml.Marshal(p)
		if err := yaml.Unmarshal(data, &ps); err != nil {
			return usageErrorf("settings: prices (from %s): %v", l.path, err)
		}
		if f.prices == nil {
			f.prices = map[string]price.Price{}
		}
		maps.Copy(f.prices, ps)
	}
	if hk, ok := l.m["hooks"]; ok {
		hc, unmet, err := hooks.Parse(hk)
		if err != nil {
			return usageErrorf("settings: hooks (from %s): %v", l.path, err)
		}
		for _, ev := range unmet {
			f.ignored = append(f.ignored, ignoredKey{l.path, "hooks", fmt.Sprintf("stoke does not meet %s events: their hooks never run", ev)})
		}
		if l.project {
			var warnings []string
			hc, warnings = hooks.WithoutOutsideScripts(hc, cwd)
			for _, w := range warnings {
				f.ignored = append(f.ignored, ignoredKey{l.path, "hooks", w})
			}
		}
		if f.hooks == nil {
			f.hooks = hooks.Config{}
		}
		maps.Copy(f.hooks, hc) // an event's list replaces the earlier file's
	}
	if ma, ok := l.m["model-aliases"].(map[string]any); ok {
		if f.modelAliases == nil {
			f.modelAliases = map[string]string{}
		}
		for alias, v := range ma {
			name, ok := v.(string)
			if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(alias) == "" {
				return usageErrorf("settings: model-aliases (from %s): %q: want a model name", l.path, alias)
			}
			f.modelAliases[strings.TrimSpace(alias)] = strings.TrimSpace(name)
		}
	}
	if ms, ok := l.m["mcp-servers"].(map[string]any); ok {
		if f.mcpServers == nil {
			f.mcpServers = map[string]any{}
		}
		maps.Copy(f.mcpServers, ms)
	}
	return nil
}

// settingsLayer is one settings file's keys.
type settingsLayer struct {
	path    string
	m       map[string]any
	project bool
}

// flat returns the file's keys viper layers: every key but the structured ones (maps,
// lists), which settingsFiles.merge and homeLists decode.
func (l settingsLayer) flat(all []setting) map[string]any {
	flat := make(map[string]any, len(l.m))
	for k, v := range l.m {
		if i := slices.IndexFunc(all, func(s setting) bool { return s.key == k }); i >= 0 && all[i].kind < kindMap {
			flat[k] = v
		}
	}
	return flat
}

// envLayer reads the STOKE_* variables of every key a settings file can hold a single
// value of (maps and lists come from files only). A value that cannot be decoded is a
// usage error naming the variable (the API key's value redacted).
func envLayer(lookupEnv func(string) (string, bool), all []setting) (layer, error) {
	out := layer{values: map[string]any{}, sources: map[string]string{}}
	for _, s := range all {
		if s.kind >= kindMap {
			continue
		}
		name := envName(s.key)
		val, ok := lookupEnv(name)
		if !ok {
			continue
		}
		if err := checkValue(s.kind, val); err != nil {
			return layer{}, usageErrorf("%s=%q: %v", name, redact(s.key, val), err)
		}
		out.values[s.key] = val
		out.sources[s.key] = name
	}
	return out, nil
}

// flagLayer binds the flags of every key that has one to v, and returns the sources of
// the flags given ("--model"). A command may define only some of the run's flags (stoke
// agents check): the others are skipped.
func flagLayer(v *viper.Viper, flags *pflag.FlagSet, all []setting) (map[string]string, error) {
	sources := map[string]string{}
	for _, s := range all {
		if !s.flag {
			continue
		}
		f := flags.Lookup(s.key)
		if f == nil {
			continue
		}
		if err := v.BindPFlag(s.key, f); err != nil {
			return nil, fmt.Errorf("bind flag --%s: %w", s.key, err)
		}
		if f.Changed {
			sources[s.key] = "--" + s.key
		}
	}
	return sources, nil
}

// providerEnvLayer reads the variables of the provider that runs (OPENAI_API_KEY, ...):
// they rank with the environment, so a STOKE_* variable of the same key wins, and so does
// a flag, whose source (in sources, the layers below) it does not replace. An empty
// variable sets nothing.
func providerEnvLayer(provider string, lookupEnv func(string) (string, bool), sources map[string]string) layer {
	out := layer{values: map[string]any{}, sources: map[string]string{}}
	for key, name := range providerEnv(provider) {
		if _, ok := lookupEnv(envName(key)); ok {
			continue
		}
		if val, ok := lookupEnv(name); ok && val != "" {
			out.values[key] = val
			if !strings.HasPrefix(sources[key], "--") {
				out.sources[key] = name
			}
		}
	}
	return out
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
	// A FIFO or a device would block the read, or never end it: only a regular file
	// (or a link to one) is read.
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err == nil && !fi.Mode().IsRegular() {
		return nil, nil, usageErrorf("read settings file %s: it is not a regular file (%v)", path, fi.Mode().Type())
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, usageErrorf("read settings file %s: %v", path, err)
	}
	return parseSettings(data, path, all)
}

// parseSettings parses the content of the settings file path (see readSettings).
func parseSettings(data []byte, path string, all []setting) (map[string]any, []ignoredKey, error) {
	keys := make([]settingsfile.Key, len(all))
	for i, s := range all {
		keys[i] = settingsfile.Key{Name: s.key, Kind: s.kind, PerRun: s.perRun}
	}
	out, left, err := settingsfile.Parse(data, keys)
	var ve *settingsfile.ValueError
	switch {
	case errors.As(err, &ve):
		return nil, nil, usageErrorf("settings file %s: %v", path, ve)
	case err != nil:
		return nil, nil, usageErrorf("malformed settings file %s: %v", path, errors.Unwrap(err))
	}
	var ignored []ignoredKey
	for _, l := range left {
		reason := "unknown key"
		if l.PerRun {
			key := strings.ToLower(l.Key)
			reason = fmt.Sprintf("set it with --%s or %s", key, envName(key))
		}
		ignored = append(ignored, ignoredKey{path, l.Key, reason})
	}
	return out, ignored, nil
}

// checkValue reports whether val, from the environment (a string) or YAML, can be
// decoded as k.
func checkValue(k kind, val any) error { return settingsfile.Check(k, val) }
