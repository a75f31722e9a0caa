// Package permission matches tool calls against Claude Code's permission rules
// (--allowedTools, --disallowedTools, the SDK's allowedTools and disallowedTools, an
// agent's disallowedTools): "Write", "Bash(git status)", "Bash(npm run:*)",
// "Edit(docs/**)".
//
// Shell commands are read with a real bash parser (package shellcmd): a rule is checked
// against every simple command of a compound one (; && || pipes, subshells, $(…),
// backticks, process substitutions, function bodies), and redirections to files count as
// writes. A command that does not parse is never approved. Path rules are matched on the
// path relative to the workspace root after symbolic links are resolved, so every
// spelling of one file gets one answer.
package permission

import (
	"path"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/stoke-cli/stoke/agents/shellcmd"
	"github.com/stoke-cli/stoke/agents/tools"
)

// Rule is one permission rule: a tool, or a tool and a pattern in parentheses.
type Rule struct {
	// Tool is stoke's tool name (Claude Code's names are mapped: Bash is shell, Read is
	// read_file, ...), or the name as written for other tools.
	Tool string
	// Pattern is the text inside the parentheses; "" for the whole tool.
	Pattern string
	text    string
}

// ParseRule reads one rule. It never fails: a rule that names no tool stoke has simply
// matches nothing.
func ParseRule(s string) Rule {
	s = strings.TrimSpace(s)
	name, pattern := s, ""
	if i := strings.IndexByte(s, '('); i > 0 && strings.HasSuffix(s, ")") {
		name, pattern = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:len(s)-1])
	}
	if c, ok := tools.CanonicalName(name); ok {
		name = c
	}
	if pattern == "*" || pattern == "**" && name == tools.NameShell {
		pattern = ""
	}
	return Rule{Tool: name, Pattern: pattern, text: s}
}

// String returns the rule as it was written.
func (r Rule) String() string { return r.text }

// Whole reports whether the rule covers every call of its tool.
func (r Rule) Whole() bool { return r.Pattern == "" }

// family is the set of tools a rule of tool covers: Read rules cover every tool that
// reads files (read_file, glob, grep), Edit and Write rules every tool that writes them.
func family(tool string) []string {
	switch tool {
	case tools.NameReadFile:
		return []string{tools.NameReadFile, tools.NameGlob, tools.NameGrep}
	case tools.NameWriteFile, tools.NameEdit:
		return []string{tools.NameWriteFile, tools.NameEdit}
	}
	return []string{tool}
}

// covers reports whether r applies to calls of tool. An MCP rule names one tool
// (mcp__server__tool), every tool of a server (mcp__server, mcp__server__*), or every
// MCP tool (mcp__*).
func (r Rule) covers(tool string) bool {
	for _, t := range family(r.Tool) {
		if t == tool {
			return true
		}
	}
	const mcpPrefix = "mcp__"
	rest, ok := strings.CutPrefix(r.Tool, mcpPrefix)
	if !ok || !strings.HasPrefix(tool, mcpPrefix) {
		return false
	}
	if rest == "*" {
		return true
	}
	server := strings.TrimSuffix(rest, "__*")
	return server != "" && !strings.Contains(server, "__") && strings.HasPrefix(tool, mcpPrefix+server+"__")
}

// unknownWord stands for a word that is not literal when a command is rendered as text:
// no rule text contains it, and only * matches it.
const unknownWord = "\x00"

// render joins the words of c with single spaces.
func render(words []shellcmd.Word) string {
	parts := make([]string, len(words))
	for i, w := range words {
		if w.Literal {
			parts[i] = w.Value
		} else {
			parts[i] = unknownWord
		}
	}
	return strings.Join(parts, " ")
}

// normalize turns a rule's command text into the form render gives: the words after
// quote removal ("git commit -m 'a b'"), single spaces.
func normalize(text string) string {
	if s, err := shellcmd.Parse(text); err == nil && len(s.Commands) == 1 && len(s.Redirects) == 0 {
		c := s.Commands[0]
		literal := !c.Assigns && len(c.Words) > 0
		for _, w := range c.Words {
			literal = literal && w.Literal
		}
		if literal {
			return render(c.Words)
		}
	}
	return strings.Join(strings.Fields(text), " ")
}

// matchCommand reports whether the shell rule r covers the simple command c:
//
//	Bash               every command
//	Bash(git status)   exactly that command (its words, after quote removal)
//	Bash(npm run:*)    the command npm run, with any arguments after it
//	Bash(git * main)   a wildcard pattern over the words joined by spaces; * matches
//	                   anything, words that are not literal included
//
// A command whose name is not literal matches only the whole-tool rule.
func (r Rule) matchCommand(c shellcmd.Command) bool {
	if r.Whole() {
		return true
	}
	if _, ok := c.Name(); !ok {
		return false
	}
	cmd := render(c.Words)
	if prefix, ok := strings.CutSuffix(r.Pattern, ":*"); ok {
		p := normalize(prefix)
		return p != "" && (cmd == p || strings.HasPrefix(cmd, p+" "))
	}
	if strings.Contains(r.Pattern, "*") {
		return wildcard(strings.Join(strings.Fields(r.Pattern), " "), cmd)
	}
	return cmd == normalize(r.Pattern)
}

// wildcard matches s against pattern, where * matches any run of bytes and every other
// byte itself. It runs in O(len(pattern)·len(s)) at worst.
func wildcard(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// pathPattern is a path rule's pattern made relative to the workspace root, in the
// gitignore style Claude Code uses: a pattern with a / (other than a trailing one) is
// anchored at the root; one without matches a name at any depth; a pattern that matches
// a directory matches everything inside it.
type pathPattern struct {
	glob     string
	anchored bool
	never    bool // the pattern is outside the workspace
}

// compilePath reads a path rule's pattern: "docs/**", "./src/*.go", "/build" (the root's
// build), "//abs/path" (an absolute path; it must be inside root), "*.env".
func compilePath(pattern, root string) pathPattern {
	p := pattern
	switch {
	case strings.HasPrefix(p, "//"):
		abs := path.Clean(p[1:])
		rel, ok := strings.CutPrefix(abs, strings.TrimSuffix(root, "/")+"/")
		if !ok {
			return pathPattern{never: true}
		}
		p = "/" + rel
	case strings.HasPrefix(p, "~"):
		return pathPattern{never: true} // a home directory is not the workspace
	}
	anchored := strings.HasPrefix(p, "/") || strings.Contains(strings.TrimSuffix(p, "/"), "/")
	p = strings.TrimPrefix(path.Clean("/"+strings.TrimSuffix(p, "/")), "/")
	if p == "" {
		p = "**"
	}
	return pathPattern{glob: p, anchored: anchored}
}

// match reports whether rel (clean, relative to the root, with /; "." for the root)
// matches: itself or one of the directories it is in.
func (pp pathPattern) match(rel string) bool {
	if pp.never {
		return false
	}
	if rel == "." {
		return pp.glob == "**" || pp.glob == "*" && !pp.anchored
	}
	comps := strings.Split(rel, "/")
	for i := range comps {
		if !pp.anchored {
			if ok, _ := path.Match(pp.glob, comps[i]); ok {
				return true
			}
			continue
		}
		if ok, _ := doublestar.Match(pp.glob, strings.Join(comps[:i+1], "/")); ok {
			return true
		}
	}
	return false
}
