package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/mcp"
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

// frontMatter is the YAML at the top of a definition file. Keys not listed here are
// ignored: color and memory (Claude Code), and whatever else the files carry.
type frontMatter struct {
	Name            string    `yaml:"name"`
	Description     string    `yaml:"description"`
	Tools           toolList  `yaml:"tools"`
	DisallowedTools toolList  `yaml:"disallowedTools"`
	Model           string    `yaml:"model"`
	ApprovalMode    string    `yaml:"approval-mode"`
	PermissionMode  string    `yaml:"permissionMode"`
	QwenMode        string    `yaml:"approvalMode"`
	Hooks           yaml.Node `yaml:"hooks"`
	Isolation       string    `yaml:"isolation"`
	// MaxTurns is Claude Code's cap on the agent's model turns.
	MaxTurns *int `yaml:"maxTurns"`
	// ModelConfig and RunConfig are Qwen Code's: modelConfig.model is the model (its
	// other keys, such as temp, are ignored); runConfig caps turns and time.
	ModelConfig struct {
		Model string `yaml:"model"`
	} `yaml:"modelConfig"`
	RunConfig struct {
		MaxTurns       *int     `yaml:"max_turns"`
		MaxTimeMinutes *float64 `yaml:"max_time_minutes"`
	} `yaml:"runConfig"`
	// Skills and Background are read only to be reported: stoke has no skills, and the
	// parent decides whether a task runs in the background.
	Skills     toolList `yaml:"skills"`
	Background bool     `yaml:"background"`

	MCPServers mcpServerList `yaml:"mcpServers"` // defmcp.go
}

// parsed is one definition file as parseDefinition reads it, with what it made of it.
type parsed struct {
	def Definition
	// unknown are the names of tools that stoke does not have (kept in def.Tools, where
	// they match nothing).
	unknown []string
	// warnings say what was ignored or changed, without the path.
	warnings []string
}

// parseDefinition parses one definition file; source (its path) becomes Source. It
// returns, with the definition, what it ignored or could not map, one warning each
// (without the path). The model is returned as written (inherit as ""): LoadDefinitions
// resolves aliases. The error describes the problem without the path.
func parseDefinition(source string, data []byte) (parsed, error) {
	fmText, body, err := splitFrontMatter(data)
	if err != nil {
		return parsed{}, err
	}
	fm, err := decodeFrontMatter(fmText)
	if err != nil {
		return parsed{}, err
	}
	var p parsed
	d := Definition{
		Name:            strings.TrimSpace(fm.Name),
		Description:     strings.TrimSpace(fm.Description),
		Prompt:          templatePrompt(strings.TrimSpace(body)),
		DisallowedTools: fm.DisallowedTools.denyList(),
		Isolation:       strings.TrimSpace(fm.Isolation),
		MCPServers:      fm.MCPServers,
		Source:          source,
	}
	switch {
	case d.Name == "":
		return parsed{}, errors.New("front matter has no name")
	case len(d.Name) > 64 || !validName().MatchString(d.Name):
		return parsed{}, fmt.Errorf("name %q: use at most 64 letters, digits and - _ . : (starting with a letter or digit)", d.Name)
	}
	d.Tools, p.unknown = fm.Tools.allowList()
	if len(p.unknown) > 0 {
		p.warnings = append(p.warnings, fmt.Sprintf("tools: stoke has no %s; the agent runs without %s", strings.Join(p.unknown, ", "), pluralIt(len(p.unknown))))
	}
	if d.Model, err = modelFrom(fm.Model, fm.ModelConfig.Model); err != nil {
		return parsed{}, err
	}
	if d.ApprovalMode, err = approvalFrom(fm.ApprovalMode, fm.PermissionMode, fm.QwenMode); err != nil {
		return parsed{}, err
	}
	if d.MaxTurns, err = maxTurnsFrom(fm.MaxTurns, fm.RunConfig.MaxTurns); err != nil {
		return parsed{}, err
	}
	if m := fm.RunConfig.MaxTimeMinutes; m != nil {
		if *m <= 0 || *m > maxTimeMinutes {
			return parsed{}, fmt.Errorf("runConfig.max_time_minutes %v: want a number of minutes above 0, at most %d", *m, maxTimeMinutes)
		}
		d.MaxTime = time.Duration(*m * float64(time.Minute))
	}
	if d.Isolation != "" && d.Isolation != "worktree" {
		return parsed{}, fmt.Errorf("isolation %q: want worktree or nothing", d.Isolation)
	}
	var warns []string
	if d.Hooks, warns, err = agentHooks(&fm.Hooks); err != nil {
		return parsed{}, err
	}
	p.warnings = append(p.warnings, warns...)
	d.HasHooks = d.Hooks.Len() > 0
	if !d.HasHooks {
		d.Hooks = nil
	}
	if len(fm.Skills) > 0 {
		p.warnings = append(p.warnings, fmt.Sprintf("skills: stoke has no skills; %s not loaded", strings.Join(fm.Skills, ", ")))
	}
	if fm.Background {
		p.warnings = append(p.warnings, "background: ignored; the parent decides whether a task runs in the background (run_in_background)")
	}
	p.def = d
	return p, nil
}

