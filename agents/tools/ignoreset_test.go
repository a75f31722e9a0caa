package tools

import (
	"fmt"
	"strings"
	"testing"
)

// naiveDecide is what an ignore file decides for sub, pattern by pattern: the last
// pattern that matches wins.
func naiveDecide(ps []ignorePattern, sub string, isDir bool) (ignored, decided bool) {
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].match(sub, isDir) {
			return !ps[i].negate, true
		}
	}
	return false, false
}

// ignoreCases are ignore files and paths whose decision the compiled set must give as
// the patterns one by one do: every indexed shape, negations over them, directories only.
var ignoreCases = []struct {
	file  string
	paths []string
}{
	{"*.log\n!keep.log\n/build/\nnode_modules/\ntmp*\n!tmpkeep\ndocs/**/*.bak\n",
		[]string{"a.log", "x/keep.log", "build", "x/build", "node_modules", "a/node_modules", "tmpfile", "tmpkeep", "docs/x/y.bak", "docs/y.bak", "docs/y.md"}},
	{"*.py[cod]\n*$py.class\n[Dd]ebug/\n*.[Cc]ache\n!?*.[Cc]ache/\n*.sw[a-p]\n*- [Bb]ackup ([0-9]).rdl\n",
		[]string{"a.pyc", "a.pyo", "a.pyx", "x$py.class", "Debug", "debug", "dEbug", "x.Cache", "x.cache", "d.cache", "a.swp", "a.swq", "r- Backup (3).rdl", "r- backup (x).rdl"}},
	{"/[Ll]ibrary/\n.vscode/*\n!.vscode/settings.json\nabc/**\n**/foo\na/**/b\n\\#lit\nsp\\ \n\\*x\na\\*\n",
		[]string{"Library", "library", "x/Library", ".vscode/a.json", ".vscode/settings.json", ".vscode/x/y", "abc", "abc/x", "abc/x/y", "foo", "q/foo", "a/b", "a/x/b", "#lit", "sp ", "*x", "ax", "a*", "ab"}},
	{"*\n!*.go\n!*/\n", []string{"x.go", "x.txt", "dir", "dir/y.go", "dir/y.md"}},
	{"f[!a]o\nf[^o]o\nf[a-z]o\n[z-a]x\n[a-]y\nbad\\\n", []string{"foo", "fbo", "fzo", "fAo", "zx", "ax", "ay", "-y", "bad"}},
	{"ü*\n*é\n[ü]x\n?y\n", []string{"über", "café", "üx", "ëy", "yy", "y"}},
}

func TestIgnoreSetMatchesPatternByPattern(t *testing.T) {
	t.Parallel()
	for i, c := range ignoreCases {
		set := compileIgnore([]byte(c.file))
		for _, p := range c.paths {
			for _, isDir := range []bool{false, true} {
				gi, gd := set.decide(p, isDir)
				wi, wd := naiveDecide(set.patterns, p, isDir)
				if gi != wi || gd != wd {
					t.Errorf("case %d, %q (dir %v): compiled says ignored=%v decided=%v, the patterns one by one %v %v", i, p, isDir, gi, gd, wi, wd)
				}
			}
		}
	}
}

// Only the patterns no index takes are matched one by one, and past maxGeneralPatterns
// they are counted as dropped (the walk's note says so); indexed shapes are never dropped.
func TestIgnoreSetIndexesAndCaps(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "name%d\n*.ext%d\npre%d*\n/dir%d/\nbuild%d/**\n**/cache%d\ndoc%d/*.bak\n*.[Ll]og%d\n", i, i, i, i, i, i, i, i)
	}
	for i := range 40 {
		fmt.Fprintf(&b, "*mid%03d*\n", i)
	}
	set := compileIgnore([]byte(b.String()))
	if len(set.general) != maxGeneralPatterns || set.dropped != 40-maxGeneralPatterns {
		t.Fatalf("%d patterns matched one by one, %d dropped; want %d and %d", len(set.general), set.dropped, maxGeneralPatterns, 40-maxGeneralPatterns)
	}
	for _, c := range []struct {
		path  string
		isDir bool
		want  bool
	}{
		{"x/name4999", false, true}, {"a.ext17", false, true}, {"pre3x", false, true}, {"dir12", true, true},
		{"dir12", false, false}, {"build9/x/y", false, true}, {"z/cache4", false, true}, {"doc5/a.bak", false, true},
		{"doc5/x/a.bak", false, false}, {"a.Log3", false, true}, {"xmid001y", false, true}, {"xmid035y", false, false},
		{"plain.go", false, false},
	} {
		if got, _ := set.decide(c.path, c.isDir); got != c.want {
			t.Errorf("decide(%q, dir %v) = %v, want %v", c.path, c.isDir, got, c.want)
		}
	}
}

// The walk says when an ignore file was not applied whole.
func TestWalkNotesDroppedPatterns(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range maxGeneralPatterns + 3 {
		fmt.Fprintf(&b, "*mid%d*\n", i)
	}
	w := newWorkspace(t, ModePlan, map[string]string{".gitignore": b.String(), "sub/a.go": "package a\n"})
	res := call(t, w, NameGlob, obj{"pattern": "**/*.go"})
	if res.IsError || !strings.Contains(res.Content, "sub/a.go") ||
		!strings.Contains(res.Content, "[note: .gitignore has 3 more patterns of the kind matched one by one than the 32 applied") {
		t.Errorf("glob = %q", res.Content)
	}
	res = call(t, w, NameGrep, obj{"pattern": "package"})
	if res.IsError || !strings.Contains(res.Content, "[note: .gitignore has 3 more patterns") {
		t.Errorf("grep = %q", res.Content)
	}
}

func FuzzIgnore(f *testing.F) {
	for _, c := range ignoreCases {
		for _, p := range c.paths {
			f.Add([]byte(c.file), p, false)
		}
	}
	for p := range ignoreTree {
		f.Add([]byte(ignoreTree[".gitignore"]), p, true)
	}
	f.Fuzz(func(t *testing.T, file []byte, path string, isDir bool) {
		var parts []string
		for _, p := range strings.Split(path, "/") {
			if p != "" {
				parts = append(parts, p)
			}
		}
		if len(parts) == 0 {
			return
		}
		sub := strings.Join(parts, "/")
		set := compileIgnore(file)
		if set.dropped > 0 {
			return // the one-by-one patterns past the cap are left out on purpose
		}
		gi, gd := set.decide(sub, isDir)
		wi, wd := naiveDecide(set.patterns, sub, isDir)
		if gi != wi || gd != wd {
			t.Fatalf("%q (dir %v) under %q: compiled says ignored=%v decided=%v, the patterns one by one %v %v", sub, isDir, file, gi, gd, wi, wd)
		}
	})
}
