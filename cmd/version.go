package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

// NewCmdVersion returns `stoke version`.
func NewCmdVersion(deps *Deps) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print stoke's version and the Go version it was built with",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(deps.Out, versionLine(deps.Version))
			return err
		},
	}
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