func pluralIt(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// maxTimeMinutes bounds runConfig.max_time_minutes (a week).
const maxTimeMinutes = 7 * 24 * 60

// modelFrom reads model and Qwen Code's modelConfig.model, which must agree when both
// are given. inherit is "".
func modelFrom(model, qwenModel string) (string, error) {
	model, qwenModel = strings.TrimSpace(model), strings.TrimSpace(qwenModel)
	if model != "" && qwenModel != "" && model != qwenModel {
		return "", fmt.Errorf("model and modelConfig.model disagree (%q, %q)", model, qwenModel)
	}
	if model == "" {
		model = qwenModel
	}
	if strings.EqualFold(model, "inherit") {
		model = ""
	}
	return model, nil
}

// maxTurnsFrom reads Claude Code's maxTurns and Qwen Code's runConfig.max_turns, which
// must agree when both are given.
func maxTurnsFrom(claude, qwen *int) (int, error) {
	n := 0
	for _, f := range []struct {
		key string
		v   *int
	}{{"maxTurns", claude}, {"runConfig.max_turns", qwen}} {
		switch {
		case f.v == nil:
		case *f.v < 1:
			return 0, fmt.Errorf("%s %d: want 1 or more", f.key, *f.v)
		case n != 0 && n != *f.v:
			return 0, fmt.Errorf("maxTurns and runConfig.max_turns disagree (%d, %d)", n, *f.v)
		default:
			n = *f.v
		}
	}
	return n, nil
}

// taskPromptVar is the one ${variable} Qwen Code fills in a subagent's prompt: the task
// it is given (other ${...} are left as written, as Qwen Code leaves them).
const taskPromptVar = "${task_prompt}"

// taskPromptText stands for ${task_prompt}: stoke sends the task as the agent's first
// user message, as Qwen Code does too, and keeps one system prompt for every turn of a
// task (continuations and revivals included), so the prompt refers to that message.
const taskPromptText = "the task given in the first user message"

// templatePrompt fills the prompt's ${task_prompt}.
func templatePrompt(prompt string) string {
	return strings.ReplaceAll(prompt, taskPromptVar, taskPromptText)
}

// agentHooks reads an agent file's hooks. Claude Code's Stop in an agent file is the
// agent's own stop, so it becomes SubagentStop (as Claude Code converts it). An event
// stoke does not run (PreToolUse, PostToolUse, ...) is left out with one warning naming
// them all, so that the agent still loads; a hook of a supported event that cannot run
// as written is an error (hooks.ParseConfig).
func agentHooks(n *yaml.Node) (hooks.Config, []string, error) {
	if n.Kind != yaml.MappingNode {
		if n.Kind == 0 {
			return nil, nil, nil
		}
		cfg, err := hooks.ParseConfig(n)
		return cfg, nil, err
	}
	out := hooks.Config{}
	var ignored []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		ev, ok := supportedEvent(key.Value)
		if !ok {
			ignored = append(ignored, key.Value)
			continue
		}
		if ev == hooks.Stop {
			ev = hooks.SubagentStop
		}
		one := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{
			{Kind: yaml.ScalarNode, Tag: "!!str", Value: string(ev), Line: key.Line}, val,
		}}
		cfg, err := hooks.ParseConfig(one)
		if err != nil {
			return nil, nil, err
		}
		hs := cfg[ev]
		if !strings.EqualFold(key.Value, string(ev)) { // Stop, which ignores matchers
			for j := range hs {
				hs[j].Matcher = ""
			}
		}
		out[ev] = append(out[ev], hs...)
	}
	var warnings []string
	if len(ignored) > 0 {
		warnings = append(warnings, fmt.Sprintf("hooks: stoke does not run %s hooks; they are ignored (it runs %s)",
			strings.Join(ignored, ", "), eventNames()))
	}
	return out, warnings, nil
}

// supportedEvent matches a hooks key to an event stoke runs, ignoring case.
func supportedEvent(key string) (hooks.Event, bool) {
	for _, ev := range hooks.Events() {
		if strings.EqualFold(key, string(ev)) {
			return ev, true
		}
	}
	return "", false
}

