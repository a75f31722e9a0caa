package cmd

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/pflag"

	"github.com/stoke-cli/stoke/agents/sandbox"
)

// addSandboxFlags declares the sandbox's flags (README: Sandbox). --sandbox alone is the
// default mode, as Qwen Code's SDK passes it (a boolean there).
func addSandboxFlags(f *pflag.FlagSet) {
	f.String("sandbox", string(sandbox.ModeWorkspaceWrite), "confine the shell tool's commands: "+sandbox.ModeNames(" | ")+" (README: Sandbox)")
	f.Lookup("sandbox").NoOptDefVal = string(sandbox.ModeWorkspaceWrite)
	f.StringArray("sandbox-writable", nil, "a `DIR` sandboxed commands may write besides the workspace and their TMPDIR (repeatable)")
	f.StringArray("sandbox-deny-read", nil, "a `PATH` sandboxed commands may not read, besides STOKE_HOME and the credential stores (repeatable)")
	f.Bool("sandbox-network", false, "let sandboxed commands use the network")
	f.Bool("sandbox-required", false, "refuse every shell command where the kernel cannot enforce the sandbox, instead of running it unconfined")
}

// narrowerSandbox: a project may confine more (read-only < workspace-write < off), never
// less.
func narrowerSandbox(v, base any) bool {
	rank := func(x any) int {
		m, err := sandbox.ParseMode(fmt.Sprint(x))
		if err != nil {
			return -1
		}
		return m.Rank()
	}
	r := rank(v)
	return r < 0 || r <= max(rank(base), 0) // an unknown mode fails validation
}

// sandboxLists are the sandbox's list keys, from the home settings and the flags.
func sandboxLists() []string { return []string{"sandbox-writable", "sandbox-deny-read"} }

// newSandbox makes the run's sandbox from the configuration: the mode, the paths of the
// home settings and of the flags (relative ones from the working directory), STOKE_HOME
// and the user's home. A --sandbox-writable directory that is not one is a usage error.
// When the kernel cannot enforce the mode it says so on one warning line.
func newSandbox(cfg *Config, flags *pflag.FlagSet, deps *Deps, cwd, home string, logger *slog.Logger) (*sandbox.Sandbox, error) {
	mode, err := sandbox.ParseMode(cfg.Sandbox)
	if err != nil {
		return nil, usageErrorf("invalid --sandbox %q%s: want one of %s", cfg.Sandbox, cfg.from("sandbox"), sandbox.ModeNames(", "))
	}
	abs := func(p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		return filepath.Clean(p)
	}
	writable := slices.Clone(cfg.SandboxWritable)
	deny := slices.Clone(cfg.SandboxDenyRead)
	if vals, err := flags.GetStringArray("sandbox-writable"); err == nil {
		writable = append(writable, vals...)
	}
	if vals, err := flags.GetStringArray("sandbox-deny-read"); err == nil {
		deny = append(deny, vals...)
	}
	for i, p := range writable {
		writable[i] = abs(p)
		if fi, err := os.Stat(writable[i]); err != nil || !fi.IsDir() {
			return nil, usageErrorf("--sandbox-writable %s: not a directory", p)
		}
	}
	for i, p := range deny {
		deny[i] = abs(p)
	}
	userHome, _ := deps.UserHomeDir()
	sb, err := sandbox.New(sandbox.Config{
		Mode: mode, Writable: writable, DenyRead: deny, Network: cfg.SandboxNetwork, Required: cfg.SandboxRequired,
		StokeHome: home, UserHome: userHome,
	}, cwd)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	if st := sb.Status(); mode != sandbox.ModeOff && !st.Enforced {
		if cfg.SandboxRequired {
			logger.Warn("sandbox not enforced: every shell command will be refused (--sandbox-required)", "mode", mode, "reason", st.Reason)
		} else {
			logger.Warn("sandbox not enforced: shell commands run unconfined (--sandbox-required refuses them instead)", "mode", mode, "reason", st.Reason)
		}
	}
	return sb, nil
}

// closeSandbox ends the run's sandbox: the processes its commands left are killed, and
// what the guard put back is logged.
func closeSandbox(sb *sandbox.Sandbox, logger *slog.Logger) {
	notes, err := sb.Close()
	for _, n := range notes {
		logger.Warn("sandbox", "note", n)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		logger.Warn("sandbox: remove the private TMPDIR", "err", err)
	}
}
