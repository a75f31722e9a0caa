package cmd

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// SessionsListOptions are the inputs of `stoke sessions list`.
type SessionsListOptions struct {
	Out io.Writer
	// Home is $STOKE_HOME; CWD picks the project whose sessions are listed.
	Home string
	CWD  string
	// JSON asks for a JSON array instead of a table.
	JSON bool
}

// NewCmdSessions returns `stoke sessions` with its `list` subcommand, which calls listF
// (listSessions when nil).
func NewCmdSessions(deps *Deps, listF func(context.Context, SessionsListOptions) error) *cobra.Command {
	if listF == nil {
		listF = listSessions
	}
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "Inspect stored sessions",
		RunE:  groupRunE,
	}
	var opts SessionsListOptions
	list := &cobra.Command{
		Use:   "list",
		Short: "List the stored sessions of this working directory",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cwd, err := deps.Getwd()
			if err != nil {
				return fmt.Errorf("get working directory: %w", err)
			}
			home, err := stokeHome(deps, cwd)
			if err != nil {
				return err
			}
			opts.Out, opts.Home, opts.CWD = deps.Out, home, cwd
			return listF(c.Context(), opts)
		},
	}
	list.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array")
	cmd.AddCommand(list)
	return cmd
}

// listSessions prints the stored sessions.
//
// TODO(sessions on disk): read $STOKE_HOME/projects/<cwd-key>/*/ through the agents
// package; until then there is nothing to list.
func listSessions(_ context.Context, opts SessionsListOptions) error {
	if opts.JSON {
		_, err := fmt.Fprintln(opts.Out, "[]")
		return err
	}
	tw := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION ID\tUPDATED\tPROMPT")
	return tw.Flush()
}
