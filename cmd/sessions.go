package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/stoke-cli/stoke/agents/store"
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
// (listSessions when nil), and `export`, `import` and `report`.
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
			cwd, home, err := projectPaths(deps)
			if err != nil {
				return err
			}
			opts.Out, opts.Home, opts.CWD = deps.Out, home, cwd
			return listF(c.Context(), opts)
		},
	}
	list.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array")
	cmd.AddCommand(list, NewCmdSessionsExport(deps, nil), NewCmdSessionsImport(deps, nil), NewCmdSessionsReport(deps, nil))
	return cmd
}

// listSessions prints the stored sessions of the working directory, newest first.
func listSessions(_ context.Context, opts SessionsListOptions) error {
	all, err := store.List(opts.Home)
	if err != nil {
		return err
	}
	mine := make([]store.Info, 0, len(all))
	for _, s := range all {
		if s.In(opts.CWD) {
			mine = append(mine, s.Info)
		}
	}
	if opts.JSON {
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(mine)
	}
	tw := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION ID\tUPDATED\tMODEL")
	for _, s := range mine {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.SessionID, s.UpdatedAt.Local().Format(time.DateTime), s.Model)
	}
	return tw.Flush()
}

// projectPaths returns the working directory and $STOKE_HOME, for the commands that read
// what is stored on disk.
func projectPaths(deps *Deps) (cwd, home string, err error) {
	if cwd, err = deps.Getwd(); err != nil {
		return "", "", fmt.Errorf("get working directory: %w", err)
	}
	home, err = stokeHome(deps, cwd)
	return cwd, home, err
}
