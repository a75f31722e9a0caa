package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestEdit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		file     string // content of f.txt before; "-" for no file
		args     obj    // file_path defaults to f.txt
		wantErr  string // part of the error; "" for success
		wantFile string // content of f.txt after
		wantText string // part of the result
	}{
		{"once", "a\nb\nc\n", obj{"old_string": "b", "new_string": "B"}, "", "a\nB\nc\n", "replaced 1 occurrence in f.txt; the lines around it now read:\n     1\ta\n     2\tB\n     3\tc"},
		{"none", "a\nb\n", obj{"old_string": "x", "new_string": "y"}, "old_string was not found in f.txt (0 matches)", "a\nb\n", ""},
		{"whitespace matters", "\tb\n", obj{"old_string": "    b", "new_string": "y"}, "0 matches", "\tb\n", ""},
		{"many", "x x\nx\n", obj{"old_string": "x", "new_string": "y"}, "old_string occurs 3 times in f.txt; it must match exactly once", "x x\nx\n", ""},
		{"replace_all", "x x\nx\n", obj{"old_string": "x", "new_string": "yy", "replace_all": true}, "", "yy yy\nyy\n", "replaced 3 occurrences"},
		{"replace_all of one", "x\n", obj{"old_string": "x", "new_string": "y", "replace_all": true}, "", "y\n", "replaced 1 occurrence"},
		{"multi-line", "func f() {\n\treturn 1\n}\n", obj{"old_string": "\treturn 1\n}", "new_string": "\treturn 2\n}"}, "", "func f() {\n\treturn 2\n}\n", "     2\t\treturn 2"},
		{"delete", "keep\ndrop\n", obj{"old_string": "drop\n", "new_string": ""}, "", "keep\n", "replaced 1 occurrence"},
		{"crlf file", "a\r\nb\r\nc\r\n", obj{"old_string": "a\nb", "new_string": "a\nB"}, "", "a\r\nB\r\nc\r\n", "replaced 1 occurrence"},
		{"same strings", "a\n", obj{"old_string": "a", "new_string": "a"}, "the same", "a\n", ""},
		{"missing file", "-", obj{"old_string": "a", "new_string": "b"}, "f.txt does not exist", "-", ""},
		{"create with empty old_string", "-", obj{"file_path": "new/f.txt", "old_string": "", "new_string": "n\n"}, "", "-", "created new/f.txt"},
		{"empty old_string on an empty file", "", obj{"old_string": "", "new_string": "n\n"}, "", "n\n", "wrote f.txt"},
		{"empty old_string on a file", "a\n", obj{"old_string": "", "new_string": "n"}, "exists and is not empty", "a\n", ""},
		{"binary", "a\x00b", obj{"old_string": "a", "new_string": "c"}, "binary file", "a\x00b", ""},
		{"directory", "-", obj{"file_path": "d", "old_string": "a", "new_string": "c"}, "d is a directory", "-", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			files := map[string]string{"d/": ""}
			if tt.file != "-" {
				files["f.txt"] = tt.file
			}
			w := newWorkspace(t, ModeAutoEdit, files)
			args := obj{"file_path": "f.txt"}
			for k, v := range tt.args {
				args[k] = v
			}
			res := call(t, w, NameEdit, args)
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(res.Content, tt.wantErr) {
					t.Errorf("edit = %+v, want an error containing %q", res, tt.wantErr)
				}
			} else if res.IsError || !strings.Contains(res.Content, tt.wantText) {
				t.Errorf("edit = %+v, want success containing %q", res, tt.wantText)
			}
			got := "-"
			if b, err := os.ReadFile(filepath.Join(w.Root(), "f.txt")); err == nil {
				got = string(b)
			}
			if got != tt.wantFile {
				t.Errorf("f.txt = %q, want %q", got, tt.wantFile)
			}
		})
	}
}

// The snippet shows a few lines around the change, not the whole file.
func TestEditSnippet(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	w := newWorkspace(t, ModeAutoEdit, map[string]string{"f.txt": b.String()})
	res := call(t, w, NameEdit, obj{"file_path": "f.txt", "old_string": "line 50\n", "new_string": "fifty\n"})
	want := "replaced 1 occurrence in f.txt; the lines around it now read:\n" +
		"    47\tline 47\n    48\tline 48\n    49\tline 49\n    50\tfifty\n    51\tline 51\n    52\tline 52\n    53\tline 53\n    54\tline 54"
	if res.Content != want {
		t.Errorf("edit =\n%s\nwant\n%s", res.Content, want)
	}
}

