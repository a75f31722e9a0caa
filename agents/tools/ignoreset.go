package tools

import (
	"strings"
	"unicode/utf8"
)

// An ignore file is compiled into an ignoreSet, so that deciding a path costs about the
// same with 20 patterns or 20,000: a hostile checkout cannot make grep and glob slow
// with a long .gitignore (BenchmarkHostileGitignore). The shapes real ignore files are
// made of are indexed by what they match:
//
//   - a name at any depth (no / inside): a literal name, "*SUFFIX", "PREFIX*", and a
//     name with a few [...] classes (expanded to its literals, "*.py[cod]" to three
//     suffixes), looked up by the path's last component;
//   - the same below one literal directory ("/build", "doc/*.txt", "/[Bb]in/"), looked
//     up by the path's directory;
//   - everything inside a literal directory ("abc/**"), looked up by the path's
//     ancestors.
//
// A lookup costs a few map probes per byte of the path's last component and per
// directory above it, whatever the number of patterns. The patterns of other shapes
// (wildcards in a directory, "a/**/b", "*x*") are matched one by one, after the indexed
// ones: at most maxGeneralPatterns of them per file are kept, and an ignore file with
// more says so (Workspace.walk's notes).

// maxGeneralPatterns bounds the patterns of an ignore file that are matched one by one.
const maxGeneralPatterns = 32

// maxExpansions bounds the literals the [...] classes of one ignore file expand to;
// the patterns past it are matched one by one (and count against maxGeneralPatterns).
const maxExpansions = 100_000

// maxClassLiterals bounds the literals one pattern's classes expand to.
const maxClassLiterals = 32

// lastMatch holds, for one key of an index, 1 + the index of the last pattern that
// applies to any path (any) and of the last that applies only to directories (dir); 0
// when there is none.
type lastMatch struct{ any, dir int32 }

func (m *lastMatch) set(idx int, dirOnly bool) {
	v := int32(idx + 1)
	if dirOnly {
		m.dir = max(m.dir, v)
	} else {
		m.any = max(m.any, v)
	}
}

// best returns the larger of b and the last pattern of m that applies.
func (m lastMatch) best(b int, isDir bool) int {
	b = max(b, int(m.any)-1)
	if isDir {
		b = max(b, int(m.dir)-1)
	}
	return b
}

// trie indexes keys byte by byte, forward (prefixes) or from the end (suffixes).
type trie struct {
	next  map[uint64]int32 // node<<8 | byte → child node; node 0 is the root
	match []lastMatch      // by node: the patterns whose key ends there
}

func (t *trie) add(key string, reverse bool, idx int, dirOnly bool) {
	if t.next == nil {
		t.next, t.match = map[uint64]int32{}, make([]lastMatch, 1)
	}
	node := int32(0)
	for i := range len(key) {
		c := key[i]
		if reverse {
			c = key[len(key)-1-i]
		}
		k := uint64(node)<<8 | uint64(c)
		child, ok := t.next[k]
		if !ok {
			child = int32(len(t.match))
			t.match = append(t.match, lastMatch{})
			t.next[k] = child
		}
		node = child
	}
	t.match[node].set(idx, dirOnly)
}

// best returns the larger of b and the last pattern whose key s starts (or, reverse,
// ends) with.
func (t *trie) best(s string, reverse bool, b int, isDir bool) int {
	if t.next == nil {
		return b
	}
	node := int32(0)
	b = t.match[0].best(b, isDir)
	for i := range len(s) {
		c := s[i]
		if reverse {
			c = s[len(s)-1-i]
		}
		child, ok := t.next[uint64(node)<<8|uint64(c)]
		if !ok {
			break
		}
		node = child
		b = t.match[node].best(b, isDir)
	}
	return b
}

// nameIndex indexes patterns of one path component.
type nameIndex struct {
	names    map[string]lastMatch
	prefixes trie // "LIT*"
	suffixes trie // "*LIT"
}

