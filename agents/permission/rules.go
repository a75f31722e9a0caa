package permission

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/shellcmd"
	"github.com/stoke-cli/stoke/agents/tools"
)

// Paths resolves path arguments for path rules; *tools.Workspace implements it.
type Paths interface {
	// Root is the workspace root: absolute, symbolic links resolved.
	Root() string
	// RelPath returns p (relative to the root, or absolute inside it) as a clean slash
	// path relative to the root, symbolic links resolved, or an error when it leads
	// outside the root or through a dangling link.
	RelPath(p string) (string, error)
}

// Rules are the allow and deny rules of a run (or of one agent). They are immutable and
// safe for concurrent use.
type Rules struct {
	paths       Paths
	allow, deny []Rule
}

// New returns the rules allow and deny (as Claude Code writes them), with path rules
// resolved against paths.
func New(paths Paths, allow, deny []string) *Rules {
	r := &Rules{paths: paths}
	for _, s := range allow {
		r.allow = append(r.allow, ParseRule(s))
	}
	for _, s := range deny {
		r.deny = append(r.deny, ParseRule(s))
	}
	return r
}

// WithDeny returns r with more deny rules (an agent's disallowedTools).
func (r *Rules) WithDeny(deny []string) *Rules {
	c := *r
	c.deny = append([]Rule(nil), r.deny...)
	for _, s := range deny {
		c.deny = append(c.deny, ParseRule(s))
	}
	return &c
}

// Deny implements tools.Denier: a call is refused when a deny rule covers it, or any
// part of it. A shell command is refused when a deny rule covers any of its simple
// commands (as written, through wrappers such as env, sudo, xargs or nice, and inside
// bash -c and eval strings), or a file one of its redirections writes or reads; when a
// shell deny rule exists, a command whose name or inner script cannot be known without
// running it is refused too, and so is a command line that does not parse or that holds
// an operand bash evaluates with a command in it ([[ 1 -eq 'a[$(rm x)]' ]]).
func (r *Rules) Deny(call tools.Call) (string, bool) {
	if r == nil || len(r.deny) == 0 {
		return "", false
	}
	if call.Name == tools.NameShell {
		return r.shellDenied(gjson.GetBytes(call.Input, "command").String())
	}
	for _, rule := range r.deny {
		if rule.covers(call.Name) && r.matchCall(rule, call, true) {
			return fmt.Sprintf("it matches the deny rule %s", rule), true
		}
	}
	return "", false
}

// Allowed reports whether an allow rule approves call (and no deny rule refuses it). A
// shell command is approved only when it parses, sets no variables, holds no operand bash
// evaluates with a command in it (shellcmd.Script.Evaluated), and every one of its
// simple commands is covered by an allow rule; each file it writes through a
// redirection must be /dev/null (or the like), or inside the workspace, not protected
// configuration (tools.Protected), and allowed by mode (auto-edit) or by an Edit or
// Write allow rule. The whole-tool rule Bash approves any command that parses.
func (r *Rules) Allowed(call tools.Call, mode tools.Mode) bool {
	if r == nil || len(r.allow) == 0 {
		return false
	}
	if _, denied := r.Deny(call); denied {
		return false
	}
	if call.Name == tools.NameShell {
		return r.shellAllowed(gjson.GetBytes(call.Input, "command").String(), mode)
	}
	for _, rule := range r.allow {
		if rule.covers(call.Name) && r.matchCall(rule, call, false) {
			return true
		}
	}
	return false
}

// matchCall matches a rule of a tool other than shell. Path rules match the call's
// path; other tools' rules only as a whole.
func (r *Rules) matchCall(rule Rule, call tools.Call, deny bool) bool {
	if rule.Whole() {
		return true
	}
	var field string
	switch call.Name {
	case tools.NameReadFile, tools.NameWriteFile, tools.NameEdit:
		field = "file_path"
	case tools.NameGlob, tools.NameGrep:
		field = "path"
	default:
		return false
	}
	rel, ok := r.rel(gjson.GetBytes(call.Input, field).String(), deny)
	return ok && compilePath(rule.Pattern, r.root()).match(rel)
}

func (r *Rules) root() string {
	if r.paths == nil {
		return ""
	}
	return r.paths.Root()
}

// rel resolves a path argument. When it cannot be resolved, a deny rule is still
// matched on the path as written, cleaned (the tool will refuse it anyway); an allow
// rule never matches.
func (r *Rules) rel(p string, deny bool) (string, bool) {
	if p == "" {
		p = "."
	}
	if r.paths != nil {
		if rel, err := r.paths.RelPath(p); err == nil {
			return rel, true
		}
	}
	if !deny {
		return "", false
	}
	c := path.Clean(p)
	if root := r.root(); root != "" && strings.HasPrefix(c, root+"/") {
		c = strings.TrimPrefix(c, root+"/")
	}
	if c == ".." || strings.HasPrefix(c, "../") || strings.HasPrefix(c, "/") {
		return "", false
	}
	return c, true
}

// maxDepth bounds how deep shellDenied follows bash -c and eval strings.
const maxDepth = 4

// errUnknown: part of a command cannot be known without running it.
var errUnknown = errors.New("unknown")

