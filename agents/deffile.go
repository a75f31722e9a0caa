package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/tools"
)

// Agent definition files are Markdown files with YAML front matter, as Claude Code and
// Qwen Code write them:
//
//	---
//	name: reviewer
//	description: Reviews a diff for bugs.
//	tools: Read, Grep, Glob
//	model: inherit
//	---
//	You are a code reviewer. ...
//
// The body after the closing --- is the system prompt. LoadDefinitions reads them from
// these directories, weakest first; a definition replaces a same-named one from an
// earlier source, built-ins included:
//
//  1. the built-ins (BuiltinDefinitions)
//  2. $STOKE_HOME/agents/*.md        (the user's; $STOKE_HOME defaults to ~/.stoke)
//  3. <project>/.qwen/agents/*.md
//  4. <project>/.claude/agents/*.md
//  5. <project>/.stoke/agents/*.md
//
// docs/agents.md describes the fields for users.

// LoadOptions says where LoadDefinitions looks.
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
// and one warning per file that was skipped (naming the file and the problem) or
// directory that could not be read. A directory that does not exist is no warning.
// Within a directory the *.md files are read in name order (hidden files and
// subdirectories are not read); a second file with a name already defined in the same
// directory is skipped with a warning. The result does not depend on the order in which
// the file system lists files.
func LoadDefinitions(o LoadOptions) (Catalog, []string) {
	c := NewCatalog(BuiltinDefinitions()...)
	var warnings []string
	seen := make(map[string]bool)
	for _, src := range o.sources() {
		dir := src.dir
		key := dir
		if abs, err := filepath.Abs(dir); err == nil {
			key = abs
		}
		if seen[key] { // e.g. the project is $HOME and $STOKE_HOME is ~/.stoke
			continue
		}
		seen[key] = true
		defs, warns := loadDir(dir)
		warnings = append(warnings, warns...)
		if src.project {
			defs, warns = o.projectScope(defs)
			warnings = append(warnings, warns...)
		}
		for _, d := range defs {
			c[d.Name] = d
		}
	}
	return c, warnings
}

// projectScope applies the trust boundary to definitions read from the project: files
// that are symbolic links out of the project are dropped; without TrustProject their
// hooks are dropped; with it, hooks that name a script linked from outside the project.
func (o LoadOptions) projectScope(defs []Definition) ([]Definition, []string) {
	root, err := filepath.EvalSymlinks(o.ProjectDir)
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: resolve the project directory: %v; its agent files are not read", o.ProjectDir, err)}
	}
	var out []Definition
	var warnings []string
	for _, d := range defs {
		real, err := filepath.EvalSymlinks(d.Source)
		if err != nil || !within(root, real) {
			warnings = append(warnings, fmt.Sprintf("%s: is a symbolic link to %s, outside the project; skipped", d.Source, real))
			continue
		}
		if d.HasHooks && !o.TrustProject {
			warnings = append(warnings, fmt.Sprintf("%s: hooks ignored: the project is not trusted (pass --trust-project or list it under trusted-projects in $STOKE_HOME/settings.yaml)", d.Source))
			d.Hooks, d.HasHooks = nil, false
		}
		if d.HasHooks {
			var warns []string
			d.Hooks, warns = hooks.WithoutOutsideScripts(d.Hooks, o.ProjectDir)
			for _, w := range warns {
				warnings = append(warnings, fmt.Sprintf("%s: %s", d.Source, w))
			}
			if d.HasHooks = d.Hooks.Len() > 0; !d.HasHooks {
				d.Hooks = nil
			}
		}
		out = append(out, d)
	}
	return out, warnings
}

// within reports whether p is dir or below it (both clean and absolute).
func within(dir, p string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, string(filepath.Separator))+string(filepath.Separator))
}

// loadDir parses the definition files of one directory.
func loadDir(dir string) ([]Definition, []string) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: read agent directory: %v", dir, err)}
	}
	var (
		defs     []Definition
		warnings []string
		byName   = make(map[string]string)
	)
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".md") || strings.HasPrefix(name, ".") {
			continue
		}
		path := filepath.Join(dir, name)
		d, err := readDefinition(path)
		if errors.Is(err, errNotAFile) {
			continue
		}
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("%s: %s; skipped", path, oneLineMessage(err)))
			continue
		}
		if first, dup := byName[d.Name]; dup {
			warnings = append(warnings, fmt.Sprintf("%s: name %q is already defined by %s; skipped", path, d.Name, first))
			continue
		}
		byName[d.Name] = path
		defs = append(defs, d)
	}
	return defs, warnings
}

