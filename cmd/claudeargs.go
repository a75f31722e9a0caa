package cmd

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/sandbox"
	"github.com/stoke-cli/stoke/agents/tools"
)

// Claude Code's command line, as scripts write it, is not what pflag parses:
//
//   - -p/--print is a boolean and the prompt is the first argument (`claude -p "q"`,
//     `claude -p --output-format json "q"`, `echo q | claude -p`). stoke's -p took the
//     prompt as its value, and old scripts still write `stoke -p "q"`. Both hold: a word
//     right after -p (not a flag, not "--") is the prompt. So `stoke -p version` asks the
//     model "version"; the version command is `stoke version`.
//   - Some flags are variadic (`--allowedTools "Read" "Bash(git log:*)"`). Claude Code's
//     parser gives them every word up to the next flag, the prompt included
//     (anthropics/claude-code#25978). stoke gives them only the words that are values of
//     their kind (see variadic), so the prompt after them stays the prompt.
//   - -r/--resume needs a session id: without one Claude Code opens an interactive picker,
//     which stoke does not have.
//
// normalizeArgs rewrites such arguments into the forms pflag parses: `-p WORD` into
// `--print --prompt=WORD`, a variadic flag's words into one `--flag=value` each. It keeps
// the order of everything else and leaves alone what it does not know (pflag reports
// unknown flags, or skips them in SDK mode) and everything from the first subcommand
// name or "--" on.

// argEnv is what normalizeArgs needs to know about the process.
type argEnv struct {
	// isDir reports whether a path (relative to the working directory) is a directory,
	// for --add-dir's extra values.
	isDir func(string) bool
}

// normalizeArgs rewrites Claude Code's idioms in args for root (see above).
func normalizeArgs(root *cobra.Command, args []string, env argEnv) ([]string, error) {
	f := root.Flags()
	more := map[string]variadic{}
	for _, cf := range claudeFlags() {
		if cf.more != single {
			more[cf.name] = cf.more
		}
	}
	more["mcp-config"] = moreConfigs // declared with the MCP flags (mcp.go)
	out := make([]string, 0, len(args)+2)
	prompts := 0 // --prompt given, by -p WORD or --prompt itself
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return append(out, args[i:]...), nil
		case textLike(a): // "- list the files": a prompt, not a flag
			out = append(out, "--prompt="+a)
			prompts++
			continue
		case !flagLike(a):
			if isSubcommand(root, a) {
				return append(out, args[i:]...), nil // the subcommand parses the rest
			}
			out = append(out, a)
			continue
		}
		// One flag, long or a group of shorthands, expanded into long names.
		names, values, ok := splitFlag(f, a)
		if !ok {
			out = append(out, a) // not stoke's: pflag reports it, or SDK mode skips it
			if !hasValueIn(a) && i+1 < len(args) && textLike(args[i+1]) {
				i++ // its value (SDK mode skips the two), not a prompt
				out = append(out, args[i])
			}
			continue
		}
		for k, name := range names {
			fl := f.Lookup(name)
			val, hasVal := values[k], values[k] != nil
			last := k == len(names)-1
			switch {
			case name == "print":
				if hasVal {
					if _, err := strconv.ParseBool(*val); err != nil { // -p=TEXT: the old -p
						out = append(out, "--print", "--prompt="+*val)
						prompts++
						continue
					}
					out = append(out, "--print="+*val)
					continue
				}
				out = append(out, "--print")
				if last && i+1 < len(args) && promptWord(args[i+1]) {
					out = append(out, "--prompt="+args[i+1])
					prompts++
					i++
				}
			case name == "debug" && hasVal:
				if _, err := strconv.ParseBool(*val); err != nil {
					out = append(out, "--debug") // Claude Code's --debug=FILTER: stoke has no filter
					continue
				}
				out = append(out, "--debug="+*val)
			case isBool(fl) || fl.NoOptDefVal != "":
				switch {
				case hasVal:
					out = append(out, "--"+name+"="+*val)
				case optionalTakesNext(fl) && last && i+1 < len(args) && promptWord(args[i+1]) && takesWord(name, args[i+1]):
					i++ // Claude Code's `--worktree name`: an optional value may be the next word
					out = append(out, "--"+name+"="+args[i])
				default:
					out = append(out, "--"+name)
				}
			default: // a flag with a value: here, or the next word
				if !hasVal {
					if !last || i+1 >= len(args) {
						if name == "resume" {
							return nil, errResumeNeedsID()
						}
						out = append(out, "--"+name) // pflag: "flag needs an argument"
						continue
					}
					i++
					v := args[i]
					val = &v
					if name == "resume" && (flagLike(v) || v == "") {
						return nil, errResumeNeedsID()
					}
				}
				if name == "prompt" {
					prompts++
				}
				out = append(out, "--"+name+"="+*val)
				if kind := more[name]; kind != single && !hasValueIn(a) {
					for i+1 < len(args) && promptWord(args[i+1]) && kind.takes(args[i+1], env) {
						i++
						out = append(out, "--"+name+"="+args[i])
					}
				}
			}
		}
	}
	if prompts > 1 {
		return nil, usageErrorf("more than one prompt given with -p/--prompt: give the prompt once (quote it as one argument)")
	}
	return out, nil
}