func eventNames() string {
	var names []string
	for _, ev := range hooks.Events() {
		names = append(names, string(ev))
	}
	return strings.Join(names, ", ")
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
// Qwen Code's too) or Claude Code's (default, acceptEdits, bypassPermissions, plan), in
// any case; those given must agree.
func approvalFrom(approvalMode, permissionMode, qwenMode string) (tools.Mode, error) {
	fields := []struct{ key, val string }{
		{"approval-mode", approvalMode}, {"permissionMode", permissionMode}, {"approvalMode", qwenMode},
	}
	var mode tools.Mode
	from := ""
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

func approvalValue(key, v string) (tools.Mode, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return "", nil
	case strings.EqualFold(v, "dontAsk"), strings.EqualFold(v, "bubble"):
		// Claude Code's dontAsk refuses what is not allowed without asking, as stoke's
		// default does when nobody can be asked; Qwen Code's bubble asks the parent
		// session, and runs as default where there is none to ask.
		return tools.ModeDefault, nil
	}
	for _, m := range tools.Modes() {
		if strings.EqualFold(v, string(m)) || strings.EqualFold(v, m.PermissionMode()) {
			return m, nil
		}
	}
	return "", fmt.Errorf("%s %q: want plan, default (dontAsk, bubble), auto-edit (acceptEdits) or yolo (bypassPermissions)", key, v)
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

// qwenTool maps Qwen Code's tool names (and the display names its files sometimes use)
// to stoke's workspace tools. list_directory is glob (pattern "*" lists a directory, and
// glob marks directories with a trailing /); read_many_files is read_file and glob (find
// the files, then read each). Both are read-only, as the Qwen Code tools are.
func qwenTool(name string) ([]string, bool) {
	switch name {
	case "read_file", "ReadFile":
		return []string{tools.NameReadFile}, true
	case "write_file", "WriteFile":
		return []string{tools.NameWriteFile}, true
	case "replace":
		return []string{tools.NameEdit}, true
	case "glob", "FindFiles", "list_directory", "ReadFolder":
		return []string{tools.NameGlob}, true
	case "read_many_files", "ReadManyFiles":
		return []string{tools.NameReadFile, tools.NameGlob}, true
	case "search_file_content", "grep_search", "SearchText":
		return []string{tools.NameGrep}, true
	case "run_shell_command", "Shell":
		return []string{tools.NameShell}, true
	}
	return nil, false
}

// mapTool maps a tool name of an agent file to stoke's: Claude Code's names of the
// workspace tools (tools.CanonicalName) and Qwen Code's (qwenTool) to one or two
// workspace tools, an MCP tool name (mcp__server__tool) to itself. Anything else (web_fetch,
// WebSearch, Task, TodoWrite, a rule such as Bash(git:*), ...) stoke has no tool for:
// ok is false.
func mapTool(name string) ([]string, bool) {
	if canon, ok := tools.CanonicalName(name); ok {
		return []string{canon}, true
	}
	if ts, ok := qwenTool(name); ok {
		return ts, true
	}
	if strings.HasPrefix(name, mcp.Prefix) && len(name) > len(mcp.Prefix) {
		return []string{name}, true
	}
	return nil, false
}

// allowList is the allow-list a tools field gives: nil (every tool) when absent or
// holding "*", else the mapped names in the order of first mention (an empty list is
// no tools), followed by the names stoke has no tool for, kept as written so that they
// match nothing; those are returned as unknown too.
func (l toolList) allowList() (allow, unknown []string) {
	if l == nil || slices.Contains(l, "*") {
		return nil, nil
	}
	allow = []string{}
	for _, name := range l {
		ts, ok := mapTool(name)
		if !ok {
			if !slices.Contains(unknown, name) {
				unknown = append(unknown, name)
			}
			continue
		}
		for _, t := range ts {
			if !slices.Contains(allow, t) {
				allow = append(allow, t)
			}
		}
	}
	return append(allow, unknown...), unknown
}

// denyList is the deny-list a disallowedTools field gives: a name that maps to one stoke
// tool is that tool; any other entry (a rule such as Bash(rm:*), "*", a name of no tool)
// is kept as written. Qwen Code's read_many_files, which is two stoke tools, denies
// neither: taking away read_file would take more than the file asked. Duplicates are
// dropped. An absent list stays nil.
func (l toolList) denyList() []string {
	if l == nil {
		return nil
	}
	out := []string{}
	for _, name := range l {
		if ts, ok := mapTool(name); ok && len(ts) == 1 {
			name = ts[0]
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}
