package catalog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/tools"
)

// LoadOptions says where LoadDefinitions looks, and how it resolves what it finds.
type LoadOptions struct {
	// ProjectDir is the project root (the working directory); "" reads no project
	// directory.
	ProjectDir string
	// UserStokeHome is $STOKE_HOME, resolved by the caller (its default is ~/.stoke);
	// "" reads no user directory. The loader itself reads no environment.
	UserStokeHome string
	// Bare skips the project's directories, as --bare skips the project's settings: a
	// repository's agent files carry prompts, tool lists, approval modes and hooks (shell
	// commands), all project configuration. The user's directory is still read, as the
	// user's settings are.
	Bare bool
	// TrustProject lets the project's agent files run commands: their hooks. Without it
	// a project agent's hooks are dropped with one warning per file (its approval mode is
	// capped by the run's either way; see Definition.CapMode). A project file that is a
	// symbolic link to a file outside the project is never read.
	TrustProject bool
	// ModelAliases maps the model values of agent files (sonnet, fast, ...) to model
	// names: the model-aliases settings. See ResolveModel.
	ModelAliases map[string]string
	// Provider is the run's provider, for model values written provider:model.
	Provider string
	// ParentModel is the model the parent runs on, which an agent whose model falls back
	// inherits; "" when there is none. It only decides whether such an agent can run
	// (Found.CannotRun).
	ParentModel string
	// Ceiling, when set, is the run's approval mode: every definition's mode is capped by
	// it (CapMode), with one warning per definition it lowers. A run leaves it empty and
	// caps the whole catalog itself, SDK agents included.
	Ceiling tools.Mode
}

// Scopes of a definition: where its file lives.
const (
	ScopeBuiltin = "built-in"
	ScopeUser    = "user"
	ScopeProject = "project"
)

// Found is one definition as the loader saw it: a file (or a built-in) and what became
// of it.
type Found struct {
	// Definition is the definition as a run uses it: tools mapped, model resolved,
	// hooks the trust rules allow, mode capped when LoadOptions.Ceiling is set. For a
	// file that was skipped (Err) it holds what could be read (maybe only Source).
	Definition Definition
	// Scope is ScopeBuiltin, ScopeUser or ScopeProject.
	Scope string
	// Rank is the source's place in the precedence order: 0 for the built-ins, then 1, 2,
	// ... for the directories of LoadOptions.Dirs. A definition replaces a same-named
	// one of a lower rank.
	Rank int
	// Model is what became of the model field.
	Model ModelResolution
	// UnknownTools are the names of its tools list that stoke has no tool for.
	UnknownTools []string
	// Warnings say what was ignored or changed, one line each, without the file name.
	Warnings []string
	// Err says why the file was skipped: it does not parse, has a bad field, is a
	// symbolic link out of the project, or repeats a name of its directory. "" when it
	// loaded.
	Err string
	// ShadowedBy is the Source of the definition of the same name that replaces this one
	// ("" when this one is used).
	ShadowedBy string
	// CannotRun says why the definition cannot run as written, one reason each: Err; a
	// tools list none of whose tools stoke has (and no MCP servers of its own); a model
	// that falls back when the parent has none. Empty when it can.
	CannotRun []string
}

// Inspection is everything LoadDefinitions found.
type Inspection struct {
	// Found lists the definitions in precedence order: the built-ins, then each directory
	// of LoadOptions.Dirs, its files in name order.
	Found []Found
	// Warnings are all the warnings, one line each naming its file (or directory), in the
	// order of Found.
	Warnings []string
	// DirWarnings are the warnings about directories rather than files (one that could
	// not be read), also in Warnings.
	DirWarnings []string
}

// dirWarning adds a warning about a directory.
func (in *Inspection) dirWarning(format string, args ...any) {
	w := fmt.Sprintf(format, args...)
	in.Warnings = append(in.Warnings, w)
	in.DirWarnings = append(in.DirWarnings, w)
}

// source is one directory LoadDefinitions reads.
type source struct {
	dir     string
	project bool // a directory of the project (a checkout, written by anyone)
}

