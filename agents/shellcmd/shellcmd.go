// Package shellcmd reads a bash command line the way bash would run it, without running
// it: the simple commands it holds at any depth (in lists, pipelines, subshells, blocks,
// loops, functions, $(…), backticks and process substitutions) and the files its
// redirections touch. Permission rules (package permission) and the checks on hook
// scripts are built on it. The parser is mvdan.cc/sh/v3/syntax in bash mode.
package shellcmd

import (
	"fmt"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Word is one word of a command as bash would pass it, when that can be known without
// running anything.
type Word struct {
	// Value is the word after quote removal; meaningful only when Literal.
	Value string
	// Literal: the word expands to Value and nothing else. Parameter and arithmetic
	// expansions, command and process substitutions, unquoted glob characters (* ? [),
	// braces and a leading ~ make a word not literal.
	Literal bool
}

// Command is one simple command.
type Command struct {
	// Words are the command name and its arguments. An assignment-only command
	// ("X=1") has none.
	Words []Word
	// Assigns: the command sets variables: NAME=value words before it or alone, or a
	// declaration builtin (export, declare, local, readonly, typeset).
	Assigns bool
}

// Name returns the command name when it is literal.
func (c Command) Name() (string, bool) {
	if len(c.Words) == 0 || !c.Words[0].Literal {
		return "", false
	}
	return c.Words[0].Value, true
}

// Redirect is a redirection from or to a file (not a here-document, not a descriptor
// duplication such as 2>&1).
type Redirect struct {
	// Write: the file is written (>, >>, >|, &>, &>>, <>, >&file); else it is read (<).
	Write  bool
	Target Word
}

// Script is what one command line does.
type Script struct {
	Commands  []Command
	Redirects []Redirect
	// Evaluated are the operands bash evaluates — as arithmetic ([[ x -eq y ]], (( )),
	// let, declare -i) or as a variable name ([[ -v x ]], test -v, [ -v, printf -v, read,
	// declare, unset, mapfile) — whose text holds a command substitution, backquotes or an
	// array subscript: bash runs the commands such an operand holds (a[$(cmd)]), and no
	// simple command of the script shows them when the text is quoted. Each is the operand
	// as written.
	Evaluated []string
}

// Parse parses src as bash. A command line bash would reject, or that this parser does
// not understand, is an error.
func Parse(src string) (*Script, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, fmt.Errorf("parse shell command: %w", err)
	}
	s := &Script{}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.TestClause:
			s.testExpr(src, n.X)
		case *syntax.ArithmCmd:
			s.quotedIn(src, n)
		case *syntax.LetClause:
			s.quotedIn(src, n)
		case *syntax.Stmt:
			for _, r := range n.Redirs {
				if rd, ok := redirect(r); ok {
					s.Redirects = append(s.Redirects, rd)
				}
			}
		case *syntax.CallExpr:
			c := Command{Assigns: len(n.Assigns) > 0}
			for _, w := range n.Args {
				c.Words = append(c.Words, word(w))
			}
			s.Commands = append(s.Commands, c)
			s.evaluatedArgs(src, c, n.Args)
		case *syntax.DeclClause:
			c := Command{Assigns: true, Words: []Word{{Value: n.Variant.Value, Literal: true}}}
			for _, a := range n.Args {
				if a.Naked && a.Name == nil && a.Value != nil {
					c.Words = append(c.Words, word(a.Value))
				} else {
					c.Words = append(c.Words, Word{})
				}
				// declare 'a[$(cmd)]=1', declare -i x='a[$(cmd)]', local a[i]=1
				if a.Index != nil || a.Value != nil && hides(literalText(a.Value)) {
					s.Evaluated = append(s.Evaluated, raw(src, a))
				}
			}
			s.Commands = append(s.Commands, c)
		}
		return true
	})
	return s, nil
}

// raw returns the source text of n.
func raw(src string, n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(src) || start > end {
		return ""
	}
	return src[start:end]
}

// literalText returns the text of w's literal parts, quoted or not (its parameter
// expansions, substitutions and the like left out): what bash hands on as written, and
// what it evaluates again when the operand is arithmetic or a variable name.
func literalText(w *syntax.Word) string {
	if w == nil {
		return ""
	}
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if lit, ok := q.(*syntax.Lit); ok {
					b.WriteString(lit.Value)
				}
			}
		}
	}
	return b.String()
}

// hides reports whether text, evaluated as arithmetic or a variable name, may run a
// command: it holds a command substitution, backquotes or an array subscript.
func hides(text string) bool {
	return strings.ContainsAny(text, "[`") || strings.Contains(text, "$(")
}

