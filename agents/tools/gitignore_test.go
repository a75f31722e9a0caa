package tools

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestIgnorePattern(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		path    string
		isDir   bool
		want    bool
	}{
		{"*.log", "a.log", false, true},
		{"*.log", "x/y/a.log", false, true},
		{"*.log", "a.log.txt", false, false},
		{"build/", "build", true, true},
		{"build/", "x/build", true, true},
		{"build/", "build", false, false},
		{"/build", "build", false, true},
		{"/build", "x/build", false, false},
		{"doc/*.txt", "doc/a.txt", false, true},
		{"doc/*.txt", "doc/x/a.txt", false, false},
		{"doc/*.txt", "x/doc/a.txt", false, false},
		{"**/foo", "foo", false, true},
		{"**/foo", "a/b/foo", false, true},
		{"**/foo/bar", "a/foo/bar", false, true},
		{"abc/**", "abc/x", false, true},
		{"abc/**", "abc/x/y", false, true},
		{"abc/**", "abc", true, false},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**/b", "a/x/c", false, false},
		{"a/**/**/b", "a/b", false, true},
		{"f?o", "foo", false, true},
		{"f[!a]o", "foo", false, true},
		{"f[!o]o", "foo", false, false},
		{"f[^o]o", "foo", false, false},
		{"f[a-z]o", "fzo", false, true},
		{`\#lit`, "#lit", false, true},
		{`\!lit`, "!lit", false, true},
		{`sp\ `, "sp ", false, true},
		{"trail  ", "trail", false, true},
		{"crlf\r", "crlf", false, true},
		{`\*x`, "*x", false, true},
		{`\*x`, "ax", false, false},
		{"a*", "abc", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+"~"+tt.path, func(t *testing.T) {
			t.Parallel()
			ps := parseIgnore([]byte(tt.pattern))
			if len(ps) != 1 {
				t.Fatalf("parsed %d patterns", len(ps))
			}
			if got := ps[0].match(tt.path, tt.isDir); got != tt.want {
				t.Errorf("match = %v, want %v (%+v)", got, tt.want, ps[0])
			}
		})
	}
	for _, skipped := range []string{"", "# comment", "   ", "!", "/", "//"} {
		if ps := parseIgnore([]byte(skipped)); len(ps) != 0 {
			t.Errorf("%q parsed to %+v", skipped, ps)
		}
	}
}

// ignoreTree is a tree with root and nested .gitignore files, negations, anchored and
// directory-only patterns, and .git/info/exclude.
var ignoreTree = map[string]string{
	".gitignore":            "*.log\n!keep.log\n/build/\nnode_modules/\ntmp*\n!tmpkeep\n# a comment\ndocs/**/*.bak\n",
	".git/info/exclude":     "excluded.txt\n",
	"a.go":                  "package a\n",
	"a.log":                 "log\n",
	"keep.log":              "kept\n",
	"excluded.txt":          "x\n",
	"build/out.go":          "out\n",
	"sub/build/in.go":       "not anchored: kept\n",
	"node_modules/m.js":     "m\n",
	"sub/node_modules/n.js": "n\n",
	"tmpfile":               "t\n",
	"tmpkeep":               "t\n",
	"docs/x/y.bak":          "b\n",
	"docs/y.bak":            "b\n",
	"docs/y.md":             "m\n",
	"sub/.gitignore":        "*.txt\n!important.txt\n/local.go\nkeep.log\n",
	"sub/a.txt":             "a\n",
	"sub/important.txt":     "i\n",
	"sub/local.go":          "l\n",
	"sub/deeper/local.go":   "not anchored here\n",
	"sub/keep.log":          "ignored again below\n",
	"sub/deeper/d.txt":      "d\n",
	"sub/deeper/.gitignore": "!d.txt\n",
	"ign/.gitignore":        "*\n!.gitignore\n!inner/\n",
	"ign/inner/f.go":        "f\n",
	"ign/top.go":            "t\n",
	"dirneg/x/f.go":         "f\n",
	"dirneg/.gitignore":     "x/\n!x/f.go\n",
	"space.txt ":            "s\n",
}

// walkedFiles returns the files the walk visits below rel, sorted.
func walkedFiles(t *testing.T, w *Workspace, rel string) []string {
	t.Helper()
	base, err := w.Resolve(rel)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	_, err = w.walk(t.Context(), base, func(p string, isDir bool) error {
		if !isDir {
			got = append(got, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

func TestWalkIgnores(t *testing.T) {
	t.Parallel()
	w := newWorkspace(t, ModePlan, ignoreTree)
	want := []string{
		".gitignore", "a.go", "dirneg/.gitignore", "docs/y.md", "ign/.gitignore", "keep.log",
		"space.txt ", "sub/.gitignore", "sub/build/in.go", "sub/deeper/.gitignore", "sub/deeper/d.txt",
		"sub/deeper/local.go", "sub/important.txt", "tmpkeep",
	}
	if got := walkedFiles(t, w, ""); !slices.Equal(got, want) {
		t.Errorf("walk =\n%q\nwant\n%q", got, want)
	}
	// Starting below the root, the .gitignore files above still apply.
	if got, want := walkedFiles(t, w, "sub"), []string{"sub/.gitignore", "sub/build/in.go", "sub/deeper/.gitignore", "sub/deeper/d.txt", "sub/deeper/local.go", "sub/important.txt"}; !slices.Equal(got, want) {
		t.Errorf("walk sub =\n%q\nwant\n%q", got, want)
	}
	// A directory named explicitly is searched even if ignored; the rules still apply inside.
	if got, want := walkedFiles(t, w, "build"), []string{"build/out.go"}; !slices.Equal(got, want) {
		t.Errorf("walk build = %q, want %q", got, want)
	}
}

// TestWalkMatchesGit compares the walk with git's own view of the same tree: the files
// `git ls-files --others --exclude-standard` lists (nothing is tracked).
func TestWalkMatchesGit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w := newWorkspace(t, ModePlan, nil)
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = w.Root()
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	writeFiles(t, w.Root(), ignoreTree)
	var want []string
	for l := range strings.SplitSeq(git("ls-files", "-z", "--others", "--exclude-standard"), "\x00") {
		if l != "" {
			want = append(want, l)
		}
	}
	slices.Sort(want)
	if got := walkedFiles(t, w, ""); !slices.Equal(got, want) {
		t.Errorf("walk =\n%q\ngit =\n%q", got, want)
	}
}