func (n *nameIndex) best(name string, b int, isDir bool) int {
	if m, ok := n.names[name]; ok {
		b = m.best(b, isDir)
	}
	b = n.prefixes.best(name, false, b, isDir)
	return n.suffixes.best(name, true, b, isDir)
}

// ignoreSet is the compiled patterns of one ignore file.
type ignoreSet struct {
	patterns []ignorePattern
	anywhere nameIndex             // unanchored patterns: the path's last component
	below    map[string]*nameIndex // anchored "DIR/NAME": by the path's directory ("" for the file's own)
	inside   map[string]lastMatch  // anchored "DIR/**": by each ancestor of the path
	general  []int                 // the other patterns, by index, ascending
	// dropped counts the patterns left out past maxGeneralPatterns; truncated says that
	// the file was longer than maxIgnoreBytes.
	dropped   int
	truncated bool
}

// compileIgnore parses and compiles the content of an ignore file.
func compileIgnore(data []byte) *ignoreSet {
	s := &ignoreSet{patterns: parseIgnore(data)}
	budget := maxExpansions
	for i := range s.patterns {
		if !s.index(i, &budget) {
			if len(s.general) == maxGeneralPatterns {
				s.dropped++
				continue
			}
			s.general = append(s.general, i)
		}
	}
	return s
}

// index adds pattern i to an index; false when it has a shape no index takes.
func (s *ignoreSet) index(i int, budget *int) bool {
	p := &s.patterns[i]
	if !p.anchored {
		return addName(&s.anywhere, p.name, i, p.dirOnly, budget)
	}
	segs := p.segs
	if len(segs) == 2 && segs[0] == "**" { // "**/NAME" is NAME at any depth
		return addName(&s.anywhere, segs[1], i, p.dirOnly, budget)
	}
	dirs, last := segs[:len(segs)-1], segs[len(segs)-1]
	for _, d := range dirs {
		if !isLiteral(d) {
			return false
		}
	}
	dir := unescapeLiteral(strings.Join(dirs, "/"))
	if last == "**" {
		if len(dirs) == 0 {
			return false
		}
		if s.inside == nil {
			s.inside = map[string]lastMatch{}
		}
		m := s.inside[dir]
		m.set(i, p.dirOnly)
		s.inside[dir] = m
		return true
	}
	if s.below == nil {
		s.below = map[string]*nameIndex{}
	}
	n := s.below[dir]
	if n == nil {
		n = &nameIndex{}
	}
	if !addName(n, last, i, p.dirOnly, budget) {
		return false
	}
	s.below[dir] = n
	return true
}

// addName adds the component pattern pat (pattern idx) to n when it is a literal,
// "*LIT", "LIT*", or one of those with classes that expand to few literals.
func addName(n *nameIndex, pat string, idx int, dirOnly bool, budget *int) bool {
	star, body := 0, pat // -1: "*LIT", 1: "LIT*", 0: no star
	switch {
	case pat == "*":
		star, body = -1, ""
	case strings.HasPrefix(pat, "*"):
		star, body = -1, pat[1:]
	case strings.HasSuffix(pat, "*") && !strings.HasSuffix(pat, `\*`):
		star, body = 1, pat[:len(pat)-1]
	}
	lits, ok := expand(body)
	if !ok || len(lits) > *budget {
		return false
	}
	*budget -= len(lits)
	for _, lit := range lits {
		switch star {
		case -1:
			n.suffixes.add(lit, true, idx, dirOnly)
		case 1:
			n.prefixes.add(lit, false, idx, dirOnly)
		default:
			if n.names == nil {
				n.names = map[string]lastMatch{}
			}
			m := n.names[lit]
			m.set(idx, dirOnly)
			n.names[lit] = m
		}
	}
	return true
}

