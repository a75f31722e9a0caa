package cmd

import (
	"context"
	"log/slog"

	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/stoke-cli/stoke/headless"
	"github.com/stoke-cli/stoke/headless/acp"
)

// addACPFlags declares --acp and the name Gemini CLI gives it.
func addACPFlags(f *pflag.FlagSet) {
	f.Bool("acp", false, "serve the Agent Client Protocol on stdin and stdout for an editor (Zed, JetBrains, Neovim, Emacs): many sessions, the prompts from the editor (docs/acp.md)")
	f.Bool("experimental-acp", false, "the same as --acp")
	_ = f.MarkHidden("experimental-acp")
}

// acpMode reports whether the run serves ACP: --acp, --experimental-acp or STOKE_ACP.
func acpMode(f *pflag.FlagSet, cfg *Config) bool {
	alias, _ := f.GetBool("experimental-acp")
	return cfg.ACP || alias
}

// checkACP refuses what a run's command line gives and an ACP server takes from its
// client instead.
func checkACP(cfg *Config) error {
	for _, key := range []string{"prompt", "resume", "continue", "session-id", "fork-session"} {
		if cfg.given(key) {
			return usageErrorf("--acp takes its prompts and sessions from the client: %s%s cannot be used with it", key, cfg.from(key))
		}
	}
	return nil // --input-format and --output-format are the protocol's: ignored
}

// serveACP is the RunFunc of `stoke --acp`: base, the run's options, are those of a
// session in the launch directory; a session elsewhere gets its own (sessionOptions).
func serveACP(deps *Deps, flags *pflag.FlagSet, home string, logger *slog.Logger) RunFunc {
	return func(ctx context.Context, base headless.Options) error {
		return acp.Serve(ctx, acp.Config{
			In: deps.In, Out: deps.Out, Logger: logger, Version: deps.Version, Home: base.Home, Model: base.Model,
			NewSessionID: deps.NewSessionID,
			Options: func(cwd string) (headless.Options, error) {
				return sessionOptions(base, deps, flags, home, cwd, logger)
			},
		})
	}
}

// sessionOptions are the options of an ACP session in cwd: the launch's (base), with
// what comes from cwd's project taken from cwd's settings as a run started there would
// take them (a project may only narrow what it is not trusted with): the approval mode,
// the background caps and policy, hooks, trust, the MCP servers, model aliases, the
// secrets policy. The provider and model stay the launch's.
func sessionOptions(base headless.Options, deps *Deps, flags *pflag.FlagSet, home, cwd string, logger *slog.Logger) (headless.Options, error) {
	if cwd == base.CWD {
		return base, nil
	}
	cfg, ignored, err := loadConfig(viper.New(), configInput{flags: flags, lookupEnv: deps.LookupEnv, cwd: cwd, home: home})
	if err != nil {
		return headless.Options{}, err
	}
	if _, err := cfg.validate(); err != nil {
		return headless.Options{}, err
	}
	log := logger.With("cwd", cwd)
	for _, k := range ignored {
		k.log(log)
	}
	mcpOpts, err := mcpOptions(flags, cfg, deps.LookupEnv, cwd, log)
	if err != nil {
		return headless.Options{}, err
	}
	o := base
	o.CWD = cwd
	o.ApprovalMode, o.BackgroundOnExit = cfg.ApprovalMode, cfg.BackgroundOnExit
	o.MaxTurns, o.MaxBackground, o.MaxForeground, o.MaxQueued = cfg.MaxTurns, cfg.MaxBackground, cfg.MaxForeground, cfg.MaxQueued
	o.BackgroundAgents, o.Bare, o.TrustProject = !cfg.NoBackgroundAgents, cfg.Bare, cfg.Trusted
	o.Hooks, o.ModelAliases, o.MCP = cfg.Hooks, cfg.ModelAliases, mcpOpts
	o.Secrets = cfg.secretsPolicy(deps.LookupEnv, deps.environ())
	return o, nil
}
