package tools

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestGrep(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"a.go":           "package a\n\nfunc Hello() {}\nfunc hello() {}\n",
		"b.txt":          "hello world\r\nnothing\nHELLO again\n",
		"sub/c.go":       "// Hello from c\n",
		"sub/deep/d.go":  "x := \"Hello\"\n",
		"bin.dat":        "Hello\x00binary",
		".gitignore":     "*.log\n!keep.log\nbuild/\n",
		"a.log":          "Hello log\n",
		"keep.log":       "Hello kept\n",
		"build/out.go":   "Hello build\n",
		"sub/.gitignore": "deep/\n!*.md\n",
		"sub/notes.md":   "Hello md\n",
		".git/HEAD":      "Hello git\n",
		"span.txt":       "foo\nbar\nfoo bar\n",
		"long.txt":       strings.Repeat("ab", 20) + "Hello" + strings.Repeat("cd", 20) + "\n",
		"utf.txt":        "ok \xff Hello\n",
		"empty.txt":      "",
		"noeol.txt":      "last Hello",
		"ws/x/y.go":      "Hello y\n",
	}
	w := newWorkspace(t, ModePlan, files, WithLimits(Limits{GrepLineChars: 30}))
	tests := []struct {
		name    string
		args    obj
		want    []string // the lines, in order; nil: want no matches
		wantErr string
	}{
		{"literal", obj{"pattern": "Hello"}, []string{
			"a.go:3:func Hello() {}",
			"keep.log:1:Hello kept",
			"long.txt:1:ababababababababababababababab [… cut]",
			"noeol.txt:1:last Hello",
			"sub/c.go:1:// Hello from c",
			"sub/notes.md:1:Hello md",
			"utf.txt:1:ok \uFFFD Hello",
			"ws/x/y.go:1:Hello y",
		}, ""},
		{"regexp, case folding", obj{"pattern": "(?i)^hello"}, []string{"b.txt:1:hello world", "b.txt:3:HELLO again", "keep.log:1:Hello kept", "sub/notes.md:1:Hello md", "ws/x/y.go:1:Hello y"}, ""},
		{"anchors are per line", obj{"pattern": "^func \\w+\\(\\) \\{\\}$"}, []string{"a.go:3:func Hello() {}", "a.go:4:func hello() {}"}, ""},
		{"no match across lines", obj{"pattern": "foo\\s+bar"}, []string{"span.txt:3:foo bar"}, ""},
		{"glob on names", obj{"pattern": "Hello", "glob": "*.go"}, []string{"a.go:3:func Hello() {}", "sub/c.go:1:// Hello from c", "ws/x/y.go:1:Hello y"}, ""},
		{"glob on paths", obj{"pattern": "Hello", "glob": "sub/**"}, []string{"sub/c.go:1:// Hello from c", "sub/notes.md:1:Hello md"}, ""},
		{"glob below path", obj{"pattern": "Hello", "path": "ws", "glob": "x/*.go"}, []string{"ws/x/y.go:1:Hello y"}, ""},
		{"braces", obj{"pattern": "Hello", "glob": "*.{md,log}"}, []string{"keep.log:1:Hello kept", "sub/notes.md:1:Hello md"}, ""},
		{"path", obj{"pattern": "Hello", "path": "sub"}, []string{"sub/c.go:1:// Hello from c", "sub/notes.md:1:Hello md"}, ""},
		{"ignored directory named", obj{"pattern": "Hello", "path": "sub/deep"}, []string{"sub/deep/d.go:1:x := \"Hello\""}, ""},
		{"one file", obj{"pattern": "l+o", "path": "b.txt"}, []string{"b.txt:1:hello world"}, ""},
		{"one ignored file", obj{"pattern": "Hello", "path": "a.log"}, []string{"a.log:1:Hello log"}, ""},
		{"one binary file", obj{"pattern": "Hello", "path": "bin.dat"}, []string{"bin.dat is a binary file; it was not searched"}, ""},
		{"no matches", obj{"pattern": "zzz"}, []string{`no matches for "zzz" in .`}, ""},
		{"bad regexp", obj{"pattern": "a(b"}, nil, "invalid regular expression: error parsing regexp: missing closing ): `(?m)a(b`"},
		{"bad glob", obj{"pattern": "a", "glob": "[x"}, nil, "invalid glob"},
		{"missing path", obj{"pattern": "a", "path": "nope"}, nil, "nope does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, w, NameGrep, tt.args)
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(res.Content, tt.wantErr) {
					t.Errorf("grep(%v) = %+v, want error %q", tt.args, res, tt.wantErr)
				}
				return
			}
			if want := strings.Join(tt.want, "\n"); res.IsError || res.Content != want {
				t.Errorf("grep(%v) =\n%s\nwant\n%s", tt.args, res.Content, want)
			}
		})
	}
}

// The cap keeps the first matching lines in walk order whatever the workers' timing, and
// says there may be more.
func TestGrepCap(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 400 {
		files[fmt.Sprintf("d%02d/f%03d.txt", i%13, i)] = strings.Repeat("match\nnope\n", i%4)
	}
	files["d00/many.txt"] = strings.Repeat("match\n", 1000)
	w := newWorkspace(t, ModePlan, files, WithLimits(Limits{GrepMatches: 40}))
	first := call(t, w, NameGrep, obj{"pattern": "match"})
	lines := strings.Split(first.Content, "\n")
	if len(lines) != 41 || lines[40] != "[stopped after 40 matching lines; there may be more: narrow the pattern, the path or the glob]" {
		t.Fatalf("grep = %d lines:\n%s", len(lines), first.Content)
	}
	// The reference: the files in walk order (here: sorted paths), searched one by one.
	paths := slices.Sorted(maps.Keys(files))
	var want []string
	for _, p := range paths {
		for i, l := range strings.Split(files[p], "\n") {
			if l == "match" && len(want) < 40 {
				want = append(want, fmt.Sprintf("%s:%d:match", p, i+1))
			}
		}
	}
	if got := lines[:40]; !slices.Equal(got, want) {
		t.Errorf("grep =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for range 20 {
		if again := call(t, w, NameGrep, obj{"pattern": "match"}); again.Content != first.Content {
			t.Fatalf("grep changed between calls:\n%s\n---\n%s", first.Content, again.Content)
		}
	}
	// One file with more matches than the cap.
	res := call(t, w, NameGrep, obj{"pattern": "match", "path": "d00/many.txt"})
	if lines := strings.Split(res.Content, "\n"); len(lines) != 41 || lines[39] != "d00/many.txt:40:match" {
		t.Errorf("one file: %d lines, %q", len(lines), lines[len(lines)-2:])
	}
	// The output cap also holds.
	small := newWorkspace(t, ModePlan, files, WithLimits(Limits{OutputChars: 100}))
	res = call(t, small, NameGrep, obj{"pattern": "match"})
	if len(res.Content) > 200 || !strings.Contains(res.Content, "[stopped after 4 matching lines") {
		t.Errorf("output cap: %q", res.Content)
	}
}

func TestGrepCancelled(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("d%d/f%d.txt", i%5, i)] = "x\n"
	}
	w := newWorkspace(t, ModePlan, files)
	ts, _ := w.Tools([]string{"Grep"})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := NewSet(ts...).Run(ctx, Call{Name: NameGrep, Input: []byte(`{"pattern":"x"}`)})
	if !res.IsError || !strings.Contains(res.Content, "cancelled") {
		t.Errorf("grep = %+v", res)
	}
}
