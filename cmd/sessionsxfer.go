package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/store"
)

// SessionsExportOptions are the inputs of `stoke sessions export`.
type SessionsExportOptions struct {
	Out io.Writer
	// Home is $STOKE_HOME; CWD is where the session is looked up first and where a
	// relative Output goes.
	Home, CWD string
	// ID is the session to export.
	ID string
	// Output is the archive's path ("-": stdout; default <ID>.tar.gz in CWD).
	Output string
	// Redact is applied to every line of the archive's files (nil: none): what a run
	// here redacts (homeSecrets), which the run that wrote the session may not have.
	Redact func(string) string
}

// NewCmdSessionsExport returns `stoke sessions export ID [-o FILE]`, which calls runF
// (exportSession when nil).
func NewCmdSessionsExport(deps *Deps, runF func(context.Context, SessionsExportOptions) error) *cobra.Command {
	if runF == nil {
		runF = exportSession
	}
	var opts SessionsExportOptions
	cmd := &cobra.Command{
		Use:   "export SESSION_ID",
		Short: "Write a session to one archive (tar.gz) to carry it to another machine or CI job",
		Long: `Write the session's files (session.json, the parent's transcript, every agent's
transcript and sidecar) to one gzip-compressed tar archive, with paths relative to the
session. The secrets a run here redacts (the provider keys and the env-deny variables of
this environment, the api-key of the home settings) are redacted in the archive too. stoke sessions import unpacks it under another STOKE_HOME and binds it to the
directory it is run in. The archive is written to SESSION_ID.tar.gz unless -o names a
file (- for stdout); its path is printed. Export only reads the session.`,
		Args: exactArgs(1, "SESSION_ID"),
		RunE: func(c *cobra.Command, args []string) error {
			cwd, home, err := projectPaths(deps)
			if err != nil {
				return err
			}
			pol, err := homeSecrets(deps, home)
			if err != nil {
				return err
			}
			opts.Out, opts.Home, opts.CWD, opts.ID, opts.Redact = deps.Out, home, cwd, args[0], pol.Redact
			return runF(c.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write the archive to `FILE` (- for stdout)")
	return cmd
}

// exportSession writes the archive (store.ExportFile: it appears at the output's path
// only once complete, and an export killed half way leaves nothing the next one does not
// remove).
func exportSession(_ context.Context, opts SessionsExportOptions) error {
	found, err := store.Find(opts.Home, opts.CWD, opts.ID)
	if err != nil {
		return usageErrorf("export: %v", err)
	}
	if opts.Output == "-" {
		return store.Export(opts.Out, found, opts.Redact)
	}
	path := opts.Output
	if path == "" {
		path = found.Info.SessionID + ".tar.gz"
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(opts.CWD, path)
	}
	if err := store.ExportFile(path, found, opts.Redact); err != nil {
		return err
	}
	_, err = fmt.Fprintln(opts.Out, path)
	return err
}

// SessionsImportOptions are the inputs of `stoke sessions import`.
type SessionsImportOptions struct {
	Out, Err io.Writer
	// Home is $STOKE_HOME; CWD is the working directory the session is bound to.
	Home, CWD string
	// File is the archive.
	File string
}

// NewCmdSessionsImport returns `stoke sessions import FILE`, which calls runF
// (importSession when nil).
func NewCmdSessionsImport(deps *Deps, runF func(context.Context, SessionsImportOptions) error) *cobra.Command {
	if runF == nil {
		runF = importSession
	}
	var opts SessionsImportOptions
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Unpack a session archive and bind it to this working directory",
		Long: `Unpack an archive written by stoke sessions export under STOKE_HOME and bind the
session to the current working directory: its agents that ran in the exported session's
directory are continuable here (stoke --resume SESSION_ID). The session id is printed.
An archive with entries outside the session layout, paths that leave it, links, more
than 1 GiB of files, or a session id already stored here is refused with one line, and
nothing is written.`,
		Args: exactArgs(1, "FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			cwd, home, err := projectPaths(deps)
			if err != nil {
				return err
			}
			opts.Out, opts.Err, opts.Home, opts.CWD, opts.File = deps.Out, deps.ErrOut, home, cwd, args[0]
			return runF(c.Context(), opts)
		},
	}
	return cmd
}

func importSession(_ context.Context, opts SessionsImportOptions) error {
	path := opts.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(opts.CWD, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return usageErrorf("import: %v", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && !st.Mode().IsRegular() {
		return usageErrorf("import %s: not a regular file", opts.File)
	}
	st, warnings, err := store.Import(f, store.ImportOptions{Home: opts.Home, CWD: opts.CWD, Sidecar: agents.BindSidecar(opts.CWD)})
	switch {
	case errors.Is(err, store.ErrBadArchive), errors.Is(err, store.ErrExists), errors.Is(err, store.ErrUnknownSession):
		return usageErrorf("import %s: %v", opts.File, err)
	case err != nil:
		return fmt.Errorf("import %s: %w", opts.File, err)
	}
	for _, w := range warnings {
		fmt.Fprintln(opts.Err, "stoke: warning:", w)
	}
	_, err = fmt.Fprintln(opts.Out, st.Info.SessionID)
	return err
}

// exactArgs accepts exactly n arguments, named name in the message.
func exactArgs(n int, name string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		switch {
		case len(args) < n:
			return usageErrorf("missing %s for %q (see '%s --help')", name, c.CommandPath(), c.CommandPath())
		case len(args) > n:
			return usageErrorf("unexpected argument %q for %q", args[n], c.CommandPath())
		}
		return nil
	}
}