// sources returns the directories to read, weakest first.
func (o LoadOptions) sources() []source {
	var out []source
	for _, d := range o.Dirs() {
		out = append(out, source{dir: d, project: o.UserStokeHome == "" || d != filepath.Join(o.UserStokeHome, "agents")})
	}
	return out
}

// Dirs returns the directories LoadDefinitions reads, weakest first.
func (o LoadOptions) Dirs() []string {
	var dirs []string
	if o.UserStokeHome != "" {
		dirs = append(dirs, filepath.Join(o.UserStokeHome, "agents"))
	}
	if o.ProjectDir != "" && !o.Bare {
		for _, d := range []string{".qwen", ".claude", ".stoke"} {
			dirs = append(dirs, filepath.Join(o.ProjectDir, d, "agents"))
		}
	}
	return dirs
}

// maxDefinitionSize bounds an agent file.
const maxDefinitionSize = 1 << 20

// LoadDefinitions returns the built-ins overlaid with the definition files of o.Dirs(),
// and one warning per file that was skipped (naming the file and the problem), per
// thing a file asked for that was ignored or changed, or per directory that could not
// be read. A directory that does not exist is no warning. Within a directory the *.md
// files are read in name order (hidden files and subdirectories are not read); a second
// file with a name already defined in the same directory is skipped with a warning. The
// result does not depend on the order in which the file system lists files.
func LoadDefinitions(o LoadOptions) (Catalog, []string) {
	in := Inspect(o)
	c := make(Catalog)
	for _, f := range in.Found {
		if f.Err == "" && f.ShadowedBy == "" {
			c[f.Definition.Name] = f.Definition
		}
	}
	return c, in.Warnings
}

// Inspect reads what LoadDefinitions reads and reports every definition it found,
// including those that were skipped or replaced. It runs nothing and starts nothing.
func Inspect(o LoadOptions) Inspection {
	var in Inspection
	for _, d := range BuiltinDefinitions() {
		in.Found = append(in.Found, Found{Definition: d, Scope: ScopeBuiltin})
	}
	seen := make(map[string]bool)
	for i, src := range o.sources() {
		key := src.dir
		if abs, err := filepath.Abs(src.dir); err == nil {
			key = abs
		}
		if seen[key] { // e.g. the project is $HOME and $STOKE_HOME is ~/.stoke
			continue
		}
		seen[key] = true
		in.readDir(o, src, i+1)
	}
	in.shadow()
	for i := range in.Found {
		in.Found[i].CannotRun = in.Found[i].problems(o)
	}
	return in
}

// readDir adds the definitions of one directory.
func (in *Inspection) readDir(o LoadOptions, src source, rank int) {
	entries, err := os.ReadDir(src.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		in.dirWarning("%s: read agent directory: %v", src.dir, err)
		return
	}
	scope, root := ScopeUser, ""
	if src.project {
		scope = ScopeProject
		if root, err = filepath.EvalSymlinks(o.ProjectDir); err != nil {
			in.dirWarning("%s: resolve the project directory: %v; its agent files are not read", o.ProjectDir, err)
			return
		}
	}
	byName := make(map[string]string)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".md") || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(src.dir, name)
		// A project file linked from outside the project is refused before it is read:
		// what a parse error quotes, or the definition itself, would show the target.
		outside := ""
		if real, err := filepath.EvalSymlinks(path); src.project && err == nil && !within(root, real) {
			outside = real
		}
		var p parsed
		var err error
		if outside == "" {
			if p, err = readDefinition(path); errors.Is(err, errNotAFile) {
				continue
			}
		}
		f := Found{Definition: p.def, Scope: scope, Rank: rank, UnknownTools: p.unknown, Warnings: p.warnings}
		f.Definition.Source = path
		if outside != "" {
			f.Err = fmt.Sprintf("is a symbolic link to %s, outside the project", outside)
		} else if err != nil {
			f.Err = oneLineMessage(err)
		} else if first, dup := byName[f.Definition.Name]; dup {
			f.Err = fmt.Sprintf("name %q is already defined by %s", f.Definition.Name, first)
		} else {
			byName[f.Definition.Name] = path
			f.resolve(o, src.project)
		}
		if f.Err != "" {
			f.Warnings = nil // what a skipped file asked for does not matter
			in.Warnings = append(in.Warnings, fmt.Sprintf("%s: %s; skipped", path, f.Err))
		}
		for _, w := range f.Warnings {
			in.Warnings = append(in.Warnings, path+": "+w)
		}
		in.Found = append(in.Found, f)
	}
}