// testExpr records the operands of a [[ ]] test that bash evaluates: both sides of an
// arithmetic comparison, the name of -v and -R.
func (s *Script) testExpr(src string, e syntax.TestExpr) {
	switch e := e.(type) {
	case *syntax.BinaryTest:
		switch e.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, x := range []syntax.TestExpr{e.X, e.Y} {
				if w, ok := x.(*syntax.Word); ok && hides(literalText(w)) {
					s.Evaluated = append(s.Evaluated, raw(src, w))
				}
			}
		}
		s.testExpr(src, e.X)
		s.testExpr(src, e.Y)
	case *syntax.UnaryTest:
		if w, ok := e.X.(*syntax.Word); ok && (e.Op == syntax.TsVarSet || e.Op == syntax.TsRefVar) && hides(literalText(w)) {
			s.Evaluated = append(s.Evaluated, raw(src, w))
		}
		s.testExpr(src, e.X)
	case *syntax.ParenTest:
		s.testExpr(src, e.X)
	}
}

// quotedIn records an arithmetic command or let whose quoted operands would run
// commands: bash evaluates a quoted string there as arithmetic again.
func (s *Script) quotedIn(src string, n syntax.Node) {
	found := false
	syntax.Walk(n, func(m syntax.Node) bool {
		if w, ok := m.(*syntax.Word); ok && !found && hides(literalText(w)) {
			found = true
		}
		return !found
	})
	if found {
		s.Evaluated = append(s.Evaluated, raw(src, n))
	}
}

// evaluatedArgs records the operands of c (through wrappers: command read, builtin
// printf) that bash takes for variable names and evaluates: test -v and [ -v, printf -v,
// read's names, unset, mapfile and readarray, let.
func (s *Script) evaluatedArgs(src string, c Command, args []*syntax.Word) {
	var name string
	var words []*syntax.Word
	if u, ok := c.Unwrapped(); ok && len(u.Words) > 0 {
		name, _ = u.Name()
		skip := len(c.Words) - len(u.Words) // the wrapper words before the command
		words = args[skip+1:]
	} else if len(args) > 0 && literalText(args[0]) == "[" {
		name, words = "[", args[1:] // [ is a glob character to the word reader
	}
	add := func(i int) {
		if i >= 0 && i < len(words) && hides(literalText(words[i])) {
			s.Evaluated = append(s.Evaluated, raw(src, words[i]))
		}
	}
	lit := func(i int) string { return literalText(words[i]) }
	switch name {
	case "test", "[":
		for i := range words {
			if v := lit(i); v == "-v" || v == "-R" {
				add(i + 1)
			}
		}
	case "printf":
		for i := range words {
			switch v := lit(i); {
			case v == "-v":
				add(i + 1)
			case strings.HasPrefix(v, "-v"):
				add(i)
			}
		}
	case "read":
		for i := 0; i < len(words); i++ {
			switch v := lit(i); {
			case v == "-a":
				add(i + 1)
				i++
			case len(v) == 2 && v[0] == '-' && strings.ContainsRune("dinNptu", rune(v[1])):
				i++ // an option's value: a prompt, a delimiter, a count
			case strings.HasPrefix(v, "-"):
			default:
				add(i)
			}
		}
	case "unset", "mapfile", "readarray", "let":
		for i := range words {
			add(i)
		}
	}
}

// redirect classifies one redirection; ok is false for those that name no file.
func redirect(r *syntax.Redirect) (Redirect, bool) {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll,
		syntax.RdrAllClob, syntax.AppAll, syntax.AppAllClob, syntax.RdrInOut:
		return Redirect{Write: true, Target: word(r.Word)}, true
	case syntax.RdrIn:
		return Redirect{Target: word(r.Word)}, true
	case syntax.DplOut, syntax.DplIn:
		w := word(r.Word)
		if w.Literal && (w.Value == "-" || isDigits(strings.TrimSuffix(w.Value, "-"))) {
			return Redirect{}, false // 2>&1, >&-, <&3
		}
		return Redirect{Write: r.Op == syntax.DplOut, Target: w}, true
	}
	return Redirect{}, false // here-documents and here-strings
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// word evaluates w when it is literal.
func word(w *syntax.Word) Word {
	if w == nil || len(w.Parts) == 0 {
		return Word{}
	}
	var b strings.Builder
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				return Word{} // tilde expansion
			}
			if !unquoted(&b, p.Value) {
				return Word{}
			}
		case *syntax.SglQuoted:
			if p.Dollar && strings.Contains(p.Value, `\`) {
				return Word{} // $'…' with escapes
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return Word{} // $"…": translated
			}
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return Word{}
				}
				doubleQuoted(&b, lit.Value)
			}
		default:
			return Word{}
		}
	}
	return Word{Value: b.String(), Literal: true}
}

// unquoted writes an unquoted literal after quote removal; it reports false when bash
// would expand it (glob characters, braces).
func unquoted(b *strings.Builder, s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					b.WriteByte(s[i])
				}
			}
		case '*', '?', '[', '{':
			return false
		default:
			b.WriteByte(c)
		}
	}
	return true
}

// doubleQuoted writes a literal from inside double quotes after quote removal: a
// backslash escapes only $ ` " \ and a newline there.
func doubleQuoted(b *strings.Builder, s string) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(c)
	}
}

