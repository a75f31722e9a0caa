package cmd

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/agents/report"
	"github.com/stoke-cli/stoke/agents/store"
)

// SessionsReportOptions are the inputs of `stoke sessions report`.
type SessionsReportOptions struct {
	Out io.Writer
	// Home is $STOKE_HOME; CWD is where the session is looked up first (the most recent
	// session of CWD without ID) and where a relative Output goes.
	Home, CWD string
	// ID is the session (empty: the most recent of CWD).
	ID string
	// Output is the report's path ("-": stdout; default stoke-report-<id>.<ext> in CWD).
	Output string
	Format report.Format
	// Report says how the session is read (prices, redaction, the generator's version).
	Report report.Options
}

// NewCmdSessionsReport returns `stoke sessions report [SESSION_ID] [-o FILE] [--format
// html|markdown|json]`, which calls runF (reportSession when nil).
func NewCmdSessionsReport(deps *Deps, runF func(context.Context, SessionsReportOptions) error) *cobra.Command {
	if runF == nil {
		runF = reportSession
	}
	var opts SessionsReportOptions
	var format string
	cmd := &cobra.Command{
		Use:   "report [SESSION_ID]",
		Short: "Draw a session: a self-contained HTML timeline, a Markdown job summary, or its JSON model",
		Long: `Draw a stored session (the most recent of this working directory without SESSION_ID):
one lane for the parent and one per agent, each turn a bar from its start to its end
coloured by how it ran (fresh, resident, revived) and how it ended, the notifications the
parent received, queued time, each turn's tool calls, tokens and cost, the agents table and
every lane's conversation. html (the default) is one self-contained page that opens
offline; markdown is a GitHub job summary with a Mermaid gantt; json is the model both are
drawn from (docs/report.md). The report goes to stoke-report-SESSION_ID.html (.md, .json)
unless -o names a file (- for stdout); its path is printed. Secrets a run here would
redact are redacted. The report only reads the session.`,
		Args: maxArgs(1, "SESSION_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			f, err := report.ParseFormat(format)
			if err != nil {
				return usageErrorf("--format: %v", err)
			}
			cwd, home, err := projectPaths(deps)
			if err != nil {
				return err
			}
			pol, err := homeSecrets(deps, home)
			if err != nil {
				return err
			}
			prices, err := homePrices(home)
			if err != nil {
				return err
			}
			opts.Out, opts.Home, opts.CWD, opts.Format = deps.Out, home, cwd, f
			if len(args) == 1 {
				opts.ID = args[0]
			}
			opts.Report = report.Options{Prices: prices, Redact: pol.Redact, Generator: deps.Version}
			return runF(c.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write the report to `FILE` (- for stdout)")
	cmd.Flags().StringVar(&format, "format", string(report.FormatHTML), "html | markdown | json")
	return cmd
}

// reportSession draws the session and writes the report.
func reportSession(_ context.Context, opts SessionsReportOptions) error {
	var found store.Stored
	var err error
	if opts.ID != "" {
		found, err = store.Find(opts.Home, opts.CWD, opts.ID)
	} else {
		found, err = store.Latest(opts.Home, opts.CWD)
	}
	if err != nil {
		return usageErrorf("report: %v", err)
	}
	rep, err := report.Load(found, opts.Report)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if opts.Output == "-" {
		return report.Render(opts.Out, rep, opts.Format)
	}
	path := opts.Output
	if path == "" {
		path = "stoke-report-" + found.Info.SessionID + opts.Format.Ext()
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(opts.CWD, path)
	}
	if err := report.WriteFile(path, rep, opts.Format); err != nil {
		return err
	}
	_, err = fmt.Fprintln(opts.Out, path)
	return err
}

// homePrices is the price table of a command that handles stored sessions: the built-in
// prices and the home settings' prices: (a project's are not read).
func homePrices(home string) (price.Table, error) {
	path := filepath.Join(home, settingsFile)
	m, _, err := readSettings(path, settings())
	if err != nil {
		return price.Table{}, err
	}
	var files settingsFiles
	if err := files.merge(settingsLayer{path: path, m: m}, ""); err != nil {
		return price.Table{}, err
	}
	return price.Default().With(files.prices), nil
}

// maxArgs accepts at most n positional arguments (named name in the message).
func maxArgs(n int, name string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) > n {
			return usageErrorf("%s takes at most %d argument (%s), got %s", c.CommandPath(), n, name, strings.Join(args, " "))
		}
		return nil
	}
}
