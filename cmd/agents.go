package cmd

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// AgentsListOptions are the inputs of `stoke agents list`.
type AgentsListOptions struct {
	Out io.Writer
	// Home is $STOKE_HOME; CWD picks the project.
	Home string
	CWD  string
	// Session is the session whose roster is listed; empty means the most recent one.
	Session string
	// JSON asks for a JSON array instead of a table.
	JSON bool
}

// NewCmdAgents returns `stoke agents` with its `list` subcommand, which calls listF
// (listAgents when nil).
func NewCmdAgents(deps *Deps, listF func(context.Context, AgentsListOptions) error) *cobra.Command {
	if listF == nil {
		listF = listAgents
	}
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "Inspect the agent rosters stored on disk",
		RunE:  groupRunE,
	}
	var opts AgentsListOptions
	list := &cobra.Command{
		Use:   "list",
		Short: "List a session's agents as stored on disk",
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
	list.Flags().StringVar(&opts.Session, "session", "", "session `ID` (default: the most recent session of this working directory)")
	list.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array")
	cmd.AddCommand(list)
	return cmd
}

// listAgents prints a session's stored agent roster.
//
// TODO(sessions on disk): read the agents/*.meta.json sidecars of the session through the
// agents package; until then there is nothing to list.
func listAgents(_ context.Context, opts AgentsListOptions) error {
	if opts.JSON {
		_, err := fmt.Fprintln(opts.Out, "[]")
		return err
	}
	tw := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK ID\tSTATUS\tTURN\tTYPE\tDESCRIPTION")
	return tw.Flush()
}
