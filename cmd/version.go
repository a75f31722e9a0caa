package cmd

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stoke-cli/stoke/agents/sandbox"
)

// BuildInfo is what `stoke version` reports: the module version, and the VCS stamp the Go
// toolchain records when it builds from a checkout (go build in a git work tree; a
// go install of a tagged version carries the version but no VCS stamp).
type BuildInfo struct {
	Version  string `json:"version"`
	Module   string `json:"module"`
	Revision string `json:"revision,omitempty"`
	// Time is the commit time of Revision (RFC 3339), not the build time.
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	// Sandbox is what this machine's kernel offers the sandbox (README: Sandbox).
	Sandbox sandbox.Support `json:"sandbox"`
}

// readBuildInfo fills a BuildInfo from the binary's build information.
func readBuildInfo(version string) BuildInfo {
	info := BuildInfo{Version: version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	info.Module = bi.Main.Path
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.time":
			info.Time = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// NewCmdVersion returns `stoke version [--json]`.
func NewCmdVersion(deps *Deps) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print stoke's version, the commit it was built from, and the Go version",
		Long: `Print stoke's version and build information: the module version, the VCS
revision, commit time and modified flag that the Go toolchain stamps into a binary
built from a git checkout, the Go version and platform, and what this machine's kernel
offers the sandbox. --json prints one object: {version, module, revision, time,
modified, go, os, arch, sandbox: {landlock_abi, seccomp, enforced, reason}}.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			info := readBuildInfo(deps.Version)
			info.Sandbox = sandbox.Probe()
			if asJSON {
				b, err := json.Marshal(info)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(deps.Out, "%s\n", b)
				return err
			}
			var b strings.Builder
			b.WriteString(versionLine(deps.Version) + "\n")
			if info.Module != "" {
				fmt.Fprintf(&b, "module:   %s\n", info.Module)
			}
			if info.Revision != "" {
				rev := info.Revision
				if info.Modified {
					rev += " (modified)"
				}
				fmt.Fprintf(&b, "revision: %s\n", rev)
			}
			if info.Time != "" {
				fmt.Fprintf(&b, "time:     %s\n", info.Time)
			}
			fmt.Fprintf(&b, "sandbox:  %s\n", supportLine(info.Sandbox))
			_, err := fmt.Fprint(deps.Out, b.String())
			return err
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// supportLine says what the kernel offers the sandbox, on one line.
func supportLine(s sandbox.Support) string {
	line := fmt.Sprintf("Landlock ABI %d, seccomp %v: ", s.LandlockABI, s.Seccomp)
	if s.Enforced {
		return line + "enforced"
	}
	return line + "not enforced (" + s.Reason + ")"
}

// noArgs rejects positional arguments with a usage error.
func noArgs(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unexpected argument %q for %q", args[0], c.CommandPath())
	}
	return nil
}

// groupRunE makes a command that only groups subcommands fail with a usage error
// instead of printing help and exiting 0.
func groupRunE(c *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("unknown command %q for %q (see '%s --help')", args[0], c.CommandPath(), c.CommandPath())
	}
	return usageErrorf("missing command (see '%s --help')", c.CommandPath())
}
