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
		case *syntax.DeclClause:
			c := Command{Assigns: true, Words: []Word{{Value: n.Variant.Value, Literal: true}}}
			for _, a := range n.Args {
				if a.Naked && a.Name == nil && a.Value != nil {
					c.Words = append(c.Words, word(a.Value))
				} else {
					c.Words = append(c.Words, Word{})
				}
			}
			s.Commands = append(s.Commands, c)
		}
		return true
	})
	return s, nil
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

// wrappers are commands that run their arguments as another command, with the options
// that take a separate value.
func wrappers() map[string]map[string]bool {
	return map[string]map[string]bool{
		"command": {}, "builtin": {}, "exec": {"-a": true}, "nohup": {}, "time": {},
		"env":     {"-u": true, "-C": true, "-S": true, "--unset": true, "--chdir": true},
		"nice":    {"-n": true, "--adjustment": true},
		"sudo":    {"-u": true, "-g": true, "-C": true, "-D": true, "-h": true, "-p": true, "-r": true, "-t": true, "-U": true},
		"doas":    {"-u": true, "-C": true},
		"timeout": {"-s": true, "-k": true, "--signal": true, "--kill-after": true},
		"xargs":   {"-I": true, "-n": true, "-P": true, "-L": true, "-d": true, "-E": true, "-s": true, "-a": true},
		"stdbuf":  {"-i": true, "-o": true, "-e": true},
		"setsid":  {}, "chroot": {}, "ionice": {"-c": true, "-n": true, "-p": true}, "unbuffer": {},
		"flock":   {"-w": true, "--timeout": true, "-E": true, "--conflict-exit-code": true},
		"taskset": {}, "chrt": {}, "numactl": {"-N": true, "-m": true, "-C": true, "-i": true, "-p": true},
	}
}

// operands are how many operands a wrapper takes before the command it runs: timeout's
// duration, flock's lock file, taskset's CPU mask, chrt's priority.
func operands(wrapper string) int {
	switch wrapper {
	case "timeout", "flock", "taskset", "chrt":
		return 1
	}
	return 0
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
// timeout, flock, taskset or xargs (after their options, env's NAME=value words and
// their operands: timeout's duration, flock's lock file), with the name shortened to its base name (/bin/rm is rm); ok is false when
// a word that decides it is not literal. A command without a wrapper comes back with
// only its name shortened.
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
		opts, wrapper := wrappers()[base]
		if !wrapper {
			out := append([]Word{{Value: base, Literal: true}}, words[1:]...)
			return Command{Words: out, Assigns: c.Assigns}, true
		}
		rest := words[1:]
		pending := operands(base)
		for len(rest) > 0 {
			w := rest[0]
			if !w.Literal {
				return Command{}, false
			}
			switch {
			case w.Value == "--":
				rest = rest[1:]
			case isStringOption(base, w.Value):
				// flock f -c '…': a command line, not a command; Inner reads it
				return Command{Words: append([]Word{{Value: base, Literal: true}}, words[1:]...), Assigns: c.Assigns}, true
			case strings.HasPrefix(w.Value, "-"):
				rest = rest[1:]
				if opts[w.Value] && len(rest) > 0 {
					rest = rest[1:]
				}
				continue
			case base == "env" && strings.Contains(w.Value, "="):
				rest = rest[1:]
				continue
			case pending > 0:
				pending--
				rest = rest[1:]
				continue
			}
			break
		}
		words = rest
	}
}