// shells are the interpreters whose -c argument is a command line of its own.
func shells() map[string]bool {
	return map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "ash": true, "mksh": true}
}

// Inner returns the command line c runs as a string, when it is literal: the argument
// of -c for a shell (bash -c '…', sh -ec '…'), of -c/--command for flock, su, runuser
// and script, and the joined arguments of eval, watch and sg.
// inner is false when c runs no such string; literal is false when it does but the
// string cannot be known without running anything, as for a shell that reads its
// commands from stdin (echo 'rm x' | sh, bash <<< …, sh -s).
func (c Command) Inner() (src string, inner, literal bool) {
	name, ok := c.Name()
	if !ok {
		return "", false, false
	}
	switch base := path.Base(name); {
	case base == "eval":
		var parts []string
		for _, w := range c.Words[1:] {
			if !w.Literal {
				return "", true, false
			}
			parts = append(parts, w.Value)
		}
		return strings.Join(parts, " "), true, true
	case len(stringOptions(base)) > 0:
		// flock f -c '…', su -c '…' user, script -c '…' log: the string is the command
		// line. Without one, su and script start a shell that reads stdin; flock runs
		// its command (Unwrapped).
		args := c.Words[1:]
		for i, w := range args {
			if !w.Literal {
				return "", true, false
			}
			if !isStringOption(base, w.Value) {
				continue
			}
			if _, v, ok := strings.Cut(w.Value, "="); ok {
				return v, true, true
			}
			if i+1 < len(args) && args[i+1].Literal {
				return args[i+1].Value, true, true
			}
			return "", true, false
		}
		return "", base != "flock", false
	case base == "watch" || base == "sg":
		// watch [options] command…, sg group [-c] command…: the words, joined, are run by sh -c
		args := c.Words[1:]
		for len(args) > 0 && args[0].Literal && strings.HasPrefix(args[0].Value, "-") && base == "watch" {
			if v := args[0].Value; (v == "-n" || v == "--interval") && len(args) > 1 {
				args = args[1:]
			}
			args = args[1:]
		}
		if base == "sg" && len(args) > 0 {
			args = args[1:] // the group
			if len(args) > 0 && args[0].Literal && args[0].Value == "-c" {
				args = args[1:]
			}
		}
		var parts []string
		for _, w := range args {
			if !w.Literal {
				return "", true, false
			}
			parts = append(parts, w.Value)
		}
		return strings.Join(parts, " "), true, true
	case shells()[base]:
		// Without -c a shell runs a script file, or, with no file named (or with -s, or
		// the operand -), the commands it reads from stdin: those cannot be known.
		hasC, stdin := false, false
		args := c.Words[1:]
		for i := 0; i < len(args); i++ {
			w := args[i]
			if !w.Literal {
				return "", true, false // an option or the operand we cannot read
			}
			switch v := w.Value; {
			case v == "--" || v == "-":
				switch {
				case i+1 < len(args) && hasC:
					return args[i+1].Value, true, args[i+1].Literal
				case hasC, v == "-", stdin, i+1 == len(args):
					return "", true, false
				}
				return "", false, false // bash -- script.sh
			case strings.HasPrefix(v, "--"):
				continue // --norc, --login, ...
			case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
				if v[0] == '-' && strings.ContainsRune(v[1:], 'c') {
					hasC = true
				}
				if v[0] == '-' && strings.ContainsRune(v[1:], 's') {
					stdin = true
				}
				if strings.ContainsAny(v[1:], "oO") {
					i++ // -o pipefail
				}
				continue
			}
			if hasC {
				return w.Value, true, true
			}
			return "", stdin, false // bash script.sh, or sh -s with arguments
		}
		return "", true, false // bash -c with nothing to run, or a shell reading stdin
	}
	return "", false, false
}