func (r *Rules) shellDenied(command string) (string, bool) {
	for _, rule := range r.deny {
		if rule.Tool == tools.NameShell && rule.Whole() {
			return fmt.Sprintf("it matches the deny rule %s", rule), true
		}
	}
	script, err := shellcmd.Parse(command)
	if err != nil {
		if r.hasDeny(tools.NameShell) {
			return "the command does not parse as bash, so the deny rules cannot be checked; write it more simply", true
		}
		return "", false
	}
	why, err := r.scriptDenied(script, 0)
	if errors.Is(err, errUnknown) {
		return why, true
	}
	return why, why != ""
}

// hasDeny reports whether a deny rule covers tool at all.
func (r *Rules) hasDeny(tool string) bool {
	for _, rule := range r.deny {
		if rule.covers(tool) {
			return true
		}
	}
	return false
}

// scriptDenied returns why script is refused, or "". err wraps errUnknown when a part
// that a shell deny rule might cover cannot be known.
func (r *Rules) scriptDenied(script *shellcmd.Script, depth int) (string, error) {
	shellRules := r.hasDeny(tools.NameShell)
	if shellRules && len(script.Evaluated) > 0 {
		return fmt.Sprintf("a deny rule may cover a command hidden in %q, which bash evaluates as arithmetic or a variable name (a command substitution or an array subscript there runs commands)", script.Evaluated[0]), errUnknown
	}
	for _, c := range script.Commands {
		if len(c.Words) == 0 {
			continue // X=1
		}
		forms := []shellcmd.Command{c}
		if u, ok := c.Unwrapped(); ok {
			forms = append(forms, u)
		} else if shellRules {
			return fmt.Sprintf("a deny rule may cover %q, whose command cannot be known without running it", render(c.Words)), errUnknown
		}
		for _, f := range forms {
			if _, ok := f.Name(); !ok {
				if shellRules {
					return "a deny rule may cover a command whose name cannot be known without running it", errUnknown
				}
				continue
			}
			for _, rule := range r.deny {
				if rule.Tool == tools.NameShell && rule.matchCommand(f) {
					return fmt.Sprintf("%q matches the deny rule %s", render(c.Words), rule), nil
				}
			}
			src, inner, literal := f.Inner()
			if !inner || !shellRules {
				continue
			}
			if !literal || depth >= maxDepth {
				return fmt.Sprintf("a deny rule may cover the commands %q runs, which cannot be known without running it", render(c.Words)), errUnknown
			}
			s, err := shellcmd.Parse(src)
			if err != nil {
				return fmt.Sprintf("the script %q runs does not parse, so the deny rules cannot be checked", render(c.Words)), errUnknown
			}
			if why, err := r.scriptDenied(s, depth+1); why != "" || err != nil {
				return why, err
			}
		}
	}
	for _, rd := range script.Redirects {
		tool := tools.NameReadFile
		if rd.Write {
			tool = tools.NameWriteFile
		}
		if !r.hasPathDeny(tool) {
			continue
		}
		if !rd.Target.Literal {
			return "a deny rule may cover the file a redirection names, which cannot be known without running it", errUnknown
		}
		rel, ok := r.rel(rd.Target.Value, true)
		if !ok {
			continue
		}
		for _, rule := range r.deny {
			if rule.covers(tool) && !rule.Whole() && compilePath(rule.Pattern, r.root()).match(rel) {
				return fmt.Sprintf("the redirection to %s matches the deny rule %s", rd.Target.Value, rule), nil
			}
		}
	}
	return "", nil
}

// hasPathDeny reports whether a deny rule with a pattern covers tool.
func (r *Rules) hasPathDeny(tool string) bool {
	for _, rule := range r.deny {
		if rule.covers(tool) && !rule.Whole() {
			return true
		}
	}
	return false
}

// harmless are the files a redirection may write that are no file of the workspace.
func harmless() map[string]bool {
	return map[string]bool{"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true, "/dev/tty": true}
}

func (r *Rules) shellAllowed(command string, mode tools.Mode) bool {
	script, err := shellcmd.Parse(command)
	if err != nil {
		return false
	}
	for _, rule := range r.allow {
		if rule.Tool == tools.NameShell && rule.Whole() {
			return true
		}
	}
	if len(script.Evaluated) > 0 {
		return false // a[$(cmd)] where bash evaluates it: commands no rule was asked about
	}
	for _, c := range script.Commands {
		if c.Assigns {
			return false // X=1 cmd, export: variables change what commands do (PATH, LD_PRELOAD)
		}
		if !r.commandAllowed(c) {
			return false
		}
	}
	for _, rd := range script.Redirects {
		if !rd.Write {
			continue
		}
		if !rd.Target.Literal {
			return false
		}
		if harmless()[rd.Target.Value] {
			continue
		}
		rel, ok := r.rel(rd.Target.Value, false)
		if !ok {
			return false
		}
		if _, protected := tools.Protected(rel); protected {
			return false
		}
		if !mode.Allows(tools.KindEdit) && !r.writeAllowed(rel) {
			return false
		}
	}
	return true
}

func (r *Rules) commandAllowed(c shellcmd.Command) bool {
	for _, rule := range r.allow {
		if rule.Tool == tools.NameShell && rule.matchCommand(c) {
			return true
		}
	}
	return false
}

func (r *Rules) writeAllowed(rel string) bool {
	for _, rule := range r.allow {
		if rule.covers(tools.NameWriteFile) && (rule.Whole() || compilePath(rule.Pattern, r.root()).match(rel)) {
			return true
		}
	}
	return false
}