// oneLineMessage is err's message on one line (yaml's type errors span several).
func oneLineMessage(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// errNotAFile marks a directory entry that is not a regular file, such as a directory
// named x.md; it is passed over in silence. (A dangling symlink is a warning.)
var errNotAFile = errors.New("not a regular file")

func readDefinition(path string) (Definition, error) {
	info, err := os.Stat(path)
	if err != nil {
		return Definition{}, fmt.Errorf("read: %w", err)
	}
	if !info.Mode().IsRegular() {
		return Definition{}, errNotAFile
	}
	if info.Size() > maxDefinitionSize {
		return Definition{}, fmt.Errorf("file is %d bytes; the limit is %d", info.Size(), maxDefinitionSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Definition{}, fmt.Errorf("read: %w", err)
	}
	return ParseDefinition(path, data)
}

// frontMatter is the YAML at the top of a definition file. Keys not listed here (color,
// and whatever else Claude Code or Qwen Code files carry) are ignored.
type frontMatter struct {
	Name            string       `yaml:"name"`
	Description     string       `yaml:"description"`
	Tools           toolList     `yaml:"tools"`
	DisallowedTools toolList     `yaml:"disallowedTools"`
	Model           string       `yaml:"model"`
	ApprovalMode    string       `yaml:"approval-mode"`
	PermissionMode  string       `yaml:"permissionMode"`
	QwenMode        string       `yaml:"approvalMode"`
	Hooks           hooks.Config `yaml:"hooks"`
	Isolation       string       `yaml:"isolation"`

	MCPServers mcpServerList `yaml:"mcpServers"` // defmcp.go
}

// ParseDefinition parses one definition file; source (its path) becomes Source. The
// error describes the problem without the path.
func ParseDefinition(source string, data []byte) (Definition, error) {
	fmText, body, err := splitFrontMatter(data)
	if err != nil {
		return Definition{}, err
	}
	fm, err := decodeFrontMatter(fmText)
	if err != nil {
		return Definition{}, err
	}
	d := Definition{
		Name:            strings.TrimSpace(fm.Name),
		Description:     strings.TrimSpace(fm.Description),
		Prompt:          strings.TrimSpace(body),
		Tools:           fm.Tools.allowList(),
		DisallowedTools: fm.DisallowedTools.names(),
		Model:           strings.TrimSpace(fm.Model),
		Hooks:           fm.Hooks,
		HasHooks:        fm.Hooks.Len() > 0,
		Isolation:       strings.TrimSpace(fm.Isolation),
		MCPServers:      fm.MCPServers,
		Source:          source,
	}
	switch {
	case d.Name == "":
		return Definition{}, errors.New("front matter has no name")
	case len(d.Name) > 64 || !validName().MatchString(d.Name):
		return Definition{}, fmt.Errorf("name %q: use at most 64 letters, digits and - _ . : (starting with a letter or digit)", d.Name)
	}
	if strings.EqualFold(d.Model, "inherit") {
		d.Model = ""
	}
	if d.ApprovalMode, err = approvalFrom(fm.ApprovalMode, fm.PermissionMode, fm.QwenMode); err != nil {
		return Definition{}, err
	}
	if d.Isolation != "" && d.Isolation != "worktree" {
		return Definition{}, fmt.Errorf("isolation %q: want worktree or nothing", d.Isolation)
	}
	if len(d.Hooks) == 0 {
		d.Hooks = nil
	}
	return d, nil
}

// validName is what a subagent_type may look like: no spaces, no path separators.
// Compiled on first use, not at start-up.
var validName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`)
})

// splitFrontMatter returns the YAML between the opening and closing --- lines, and the
// body after them. A UTF-8 byte order mark and CRLF line ends are accepted.
func splitFrontMatter(data []byte) (string, string, error) {
	text := string(bytes.TrimPrefix(data, []byte("\uFEFF")))
	text = strings.ReplaceAll(text, "\r\n", "\n")
	first, rest, _ := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return "", "", errors.New("no front matter: the file must begin with a --- line")
	}
	var fm strings.Builder
	for rest != "" {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		if l := strings.TrimRight(line, " \t"); l == "---" || l == "..." {
			return fm.String(), rest, nil
		}
		fm.WriteString(line)
		fm.WriteByte('\n')
	}
	return "", "", errors.New("front matter is not closed by a --- line")
}

// decodeFrontMatter decodes the front matter. When it is not valid YAML only because a
// top-level value holds an unquoted ": " (Claude Code descriptions often do:
// "description: Use this agent when: ..."), those values are read as plain strings.
func decodeFrontMatter(text string) (frontMatter, error) {
	fm, err := decodeYAML(text)
	if err == nil {
		return fm, nil
	}
	var syntax *yamlSyntaxError
	if !errors.As(err, &syntax) {
		return frontMatter{}, err
	}
	if quoted, ok := quoteColonValues(text); ok {
		if fm, err2 := decodeYAML(quoted); err2 == nil {
			return fm, nil
		}
	}
	return frontMatter{}, err
}

// yamlSyntaxError marks front matter that is not YAML at all (as opposed to YAML with a
// field of the wrong shape).
type yamlSyntaxError struct{ err error }

func (e *yamlSyntaxError) Error() string { return "front matter: " + e.err.Error() }
func (e *yamlSyntaxError) Unwrap() error { return e.err }

func decodeYAML(text string) (frontMatter, error) {
	var doc yaml.Node
	// The leading newline stands for the opening --- line, so that the line numbers in
	// errors are the file's.
	if err := yaml.Unmarshal([]byte("\n"+text), &doc); err != nil {
		return frontMatter{}, &yamlSyntaxError{err}
	}
	var fm frontMatter
	if len(doc.Content) == 0 {
		return fm, nil // empty front matter: no name
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return frontMatter{}, fmt.Errorf("front matter: want a YAML map of fields, got %s", root.ShortTag())
	}
	if err := root.Decode(&fm); err != nil {
		return frontMatter{}, fmt.Errorf("front matter: %w", err)
	}
	return fm, nil
}

// plainKeyValue is a top-level "key: value" line. Compiled on first use.
var plainKeyValue = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*):[ \t]+(\S.*?)[ \t]*$`)
})