// opts are a wrapper's options, as getopt reads them: short options that take a value
// (attached, -n5, or the next word), that may take one (attached only), that take none
// (and may be grouped, -rt); long options likewise (--name=value, or the next word when
// the value is required), which may be shortened to any unambiguous prefix. An option
// that is not listed, or a prefix of several, cannot be read: the command it wraps is
// then unknown.
type opts struct {
	short, shortOpt, flags   string
	long, longOpt, longFlags []string
	operands                 int  // operands before the command: timeout's duration, flock's lock file
	assigns                  bool // NAME=value words before the command (env, sudo)
}

// wrappers are the commands that run their arguments as another command.
func wrappers() map[string]opts {
	return map[string]opts{
		"command": {flags: "pvV"}, "builtin": {}, "exec": {short: "a", flags: "cl"}, "nohup": {}, "time": {flags: "p"},
		"env": {short: "uC", flags: "i0v", assigns: true,
			long: strings.Fields("unset chdir argv0"), longOpt: strings.Fields("block-signal default-signal ignore-signal"),
			longFlags: strings.Fields("ignore-environment null debug list-signal-handling")},
		"nice": {short: "n", long: strings.Fields("adjustment")},
		"sudo": {short: "ugCDprtUT", flags: "AbBEeHiKklnNPSsVv", assigns: true,
			long:      strings.Fields("user group close-from chdir prompt role type other-user command-timeout host"),
			longOpt:   strings.Fields("preserve-env"),
			longFlags: strings.Fields("askpass background bell edit set-home login remove-timestamp reset-timestamp list non-interactive preserve-groups stdin shell validate")},
		"doas":    {short: "uC", flags: "nsL"},
		"timeout": {short: "sk", flags: "vp", long: strings.Fields("signal kill-after"), longFlags: strings.Fields("preserve-status foreground verbose"), operands: 1},
		"xargs": {short: "adEILnPs", shortOpt: "eil", flags: "0oprtx",
			long:      strings.Fields("arg-file delimiter max-args max-procs max-chars process-slot-var"),
			longOpt:   strings.Fields("eof replace max-lines"),
			longFlags: strings.Fields("null open-tty interactive no-run-if-empty verbose exit show-limits")},
		"stdbuf":   {short: "ioe", long: strings.Fields("input output error")},
		"setsid":   {flags: "cfw", longFlags: strings.Fields("ctty fork wait")},
		"chroot":   {long: strings.Fields("groups userspec"), longFlags: strings.Fields("skip-chdir"), operands: 1},
		"ionice":   {short: "cnpPu", flags: "t", long: strings.Fields("class classdata pid pgid uid"), longFlags: strings.Fields("ignore")},
		"unbuffer": {flags: "p"},
		"flock": {short: "wE", flags: "sxeunoF", long: strings.Fields("wait timeout conflict-exit-code"),
			longFlags: strings.Fields("shared exclusive unlock nonblock nb close no-fork verbose"), operands: 1},
		"taskset": {flags: "apc", longFlags: strings.Fields("all-tasks pid cpu-list"), operands: 1},
		"chrt": {short: "TPD", flags: "abdfiormpvR", long: strings.Fields("sched-runtime sched-period sched-deadline"),
			longFlags: strings.Fields("all-tasks batch deadline fifo idle other rr reset-on-fork max pid verbose"), operands: 1},
		"numactl": {short: "imNCpPw", flags: "lHsab",
			long:      strings.Fields("interleave membind cpunodebind physcpubind preferred preferred-many weighted-interleave"),
			longFlags: strings.Fields("localalloc hardware show all balancing")},
		"busybox":  {},
		"fakeroot": {short: "lsi", flags: "u", long: strings.Fields("lib faked"), longFlags: strings.Fields("unknown-is-real")},
		"strace": {short: "oepsuEPIabXS", flags: "fFcCdDhikqrtTvVwxyzZ",
			long:      strings.Fields("output expr attach string-limit user env trace-path interruptible columns const-print-style summary-sort-by"),
			longFlags: strings.Fields("follow-forks output-separately summary-only summary debug daemonize instruction-pointer stack-trace quiet relative-timestamps syscall-times no-abbrev summary-wall-clock")},
	}
}