// expand returns the literal strings the component pattern pat matches when it has no
// wildcard other than ASCII [...] classes (escapes resolved), at most maxClassLiterals;
// false otherwise.
func expand(pat string) ([]string, bool) {
	out := [][]byte{nil}
	for i := 0; i < len(pat); {
		switch c := pat[i]; c {
		case '*', '?':
			return nil, false
		case '\\':
			if i+1 == len(pat) {
				return nil, false // path.Match: a bad pattern matches nothing
			}
			r, size := utf8.DecodeRuneInString(pat[i+1:])
			if r == utf8.RuneError && size == 1 {
				return nil, false // a bad pattern: matched one by one, it matches nothing
			}
			for j := range out {
				out[j] = append(out[j], pat[i+1:i+1+size]...)
			}
			i += 1 + size
		case '[':
			set, end, ok := classSet(pat[i:])
			if !ok || len(set)*len(out) > maxClassLiterals {
				return nil, false
			}
			grown := make([][]byte, 0, len(set)*len(out))
			for _, o := range out {
				for _, b := range set {
					grown = append(grown, append(o[:len(o):len(o)], b))
				}
			}
			out, i = grown, i+end
		default:
			for j := range out {
				out[j] = append(out[j], c)
			}
			i++
		}
	}
	lits := make([]string, len(out))
	for i, o := range out {
		lits[i] = string(o)
	}
	return lits, true
}

// classSet returns the bytes of an ASCII class at the start of s ("[abc]", "[a-z]",
// no negation, no escapes) and its length; false for any other class.
func classSet(s string) ([]byte, int, bool) {
	end := strings.IndexByte(s[1:], ']')
	if end <= 0 {
		return nil, 0, false
	}
	body := s[1 : end+1]
	if body[0] == '^' || strings.ContainsAny(body, `\[`) {
		return nil, 0, false
	}
	var set []byte
	seen := [128]bool{}
	add := func(b byte) {
		if !seen[b] {
			seen[b] = true
			set = append(set, b)
		}
	}
	for i := 0; i < len(body); i++ {
		lo := body[i]
		if lo >= utf8.RuneSelf || lo == '-' {
			return nil, 0, false // path.Match refuses a bare '-', and one that starts a range
		}
		if i+2 < len(body) && body[i+1] == '-' {
			hi := body[i+2]
			if hi >= utf8.RuneSelf || hi < lo || hi == '-' {
				return nil, 0, false
			}
			if int(hi-lo) >= maxClassLiterals {
				return nil, 0, false
			}
			for b := lo; b <= hi; b++ {
				add(b)
			}
			i += 2
			continue
		}
		add(lo)
	}
	return set, end + 2, true
}

// isLiteral reports whether the component pattern d has no wildcard (escapes allowed).
func isLiteral(d string) bool {
	return !strings.ContainsAny(d, "*?[") && !strings.HasSuffix(strings.ReplaceAll(d, `\\`, ""), `\`)
}

// unescapeLiteral resolves the \ escapes of literal components.
func unescapeLiteral(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// decide returns whether sub (relative to the file's directory, with /) is ignored, and
// whether any pattern of the file applies to it at all (else the next file out decides).
func (s *ignoreSet) decide(sub string, isDir bool) (ignored, decided bool) {
	slash := strings.LastIndexByte(sub, '/')
	name, dir := sub[slash+1:], ""
	if slash >= 0 {
		dir = sub[:slash]
	}
	b := s.anywhere.best(name, -1, isDir)
	if n := s.below[dir]; n != nil {
		b = n.best(name, b, isDir)
	}
	if len(s.inside) > 0 {
		for i := range len(sub) {
			if sub[i] == '/' {
				if m, ok := s.inside[sub[:i]]; ok {
					b = m.best(b, isDir)
				}
			}
		}
	}
	for k := len(s.general) - 1; k >= 0 && s.general[k] > b; k-- {
		if s.patterns[s.general[k]].match(sub, isDir) {
			b = s.general[k]
			break
		}
	}
	if b < 0 {
		return false, false
	}
	return !s.patterns[b].negate, true
}
