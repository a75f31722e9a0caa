package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents/secrets"
)

// Names of the workspace tools.
const (
	NameReadFile  = "read_file"
	NameWriteFile = "write_file"
	NameEdit      = "edit"
	NameGlob      = "glob"
	NameGrep      = "grep"
	NameShell     = "shell"
)

// WorkspaceToolNames returns the names of the workspace tools, in the order Tools returns them.
func WorkspaceToolNames() []string {
	return []string{NameReadFile, NameWriteFile, NameEdit, NameGlob, NameGrep, NameShell}
}

// CanonicalName maps a tool name of an allow-list to a workspace tool: stoke's own names,
// and Claude Code's Read, Write, Edit, MultiEdit, Glob, LS, Grep and Bash.
func CanonicalName(name string) (string, bool) {
	switch name {
	case NameReadFile, "Read":
		return NameReadFile, true
	case NameWriteFile, "Write":
		return NameWriteFile, true
	case NameEdit, "Edit", "MultiEdit":
		return NameEdit, true
	case NameGlob, "Glob", "LS":
		return NameGlob, true
	case NameGrep, "Grep":
		return NameGrep, true
	case NameShell, "Bash":
		return NameShell, true
	}
	return "", false
}

// Shell timeouts: the default, and the most a call may ask for with timeout_ms.
const (
	DefaultShellTimeout = 2 * time.Minute
	MaxShellTimeout     = 10 * time.Minute
)

// Limits bound what the tools return, so that one call cannot flood the model's context.
// A zero field takes its default.
type Limits struct {
	ReadLines     int // lines read_file returns when no limit is given (2000)
	LineChars     int // characters of one line read_file shows; the rest is cut (2000)
	ReadChars     int // characters read_file returns in all; it stops at a line before (100000)
	GrepLineChars int // characters of one matching line grep shows (500)
	GrepMatches   int // matching lines grep returns (500)
	GlobResults   int // paths glob returns (1000)
	OutputChars   int // characters of a grep, glob or shell result; shell keeps the head and the tail (30000)
}

func (l Limits) withDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.ReadLines, 2000)
	def(&l.LineChars, 2000)
	def(&l.ReadChars, 100000)
	def(&l.GrepLineChars, 500)
	def(&l.GrepMatches, 500)
	def(&l.GlobResults, 1000)
	def(&l.OutputChars, 30000)
	return l
}

// Option configures a Workspace.
type Option func(*Workspace)

// WithApprover sets the Approver asked about calls the mode does not allow by itself.
func WithApprover(a Approver) Option { return func(w *Workspace) { w.approver = a } }

// WithDenialHook sets a function called with every refused call (for the result line's
// permission_denials). It may be called from several goroutines at once.
func WithDenialHook(f func(Denial)) Option { return func(w *Workspace) { w.onDenial = f } }

// WithDenier sets the rules that refuse calls before the approval mode is asked.
func WithDenier(d Denier) Option { return func(w *Workspace) { w.deny = d } }

// WithSecrets sets the secrets policy: the shell tool runs with the environment it
// leaves, and every tool result is redacted with it. Without it the provider keys are
// still kept out of the shell (a nil *secrets.Policy).
func WithSecrets(p *secrets.Policy) Option { return func(w *Workspace) { w.secrets = p } }

// WithLimits sets the output limits; zero fields keep their defaults.
func WithLimits(l Limits) Option { return func(w *Workspace) { w.limits = l.withDefaults() } }

// Workspace is a directory the tools work in, and the approval mode they work under. Every
// path a tool is given goes through Resolve. A Workspace is immutable and safe for
// concurrent use; the tools of one Workspace (and of its WithMode copies) serialise their
// file edits.
type Workspace struct {
	root     string // absolute, symlinks resolved
	alias    string // the root as given, made absolute, when it differs from root
	mode     Mode
	approver Approver
	onDenial func(Denial)
	deny     Denier
	secrets  *secrets.Policy
	limits   Limits
	files    Files       // nil: the disk (WithFiles)
	terminal Terminal    // nil: the shell runs its commands itself (WithTerminal)
	edits    *sync.Mutex // held by write_file and edit for their read-modify-write
	schemas  *schemaCache
}