// stringOptions are the options with which a wrapper runs a command line given as one
// string (flock -c '…') instead of a command: Unwrapped stops there and Inner reads it.
func stringOptions(wrapper string) []string {
	switch wrapper {
	case "flock", "su", "runuser", "script":
		return []string{"-c", "--command"}
	}
	return nil
}

// isStringOption reports whether word is one of wrapper's stringOptions (or its
// --command=… form).
func isStringOption(wrapper, word string) bool {
	for _, o := range stringOptions(wrapper) {
		if word == o || strings.HasPrefix(word, o+"=") && strings.HasPrefix(o, "--") {
			return true
		}
	}
	return false
}

// Unwrapped returns the command that c runs through wrappers such as env, nice, sudo,
// timeout, flock, taskset or xargs (after their options, read as getopt reads them, env's
// and sudo's NAME=value words and their operands: timeout's duration, flock's lock
// file), with the name shortened to its base name (/bin/rm is rm); ok is false when a
// word that decides it is not literal, or an option cannot be read (one the wrapper's
// table does not list, env -S's command line): its value might be the command. A command
// without a wrapper comes back with only its name shortened.
func (c Command) Unwrapped() (Command, bool) {
	words := c.Words
	for {
		if len(words) == 0 {
			return Command{Assigns: c.Assigns}, true
		}
		if !words[0].Literal {
			return Command{}, false
		}
		base := path.Base(words[0].Value)
		spec, wrapper := wrappers()[base]
		if !wrapper {
			out := append([]Word{{Value: base, Literal: true}}, words[1:]...)
			return Command{Words: out, Assigns: c.Assigns}, true
		}
		rest := words[1:]
		pending := spec.operands
		options := true
	scan:
		for len(rest) > 0 {
			w := rest[0]
			if !w.Literal {
				return Command{}, false
			}
			switch v := w.Value; {
			case options && v == "--":
				rest, options = rest[1:], false
			case options && isStringOption(base, v):
				// flock f -c '…': a command line, not a command; Inner reads it
				return Command{Words: append([]Word{{Value: base, Literal: true}}, words[1:]...), Assigns: c.Assigns}, true
			case options && base == "env" && v == "-":
				rest = rest[1:] // env - is env -i
			case options && base == "nice" && len(v) > 1 && v[0] == '-' && isDigits(strings.TrimPrefix(v[1:], "-")):
				rest = rest[1:] // nice -10, the old spelling of -n 10
			case options && strings.HasPrefix(v, "-") && len(v) > 1:
				n, ok := spec.consumes(v)
				if !ok || n > len(rest) {
					return Command{}, false
				}
				rest = rest[n:]
			case spec.assigns && strings.Contains(v, "=") && !strings.HasPrefix(v, "="):
				rest = rest[1:]
			case pending > 0:
				pending--
				rest = rest[1:]
			default:
				break scan
			}
		}
		words = rest
	}
}

// consumes reads the option word v (starting with -) and returns how many words it
// takes, itself and its value; ok is false when the table does not know it.
func (o opts) consumes(v string) (int, bool) {
	if name, _, eq := strings.Cut(strings.TrimPrefix(v, "--"), "="); strings.HasPrefix(v, "--") {
		kind, ok := o.longKind(name)
		switch {
		case !ok:
			return 0, false
		case kind == valueRequired && !eq:
			return 2, true
		case kind == valueNone && eq:
			return 0, false
		}
		return 1, true
	}
	for i := 1; i < len(v); i++ {
		c := rune(v[i])
		switch {
		case strings.ContainsRune(o.short, c):
			if i+1 < len(v) {
				return 1, true // -n5
			}
			return 2, true // -n 5
		case strings.ContainsRune(o.shortOpt, c):
			return 1, true // -i or -iREPL: the value is attached or absent
		case strings.ContainsRune(o.flags, c):
		default:
			return 0, false // env -S's command line among them
		}
	}
	return 1, true
}

// The kinds of long option.
const (
	valueNone = iota
	valueRequired
	valueOptional
)

// longKind finds the long option name, or the one it is an unambiguous prefix of.
func (o opts) longKind(name string) (int, bool) {
	kinds := []struct {
		names []string
		kind  int
	}{{o.long, valueRequired}, {o.longOpt, valueOptional}, {o.longFlags, valueNone}}
	found, kind := 0, 0
	for _, k := range kinds {
		for _, n := range k.names {
			if n == name {
				return k.kind, true
			}
			if strings.HasPrefix(n, name) && name != "" {
				found++
				kind = k.kind
			}
		}
	}
	return kind, found == 1
}
