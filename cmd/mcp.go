package cmd

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/stoke-cli/stoke/agents/mcp"
	"github.com/stoke-cli/stoke/headless"
)

// addMCPFlags declares the MCP flags (docs/mcp.md).
func addMCPFlags(f *pflag.FlagSet) {
	f.StringArray("mcp-config", nil, `MCP servers from a JSON `+"`FILE`"+` or JSON text, {"mcpServers": {...}} as Claude Code writes it (repeatable)`)
	f.Bool("strict-mcp-config", false, "use only the MCP servers of --mcp-config")
}

// mcpOptions gathers the run's MCP servers: the mcp-servers settings, the project's
// .mcp.json when it is trusted (--trust-project or STOKE_TRUST_PROJECT) and not --bare,
// and --mcp-config (or STOKE_MCP_CONFIG); only the last with --strict-mcp-config (or
// STOKE_STRICT_MCP_CONFIG). MCP_TIMEOUT (milliseconds, as Claude Code reads it) bounds
// each server's start, MCP_TOOL_TIMEOUT (milliseconds too) each tool call. A bad --mcp-config or setting is a usage error; what is skipped
// is logged.
func mcpOptions(flags *pflag.FlagSet, cfg *Config, lookupEnv func(string) (string, bool), cwd string, logger *slog.Logger) (headless.MCPOptions, error) {
	opts, warnings, err := loadMCP(flags, cfg, lookupEnv, cwd)
	for _, w := range warnings {
		logger.Warn("MCP configuration", "warning", w)
	}
	return opts, err
}

// loadMCP is mcpOptions without the logging: it returns what was skipped.
func loadMCP(flags *pflag.FlagSet, cfg *Config, lookupEnv func(string) (string, bool), cwd string) (headless.MCPOptions, []string, error) {
	in := configInput{flags: flags, lookupEnv: lookupEnv}
	strict, err := boolFromFlagOrEnv(in, "strict-mcp-config")
	if err != nil {
		return headless.MCPOptions{}, nil, err
	}
	configs, _ := flags.GetStringArray("mcp-config")
	if v, ok := lookupEnv(envName("mcp-config")); ok && len(configs) == 0 && v != "" {
		configs = []string{v}
	}
	project := cwd
	if cfg.Bare {
		project = ""
	}
	servers, warnings, err := mcp.Load(mcp.LoadInput{
		Configs: configs, WorkDir: cwd, Strict: strict,
		Settings: cfg.MCPServers, SettingsSource: cfg.sources["mcp-servers"],
		ProjectDir: project, Trusted: cfg.Trusted, LookupEnv: lookupEnv,
	})
	if err != nil {
		return headless.MCPOptions{}, nil, usageErrorf("MCP configuration: %v", err)
	}
	opts := headless.MCPOptions{Servers: servers, Strict: strict, TrustProject: cfg.Trusted}
	for _, t := range []struct {
		name string
		dst  *time.Duration
	}{{"MCP_TIMEOUT", &opts.StartTimeout}, {"MCP_TOOL_TIMEOUT", &opts.CallTimeout}} {
		if v, ok := lookupEnv(t.name); ok && v != "" {
			ms, err := strconv.Atoi(v)
			if err != nil || ms <= 0 {
				return headless.MCPOptions{}, warnings, usageErrorf("%s=%q: want a number of milliseconds", t.name, v)
			}
			*t.dst = time.Duration(ms) * time.Millisecond
		}
	}
	return opts, warnings, nil
}
