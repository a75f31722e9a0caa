package tools

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestGlob(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"main.go":            "",
		"b.go":               "",
		"README.md":          "",
		"cmd/run.go":         "",
		"cmd/run_test.go":    "",
		"cmd/sub/deep.go":    "",
		"web/app.ts":         "",
		"web/app.tsx":        "",
		"web/app.js":         "",
		"vendor/v.go":        "",
		".gitignore":         "vendor/\n*.tmp\n",
		"x.tmp":              "",
		".git/config":        "",
		".hidden/h.go":       "",
		"empty/":             "",
		"a-b/z.go":           "",
		"a/z.go":             "",
		"with space/file.go": "",
	}
	w := newWorkspace(t, ModePlan, files, WithLimits(Limits{GlobResults: 5}))
	tests := []struct {
		name    string
		args    obj
		want    string
		wantErr bool
	}{
		{"top level", obj{"pattern": "*.go"}, "b.go\nmain.go", false},
		{"recursive sorted", obj{"pattern": "**/z.go"}, "a-b/z.go\na/z.go", false},
		{"entries with directories", obj{"pattern": "*", "path": "cmd"}, "cmd/run.go\ncmd/run_test.go\ncmd/sub/", false},
		{"static prefix", obj{"pattern": "cmd/**/*.go"}, "cmd/run.go\ncmd/run_test.go\ncmd/sub/deep.go", false},
		{"path and pattern", obj{"pattern": "**/*_test.go", "path": "cmd"}, "cmd/run_test.go", false},
		{"braces", obj{"pattern": "web/*.{ts,tsx}"}, "web/app.ts\nweb/app.tsx", false},
		{"absolute pattern", obj{"pattern": filepath.Join(w.Root(), "web", "*.js")}, "web/app.js", false},
		{"hidden dirs are searched", obj{"pattern": ".hidden/*"}, ".hidden/h.go", false},
		{"ignored and .git skipped", obj{"pattern": "**/{v.go,x.tmp,config}"}, "no paths match", false},
		{"ignored dir named", obj{"pattern": "*", "path": "vendor"}, "vendor/v.go", false},
		{"spaces", obj{"pattern": "with space/*"}, "with space/file.go", false},
		{"no match", obj{"pattern": "*.rs"}, `no paths match "*.rs" in .`, false},
		{"capped", obj{"pattern": "**/*.go"}, ".hidden/h.go\na-b/z.go\na/z.go\nb.go\ncmd/run.go\n[5 paths shown; there are more: narrow the pattern or the path]", false},
		{"bad pattern", obj{"pattern": "[a-"}, "invalid pattern", true},
		{"missing path", obj{"pattern": "*", "path": "nope"}, "nope does not exist", true},
		{"path is a file", obj{"pattern": "*", "path": "main.go"}, "not a directory", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, w, NameGlob, tt.args)
			if res.IsError != tt.wantErr || !strings.Contains(res.Content, tt.want) || (!tt.wantErr && !strings.HasPrefix(tt.want, "no ") && res.Content != tt.want) {
				t.Errorf("glob(%v) =\n%s\n(error %v), want\n%s", tt.args, res.Content, res.IsError, tt.want)
			}
		})
	}
}

// The cap keeps the first paths in walk order, so the same call gives the same answer.
func TestGlobCapStable(t *testing.T) {
	t.Parallel()
	files := map[string]string{}
	for i := range 300 {
		files[fmt.Sprintf("d%d/f%d.txt", i%7, i)] = ""
	}
	w := newWorkspace(t, ModePlan, files, WithLimits(Limits{GlobResults: 50}))
	first := call(t, w, NameGlob, obj{"pattern": "**/*.txt"})
	if !strings.Contains(first.Content, "[50 paths shown") {
		t.Fatalf("not capped: %s", first.Content)
	}
	for range 5 {
		if again := call(t, w, NameGlob, obj{"pattern": "**/*.txt"}); again.Content != first.Content {
			t.Fatalf("glob changed between calls:\n%s\n---\n%s", first.Content, again.Content)
		}
	}
}
