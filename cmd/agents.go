package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/store"
)

// AgentsListOptions are the inputs of `stoke agents list`.
type AgentsListOptions struct {
	Out io.Writer
	Err io.Writer
	// Home is $STOKE_HOME; CWD picks the project.
	Home string
	CWD  string
	// Session is the session whose roster is listed; empty means the most recent one.
	Session string
	// JSON asks for a JSON array instead of a table.
	JSON bool
}

// NewCmdAgents returns `stoke agents` with its `list` subcommand, which calls listF
// (listAgents when nil), and its `check` subcommand.
func NewCmdAgents(deps *Deps, listF func(context.Context, AgentsListOptions) error) *cobra.Command {
	if listF == nil {
		listF = listAgents
	}
	cmd := &cobra.Command{
		Use:   "agents",
		Short: "Inspect agent definitions and the agent rosters stored on disk",
		RunE:  groupRunE,
	}
	cmd.AddCommand(newCmdAgentsCheck(deps))
	var opts AgentsListOptions
	list := &cobra.Command{
		Use:   "list",
		Short: "List a session's agents as stored on disk",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cwd, home, err := projectPaths(deps)
			if err != nil {
				return err
			}
			opts.Out, opts.Err, opts.Home, opts.CWD = deps.Out, deps.ErrOut, home, cwd
			return listF(c.Context(), opts)
		},
	}
	list.Flags().StringVar(&opts.Session, "session", "", "session `ID` (default: the most recent session of this working directory)")
	list.Flags().BoolVar(&opts.JSON, "json", false, "print a JSON array")
	cmd.AddCommand(list)
	return cmd
}

// listAgents prints a session's agent roster as stored on disk (its sidecars).
func listAgents(_ context.Context, opts AgentsListOptions) error {
	var (
		found store.Stored
		err   error
	)
	if opts.Session != "" {
		found, err = store.Find(opts.Home, opts.CWD, opts.Session)
	} else {
		found, err = store.Latest(opts.Home, opts.CWD)
	}
	if err != nil {
		return usageErrorf("%v", err)
	}
	rows, warnings := agents.ReadSidecars(found.Session)
	for _, w := range warnings {
		fmt.Fprintln(opts.Err, "stoke: warning:", w)
	}
	if pid := found.Session.DeadWriter(); pid > 0 {
		n := 0
		for i := range rows {
			if rows[i].Status.Active() {
				rows[i].Status = agents.StatusPaused
				n++
			}
		}
		if n > 0 {
			fmt.Fprintf(opts.Err, "stoke: warning: the run that wrote session %s (pid %d) ended without closing it; its %d running or queued agent(s) are listed as paused, as --resume takes them\n", found.Info.SessionID, pid, n)
		}
	}
	if opts.JSON {
		if rows == nil {
			rows = []agents.Sidecar{}
		}
		enc := json.NewEncoder(opts.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	}
	tw := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK ID\tSTATUS\tTURN\tTYPE\tBACKGROUND\tDESCRIPTION")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%v\t%s\n", r.TaskID, r.Status, r.Turn, r.SubagentType, r.Backgrounded, r.Description)
	}
	return tw.Flush()
}