// quoteColonValues double-quotes each top-level plain value that contains ": ", and
// reports whether it changed anything.
func quoteColonValues(text string) (string, bool) {
	lines := strings.Split(text, "\n")
	changed := false
	for i, line := range lines {
		m := plainKeyValue().FindStringSubmatch(line)
		if m == nil || !strings.Contains(m[2], ": ") || strings.ContainsAny(m[2][:1], `"'[{|>&*!%@#`+"`") {
			continue
		}
		q, _ := json.Marshal(m[2]) // a JSON string is a YAML double-quoted scalar
		lines[i] = m[1] + ": " + string(q)
		changed = true
	}
	return strings.Join(lines, "\n"), changed
}

// approvalFrom reads approval-mode, Claude Code's permissionMode and Qwen Code's
// approvalMode. Each may hold stoke's modes (plan, default, auto-edit, yolo, which are
// Qwen Code's too) or Claude Code's (default, acceptEdits, bypassPermissions, plan);
// those given must agree.
func approvalFrom(approvalMode, permissionMode, qwenMode string) (string, error) {
	fields := []struct{ key, val string }{
		{"approval-mode", approvalMode}, {"permissionMode", permissionMode}, {"approvalMode", qwenMode},
	}
	mode, from := "", ""
	for _, f := range fields {
		m, err := approvalValue(f.key, f.val)
		if err != nil {
			return "", err
		}
		switch {
		case m == "":
		case mode == "":
			mode, from = m, f.key
		case m != mode:
			return "", fmt.Errorf("%s and %s disagree (%q, %q)", from, f.key, mode, m)
		}
	}
	return mode, nil
}

func approvalValue(key, v string) (string, error) {
	switch v = strings.TrimSpace(v); strings.ToLower(v) {
	case "":
		return "", nil
	case approvalPlan:
		return approvalPlan, nil
	case approvalDefault:
		return approvalDefault, nil
	case approvalAutoEdit, "acceptedits":
		return approvalAutoEdit, nil
	case approvalYolo, "bypasspermissions":
		return approvalYolo, nil
	default:
		return "", fmt.Errorf("%s %q: want plan, default, auto-edit (acceptEdits) or yolo (bypassPermissions)", key, v)
	}
}

// toolList is a tool list as agent files write it: a YAML list, or one comma-separated
// string ("Read, Grep, Glob").
type toolList []string

func (l *toolList) UnmarshalYAML(n *yaml.Node) error {
	var items []*yaml.Node
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			*l = nil
			return nil
		}
		items = []*yaml.Node{n}
	case yaml.SequenceNode:
		items = n.Content
	default:
		return fmt.Errorf("line %d: want a list of tool names or a comma-separated string", n.Line)
	}
	out := toolList{} // present but empty (tools: [] or ""): no tools

	for _, it := range items {
		if it.Kind != yaml.ScalarNode {
			return fmt.Errorf("line %d: want a tool name", it.Line)
		}
		for name := range strings.SplitSeq(it.Value, ",") {
			if name = strings.TrimSpace(name); name != "" {
				out = append(out, name)
			}
		}
	}
	*l = out
	return nil
}

// toolAlias maps Claude Code's names of the workspace tools (tools.CanonicalName) and
// Qwen Code's to stoke's; other names are returned as they are.
func toolAlias(name string) string {
	if canon, ok := tools.CanonicalName(name); ok {
		return canon
	}
	switch name {
	case "ReadFile":
		return tools.NameReadFile
	case "WriteFile":
		return tools.NameWriteFile
	case "FindFiles":
		return tools.NameGlob
	case "grep_search", "search_file_content", "SearchText":
		return tools.NameGrep
	case "run_shell_command", "Shell":
		return tools.NameShell
	default:
		return name
	}
}

// names maps aliases and drops duplicates, keeping the order of first mention. An absent
// list stays nil; an empty one stays empty.
func (l toolList) names() []string {
	if l == nil {
		return nil
	}
	out := []string{}
	for _, name := range l {
		if name = toolAlias(name); !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// allowList is names() for the allow-list, where "*" means every tool (nil) and an
// empty list none.
func (l toolList) allowList() []string {
	if slices.Contains(l, "*") {
		return nil
	}
	return l.names()
}