// Concurrent edits of one file (a model may send several in one turn) all land.
func TestEditConcurrent(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 20 {
		fmt.Fprintf(&b, "v%d\n", i)
	}
	w := newWorkspace(t, ModeAutoEdit, map[string]string{"f.txt": b.String()})
	ts, _ := w.Tools(nil)
	set := NewSet(ts...)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			in := fmt.Sprintf(`{"file_path":"f.txt","old_string":"v%d\n","new_string":"done%d\n"}`, i, i)
			if res := set.Run(t.Context(), Call{Name: NameEdit, Input: []byte(in)}); res.IsError {
				t.Errorf("edit %d: %s", i, res.Content)
			}
		})
	}
	wg.Wait()
	if got := readBack(t, w, "f.txt"); strings.Contains(got, "v") {
		t.Errorf("edits were lost:\n%s", got)
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, content string
		wantErr             string
		wantText            string
	}{
		{"new", "n.txt", "hello\n", "", "created n.txt (6 bytes)"},
		{"parents", "a/b/c/n.txt", "x", "", "created a/b/c/n.txt (1 bytes)"},
		{"overwrite", "old.txt", "new", "", "overwrote old.txt (3 bytes)"},
		{"empty content", "e.txt", "", "", "created e.txt (0 bytes)"},
		{"a directory", "d", "x", "d: is a directory", ""},
		{"under a file", "old.txt/x", "x", "not a directory", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorkspace(t, ModeAutoEdit, map[string]string{"old.txt": "old content\n", "d/": ""})
			res := call(t, w, NameWriteFile, obj{"file_path": tt.path, "content": tt.content})
			if tt.wantErr != "" {
				if !res.IsError || !strings.Contains(res.Content, tt.wantErr) {
					t.Errorf("write_file = %+v, want error %q", res, tt.wantErr)
				}
				if got := readBack(t, w, "old.txt"); got != "old content\n" {
					t.Errorf("old.txt = %q", got)
				}
				return
			}
			if res.IsError || res.Content != tt.wantText {
				t.Errorf("write_file = %+v, want %q", res, tt.wantText)
			}
			if got := readBack(t, w, tt.path); got != tt.content {
				t.Errorf("%s = %q, want %q", tt.path, got, tt.content)
			}
		})
	}
}

// Overwriting keeps the file's mode.
func TestWriteFileKeepsMode(t *testing.T) {
	t.Parallel()
	w := newWorkspace(t, ModeAutoEdit, map[string]string{"run.sh": "#!/bin/sh\n"})
	p := filepath.Join(w.Root(), "run.sh")
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool string
		args obj
	}{
		{NameWriteFile, obj{"file_path": "run.sh", "content": "#!/bin/sh\necho\n"}},
		{NameEdit, obj{"file_path": "run.sh", "old_string": "echo", "new_string": "echo hi"}},
	} {
		if res := call(t, w, c.tool, c.args); res.IsError {
			t.Fatalf("%s: %s", c.tool, res.Content)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("after %s the mode is %v (%v)", c.tool, fi.Mode(), err)
		}
	}
}

func TestSnippet(t *testing.T) {
	t.Parallel()
	var long strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&long, "n%d\n", i)
	}
	tests := []struct {
		name, text, repl string
		want             []int // the line numbers shown
	}{
		{"first line", "NEW\nb\nc\nd\ne\nf\n", "NEW", []int{1, 2, 3, 4}},
		{"last line without newline", "a\nb\nc\nd\nNEW", "NEW", []int{2, 3, 4, 5}},
		{"only line", "NEW", "NEW", []int{1}},
		{"long new text is cut at 20 lines", "a\n" + long.String() + "z\n", long.String(), []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24}},
		{"deleted text", "a\nb\nc\nd\ne\nf\ng\nh\n", "", []int{1, 2, 3, 4, 5, 6, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			at := strings.Index(tt.text, tt.repl)
			if tt.repl == "" {
				at = strings.Index(tt.text, "d")
			}
			var b strings.Builder
			snippet(&b, tt.text, at, len(tt.repl), 100)
			var got []int
			for l := range strings.Lines(b.String()) {
				var n int
				fmt.Sscanf(l, "%d", &n)
				got = append(got, n)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("lines %v, want %v:\n%s", got, tt.want, b.String())
			}
		})
	}
}

// A file larger than Limits.EditBytes is refused before it is read, with its size and
// what to do instead; one at the limit is edited.
func TestEditRefusesLargeFiles(t *testing.T) {
	t.Parallel()
	big, fits := strings.Repeat("a", 149)+"b", strings.Repeat("a", 99)+"b"
	w := newWorkspace(t, ModeYolo, map[string]string{"big.txt": big, "fits.txt": fits}, WithLimits(Limits{EditBytes: 100}))
	res := call(t, w, NameEdit, obj{"file_path": "big.txt", "old_string": "b", "new_string": "c"})
	if !res.IsError || res.Content != "edit: big.txt is 150 bytes, larger than the 100 bytes edit changes (it holds the whole file in memory); change it with the shell tool (sed, a script) or split it" {
		t.Errorf("edit of a file past the limit = %+v", res)
	}
	if got := readBack(t, w, "big.txt"); got != big {
		t.Errorf("the refused file changed: %q", got)
	}
	if res := call(t, w, NameEdit, obj{"file_path": "fits.txt", "old_string": "b", "new_string": "c"}); res.IsError || readBack(t, w, "fits.txt") != strings.Repeat("a", 99)+"c" {
		t.Errorf("edit of a file at the limit = %+v", res)
	}
	if got := byteSize(200 << 20); got != "200 MiB" {
		t.Errorf("byteSize(200 MiB) = %q", got)
	}
}
