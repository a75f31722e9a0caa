package tools

import (
	"bytes"
	"path"
	"strings"
)

// This file is a small matcher of the gitignore(5) rules grep and glob need: comments,
// blank lines, trailing spaces, \ escapes, ! negation, a trailing / for directories only,
// a / at the start or in the middle anchoring the pattern to its .gitignore's directory, a
// pattern without / matching a name at any depth, *, ?, [...] (with ! or ^ to negate) within
// one path component, and ** as a whole component matching any number of them. Deeper
// .gitignore files override shallower ones, and within a file the last matching pattern
// wins. A directory that is ignored is not entered, so nothing below it can be re-included,
// as in git. Not covered: core.excludesFile and the index (tracked files that match an
// ignore pattern are still ignored here).
//
// go-git's plumbing/format/gitignore would do the matching, but it brings go-billy, gcfg
// and encoding/gob into the binary: 0.6 MB more, and 0.7 to 1 ms more init at every start
// (encoding/gob's, measured with GODEBUG=inittrace=1). TestWalkMatchesGit checks this
// matcher against git itself.

// ignoreRules is the stack of ignore files that applies in one directory of a walk: the
// innermost first, each compiled into an ignoreSet.
type ignoreRules struct {
	parent *ignoreRules
	dir    string // the directory of the file, relative to the workspace root, with /; "" is the root
	set    *ignoreSet
}

type ignorePattern struct {
	negate   bool
	dirOnly  bool
	anchored bool     // matched against the path below dir, component by component
	segs     []string // anchored: the pattern's components ("**" for any number)
	name     string   // not anchored: matched against the last component
	literal  bool     // name has no wildcard
}

// push returns the rules with one more ignore file's, found in dir.
func (r *ignoreRules) push(dir string, set *ignoreSet) *ignoreRules {
	if set == nil || len(set.patterns) == 0 {
		return r
	}
	return &ignoreRules{parent: r, dir: dir, set: set}
}

// ignored reports whether rel (relative to the workspace root, with /) is ignored.
func (r *ignoreRules) ignored(rel string, isDir bool) bool {
	for s := r; s != nil; s = s.parent {
		sub := rel
		if s.dir != "" {
			var ok bool
			if sub, ok = strings.CutPrefix(rel, s.dir+"/"); !ok {
				continue
			}
		}
		if ignored, decided := s.set.decide(sub, isDir); decided {
			return ignored
		}
	}
	return false
}

func (p *ignorePattern) match(sub string, isDir bool) bool {
	if p.dirOnly && !isDir {
		return false
	}
	if !p.anchored {
		name := sub[strings.LastIndexByte(sub, '/')+1:]
		if p.literal {
			return name == p.name
		}
		ok, _ := path.Match(p.name, name)
		return ok
	}
	return matchSegments(p.segs, strings.Split(sub, "/"))
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return len(segs) > 0 // "dir/**" matches everything inside dir
			}
			for i := range len(segs) + 1 {
				if matchSegments(rest, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// parseIgnore parses the content of a .gitignore file.
func parseIgnore(data []byte) []ignorePattern {
	var out []ignorePattern
	for raw := range bytes.SplitSeq(data, []byte{'\n'}) {
		line := strings.TrimSuffix(string(raw), "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		// Trailing spaces are dropped unless escaped with a backslash.
		for strings.HasSuffix(line, " ") && !strings.HasSuffix(line, `\ `) {
			line = line[:len(line)-1]
		}
		if line == "" {
			continue
		}
		var p ignorePattern
		switch {
		case line[0] == '!':
			p.negate, line = true, line[1:]
		case strings.HasPrefix(line, `\!`), strings.HasPrefix(line, `\#`):
			line = line[1:]
		}
		if strings.HasSuffix(line, "/") {
			p.dirOnly, line = true, strings.TrimRight(line, "/")
		}
		if line == "" {
			continue
		}
		line = bracketNegation(line)
		if strings.Contains(line, "/") {
			p.anchored = true
			for s := range strings.SplitSeq(strings.TrimLeft(line, "/"), "/") {
				if s == "" || (s == "**" && len(p.segs) > 0 && p.segs[len(p.segs)-1] == "**") {
					continue
				}
				p.segs = append(p.segs, s)
			}
			if len(p.segs) == 0 {
				continue
			}
		} else {
			p.name = line
			p.literal = !strings.ContainsAny(line, `*?[\`)
		}
		out = append(out, p)
	}
	return out
}

// bracketNegation rewrites git's [!...] to path.Match's [^...].
func bracketNegation(s string) string {
	if !strings.Contains(s, "[!") {
		return s
	}
	b := []byte(s)
	for i := 0; i < len(b)-1; i++ {
		switch {
		case b[i] == '\\':
			i++
		case b[i] == '[' && b[i+1] == '!':
			b[i+1] = '^'
		}
	}
	return string(b)
}