// NewWorkspace returns a workspace rooted at the directory root (made absolute, symlinks
// resolved) under the given approval mode.
func NewWorkspace(root string, mode Mode, opts ...Option) (*Workspace, error) {
	if mode.Rank() < 0 {
		return nil, fmt.Errorf("new workspace: %w %q", ErrUnknownMode, mode)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("new workspace: %w", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("new workspace: %w", err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("new workspace: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("new workspace: %s is not a directory", root)
	}
	w := &Workspace{root: real, mode: mode, limits: Limits{}.withDefaults(), edits: new(sync.Mutex), schemas: new(schemaCache)}
	if abs != real {
		w.alias = abs
	}
	for _, o := range opts {
		o(w)
	}
	return w, nil
}

// Root returns the workspace root: absolute, symlinks resolved.
func (w *Workspace) Root() string { return w.root }

// Mode returns the approval mode.
func (w *Workspace) Mode() Mode { return w.mode }

// WithMode returns a copy of w under another approval mode (for a subagent whose definition
// sets one). The copy shares w's options and its edit lock.
func (w *Workspace) WithMode(m Mode) (*Workspace, error) {
	if m.Rank() < 0 {
		return nil, fmt.Errorf("workspace mode: %w %q", ErrUnknownMode, m)
	}
	c := *w
	c.mode = m
	return &c, nil
}

// With returns a copy of w with more options applied (another Approver or Denier for one
// agent). The copy shares w's edit lock.
func (w *Workspace) With(opts ...Option) *Workspace {
	c := *w
	for _, o := range opts {
		o(&c)
	}
	return &c
}

// Tools returns the workspace tools, gated by the approval mode: all six when allow is
// empty, else those allow names (stoke's names or Claude Code's, see CanonicalName), in
// the order of WorkspaceToolNames. Names that match no workspace tool are returned as
// unknown, in order, so that the caller can warn about them.
func (w *Workspace) Tools(allow []string) (ts []Tool, unknown []string) {
	want := map[string]bool{}
	for _, n := range allow {
		if c, ok := CanonicalName(n); ok {
			want[c] = true
		} else {
			unknown = append(unknown, n)
		}
	}
	all := []struct {
		name string
		tool Tool
		kind Kind
	}{
		{NameReadFile, readFileTool{w}, KindRead},
		{NameWriteFile, writeFileTool{w}, KindEdit},
		{NameEdit, editTool{w}, KindEdit},
		{NameGlob, globTool{w}, KindRead},
		{NameGrep, grepTool{w}, KindRead},
		{NameShell, shellTool{w: w}, KindExec},
	}
	for _, t := range all {
		if len(allow) == 0 || want[t.name] {
			ts = append(ts, gate{tool: t.tool, kind: t.kind, w: w})
		}
	}
	return ts, unknown
}

// Resolve maps a path argument to an absolute path inside the workspace, symlinks resolved.
// p is relative to the root, or absolute inside it (the root as given to NewWorkspace
// counts too); "" is the root. It is refused with ErrOutsideWorkspace when it leads
// outside the root, lexically or through a symbolic link in any component (the last
// included), and with ErrDanglingSymlink when it goes through a link to nothing. The parts
// of p that do not exist yet (a file or directories to create) are kept as given.
func (w *Workspace) Resolve(p string) (string, error) {
	rel, ok := "", false
	switch {
	case p == "":
		return w.root, nil
	case filepath.IsAbs(p):
		c := filepath.Clean(p)
		if rel, ok = within(w.root, c); !ok && w.alias != "" {
			rel, ok = within(w.alias, c)
		}
	default:
		rel = filepath.Clean(p)
		ok = rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
	}
	if !ok {
		return "", fmt.Errorf("%q is %w %s", p, ErrOutsideWorkspace, w.root)
	}
	cur := w.root
	parts := strings.Split(rel, string(filepath.Separator))
	for i, part := range parts {
		if part == "." || part == "" {
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) {
			// Nothing below a missing entry exists, so no symbolic link can follow.
			return filepath.Join(append([]string{next}, parts[i+1:]...)...), nil
		}
		if err != nil {
			return "", fmt.Errorf("%q: %w", p, unwrapPath(err))
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		link := w.display(next)
		target, err := filepath.EvalSymlinks(next)
		if err != nil {
			dest, _ := os.Readlink(next)
			if !filepath.IsAbs(dest) {
				dest = filepath.Join(cur, dest)
			}
			if _, in := within(w.root, filepath.Clean(dest)); !in {
				return "", fmt.Errorf("%q is %w %s: %s is a symbolic link to %s", p, ErrOutsideWorkspace, w.root, link, dest)
			}
			return "", fmt.Errorf("%q: %s is a %w (%s): %w", p, link, ErrDanglingSymlink, dest, unwrapPath(err))
		}
		if _, in := within(w.root, target); !in {
			return "", fmt.Errorf("%q is %w %s: %s is a symbolic link to %s", p, ErrOutsideWorkspace, w.root, link, target)
		}
		cur = target
	}
	return cur, nil
}

// RelPath returns p (relative to the root, or absolute inside it) as a clean slash path
// relative to the root, symbolic links resolved: every spelling of one file gives the same
// answer ("." for the root). Errors are Resolve's.
func (w *Workspace) RelPath(p string) (string, error) {
	abs, err := w.Resolve(p)
	if err != nil {
		return "", err
	}
	return w.display(abs), nil
}

// within returns p relative to dir when p is dir or below it (both absolute and clean).
func within(dir, p string) (string, bool) {
	if p == dir {
		return ".", true
	}
	prefix := dir
	if !strings.HasSuffix(prefix, string(filepath.Separator)) {
		prefix += string(filepath.Separator)
	}
	if rest, ok := strings.CutPrefix(p, prefix); ok {
		return rest, true
	}
	return "", false
}

// display returns abs (inside the root) as the tools show paths: relative to the root,
// with forward slashes; the root itself is ".".
func (w *Workspace) display(abs string) string {
	rel, ok := within(w.root, abs)
	if !ok {
		return abs
	}
	return filepath.ToSlash(rel)
}

// open returns the workspace root as an os.Root, through which the file tools touch the
// paths Resolve returned: Resolve gives the model clear refusals, and os.Root keeps a
// symbolic link swapped in between the check and the use from leading outside.
func (w *Workspace) open() (*os.Root, error) {
	r, err := os.OpenRoot(w.root)
	if err != nil {
		return nil, fmt.Errorf("open workspace root: %w", err)
	}
	return r, nil
}

// relName returns abs (a Resolve result) as a name for an os.Root of the workspace.
func (w *Workspace) relName(abs string) string {
	rel, ok := within(w.root, abs)
	if !ok {
		return abs // os.Root refuses it
	}
	return rel
}

// unwrapPath drops the *fs.PathError wrapper, whose absolute path the message already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