// resolve applies the run's rules to a definition that loaded: the trust boundary for a
// project's (hooks dropped unless the project is trusted, and hook scripts linked from
// outside it), the model aliases, and the ceiling when there is one.
func (f *Found) resolve(o LoadOptions, project bool) {
	d := &f.Definition
	if project && d.HasHooks && !o.TrustProject {
		f.Warnings = append(f.Warnings, "hooks ignored: the project is not trusted (pass --trust-project or list it under trusted-projects in $STOKE_HOME/settings.yaml)")
		d.Hooks, d.HasHooks = nil, false
	}
	if project && d.HasHooks {
		var warns []string
		d.Hooks, warns = hooks.WithoutOutsideScripts(d.Hooks, o.ProjectDir)
		f.Warnings = append(f.Warnings, warns...)
		if d.HasHooks = d.Hooks.Len() > 0; !d.HasHooks {
			d.Hooks = nil
		}
	}
	f.Model = ResolveModel(d.Model, o.ModelAliases, o.Provider)
	d.Model = f.Model.Model
	if f.Model.Problem != "" {
		f.Warnings = append(f.Warnings, fmt.Sprintf("%s: the agent runs on the parent's model (map it under model-aliases in settings.yaml)", f.Model.Problem))
	}
	if o.Ceiling != "" {
		own := d.ApprovalMode
		var raised bool
		if *d, raised = d.CapMode(o.Ceiling); raised {
			f.Warnings = append(f.Warnings, fmt.Sprintf("approval mode %s ignored: it is above the run's (%s), which is a ceiling", own, o.Ceiling))
		}
	}
}

// shadow marks each definition that a stronger one of the same name replaces.
func (in *Inspection) shadow() {
	winner := make(map[string]int) // name -> index in Found
	for i, f := range in.Found {
		if f.Err != "" {
			continue
		}
		winner[f.Definition.Name] = i // later entries rank higher
	}
	for i, f := range in.Found {
		if w, ok := winner[f.Definition.Name]; ok && f.Err == "" && w != i {
			in.Found[i].ShadowedBy = in.Found[w].Definition.Source
		}
	}
}

// problems says why f cannot run as written (see Found.CannotRun).
func (f Found) problems(o LoadOptions) []string {
	if f.Err != "" {
		return []string{f.Err}
	}
	var out []string
	d := f.Definition
	if len(d.Tools) > 0 && len(f.UnknownTools) == len(d.Tools) && len(d.MCPServers) == 0 {
		out = append(out, fmt.Sprintf("tools: stoke has none of its tools (%s)", strings.Join(f.UnknownTools, ", ")))
	}
	if f.Model.Problem != "" && o.ParentModel == "" {
		out = append(out, f.Model.Problem+", and there is no parent model to fall back on")
	}
	return out
}

// within reports whether p is dir or below it (both clean and absolute).
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// oneLineMessage is err's message on one line (yaml's type errors span several).
func oneLineMessage(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// errNotAFile marks a directory entry that is not a regular file, such as a directory
// named x.md; it is passed over in silence. (A dangling symlink is a warning.)
var errNotAFile = errors.New("not a regular file")

func readDefinition(path string) (parsed, error) {
	info, err := os.Stat(path)
	if err != nil {
		return parsed{}, fmt.Errorf("read: %w", err)
	}
	if !info.Mode().IsRegular() {
		return parsed{}, errNotAFile
	}
	if info.Size() > maxDefinitionSize {
		return parsed{}, fmt.Errorf("file is %d bytes; the limit is %d", info.Size(), maxDefinitionSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return parsed{}, fmt.Errorf("read: %w", err)
	}
	return parseDefinition(path, data)
}