// errResumeNeedsID: -r without a session id (Claude Code would open a picker).
func errResumeNeedsID() error {
	return usageErrorf("--resume needs a session id: stoke -r SESSION_ID (stoke sessions list shows them), or -c for the most recent session here")
}

// flagLike reports whether a word is a flag, as Claude Code's parser decides: it starts
// with "-" and is longer than that; but text that starts with "-" is not (textLike).
func flagLike(s string) bool { return len(s) > 1 && s[0] == '-' && !textLike(s) }

// textLike reports whether a word that starts with "-" is text rather than a flag: no
// flag's name holds white space, so "- list the files" (a Markdown list), "--- a/x.go"
// (a diff) and "-- a comment" are prompts. Only the name counts: in
// "--append-system-prompt=Be terse" and in -p's attached prompt, "-pfix the bug", the
// white space is in the value.
func textLike(s string) bool {
	switch {
	case len(s) < 2 || s[0] != '-':
		return false
	case s[1] != '-':
		return unicode.IsSpace(rune(s[1]))
	}
	name, _, _ := strings.Cut(s[2:], "=")
	return strings.ContainsFunc(name, unicode.IsSpace)
}

// promptWord reports whether a word after a flag may be taken as its value or as the
// prompt: not a flag and not "--".
func promptWord(s string) bool { return !flagLike(s) && s != "--" }

// hasValueIn reports whether a flag word carries its value (--flag=v, -mVALUE): such a
// flag takes no more words, as in Claude Code.
func hasValueIn(a string) bool {
	if strings.HasPrefix(a, "--") {
		return strings.Contains(a, "=")
	}
	return false // a shorthand group ending in a value flag takes the next word
}

// optionalTakesNext reports whether a flag with an optional value takes the next word as
// its value, as Claude Code's parser does for `--worktree [name]`.
func optionalTakesNext(fl *pflag.Flag) bool {
	return !isBool(fl) && fl.NoOptDefVal != ""
}

// takesWord reports whether the next word is the optional value of the flag name: any
// word for --worktree; for --sandbox (Qwen Code's boolean, stoke's mode) only a mode, so
// that `stoke --sandbox "fix it"` keeps its prompt and `--sandbox read-only` its mode.
func takesWord(name, word string) bool {
	if name != "sandbox" {
		return true
	}
	_, err := sandbox.ParseMode(word)
	return err == nil
}

// isBool reports whether fl is a boolean flag.
func isBool(fl *pflag.Flag) bool { return fl.Value.Type() == "bool" }

// isSubcommand reports whether word names one of root's subcommands (or help).
func isSubcommand(root *cobra.Command, word string) bool {
	if word == "help" {
		return true
	}
	return slices.ContainsFunc(root.Commands(), func(c *cobra.Command) bool {
		return c.Name() == word || c.HasAlias(word)
	})
}

// splitFlag splits one flag word into long flag names and their values (nil when the word
// holds none): "--model=x" is model "x"; "-cp" is continue and print; "-mgpt-4" is model
// "gpt-4"; "-pTEXT", when TEXT is not all boolean shorthands, is print with the value
// TEXT (stoke's old -p). ok is false when a name is not one of f's flags.
func splitFlag(f *pflag.FlagSet, a string) (names []string, values []*string, ok bool) {
	if body, found := strings.CutPrefix(a, "--"); found {
		name, val, hasVal := strings.Cut(body, "=")
		if f.Lookup(name) == nil {
			return nil, nil, false
		}
		if hasVal {
			return []string{name}, []*string{&val}, true
		}
		return []string{name}, []*string{nil}, true
	}
	body := a[1:]
	for j := 0; j < len(body); j++ {
		fl := f.ShorthandLookup(body[j : j+1])
		if fl == nil {
			return nil, nil, false
		}
		rest := body[j+1:]
		if isBool(fl) && !(fl.Name == "print" && rest != "" && !allBoolShorthands(f, rest)) {
			if strings.HasPrefix(rest, "=") { // -p=true
				v := rest[1:]
				return append(names, fl.Name), append(values, &v), true
			}
			names, values = append(names, fl.Name), append(values, nil)
			continue
		}
		names = append(names, fl.Name)
		if rest == "" {
			return names, append(values, nil), true
		}
		v := strings.TrimPrefix(rest, "=")
		return names, append(values, &v), true
	}
	return names, values, true
}

// allBoolShorthands reports whether every letter of s is a boolean shorthand of f.
func allBoolShorthands(f *pflag.FlagSet, s string) bool {
	for j := range len(s) {
		fl := f.ShorthandLookup(s[j : j+1])
		if fl == nil || !isBool(fl) {
			return false
		}
	}
	return true
}

// takes reports whether word is another value of a variadic flag of this kind.
func (v variadic) takes(word string, env argEnv) bool {
	switch v {
	case moreRules:
		return isRuleList(word)
	case moreDirs:
		return env.isDir != nil && env.isDir(word)
	case moreConfigs:
		w := strings.TrimSpace(word)
		return strings.HasPrefix(w, "{") || strings.HasSuffix(w, ".json")
	case moreBetas:
		return betaName().MatchString(word)
	}
	return false
}

// betaName is an Anthropic beta header name: a feature and a date. Compiled on first use.
var betaName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9-]+-\d{4}-\d{2}-\d{2}$`)
})

// isRuleList reports whether word is one or more permission rules (comma or space
// separated) that all name a tool Claude Code or stoke knows: "Read", "Bash(git log:*)",
// "mcp__github__create_issue", "Read,Edit".
func isRuleList(word string) bool {
	rules := splitRules([]string{word})
	if len(rules) == 0 {
		return false
	}
	for _, r := range rules {
		name := r
		if i := strings.IndexByte(r, '('); i > 0 {
			if !strings.HasSuffix(r, ")") {
				return false
			}
			name = r[:i]
		}
		if !knownTool(name) {
			return false
		}
	}
	return true
}

// knownTool reports whether name is a tool of Claude Code (its tools reference) or of
// stoke, or an MCP tool name.
func knownTool(name string) bool {
	if strings.HasPrefix(name, "mcp__") || name == "*" {
		return true
	}
	if _, ok := tools.CanonicalName(name); ok {
		return true
	}
	switch name {
	case agents.ToolTask, agents.ToolSendMessage, agents.ToolTaskStop, agents.ToolListAgents:
		return true
	}
	return slices.Contains(claudeToolNames(), name)
}

// claudeToolNames are Claude Code's built-in tools (code.claude.com/docs/en/tools-reference),
// and older names scripts still write.
func claudeToolNames() []string {
	return []string{
		"Agent", "AskUserQuestion", "Bash", "BashOutput", "CronCreate", "CronDelete", "CronList",
		"Edit", "EnterPlanMode", "EnterWorktree", "ExitPlanMode", "ExitWorktree", "Glob", "Grep",
		"KillShell", "LS", "LSP", "ListMcpResourcesTool", "MultiEdit", "NotebookEdit", "NotebookRead",
		"PowerShell", "Read", "ReadMcpResourceTool", "Skill", "SlashCommand", "Task", "TaskCreate",
		"TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate", "TodoRead", "TodoWrite",
		"ToolSearch", "WebFetch", "WebSearch", "Write",
	}
}
