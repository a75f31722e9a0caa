package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func numberedLines(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%6d\tline %d\n", i, i)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	var ten strings.Builder
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&ten, "line %d\n", i)
	}
	long := strings.Repeat("é", 30) // 60 bytes
	files := map[string]string{
		"ten.txt":     ten.String(),
		"noeol.txt":   "a\nb",
		"crlf.txt":    "a\r\nb\r\n",
		"empty.txt":   "",
		"blank.txt":   "\n",
		"long.txt":    long + "\nshort\n",
		"bin.dat":     "PNG\x00\x01\x02",
		"dir/x.txt":   "x",
		"invalid.txt": "ok \xff\xfe\n",
	}
	w := newWorkspace(t, ModePlan, files, WithLimits(Limits{ReadLines: 4, LineChars: 21, ReadChars: 200}))
	tests := []struct {
		name    string
		args    obj
		want    string
		wantErr bool
	}{
		{"default window", obj{"file_path": "ten.txt"}, numberedLines(1, 4) + "\n[lines 1-4 of ten.txt shown; more follow: read on with offset=5]", false},
		{"offset and limit", obj{"file_path": "ten.txt", "offset": 3, "limit": 2}, numberedLines(3, 4) + "\n[lines 3-4 of ten.txt shown; more follow: read on with offset=5]", false},
		{"offset 0 is the start", obj{"file_path": "ten.txt", "offset": 0, "limit": 1}, numberedLines(1, 1) + "\n[lines 1-1 of ten.txt shown; more follow: read on with offset=2]", false},
		{"to the end", obj{"file_path": "ten.txt", "offset": 8, "limit": 5}, numberedLines(8, 10), false},
		{"exactly to the end", obj{"file_path": "ten.txt", "offset": 9, "limit": 2}, numberedLines(9, 10), false},
		{"last line", obj{"file_path": "ten.txt", "offset": 10}, numberedLines(10, 10), false},
		{"past the end", obj{"file_path": "ten.txt", "offset": 11}, "offset 11 is past the end of ten.txt, which has 10 lines", true},
		{"absolute path", obj{"file_path": filepath.Join(w.Root(), "ten.txt"), "limit": 1}, numberedLines(1, 1) + "\n[lines 1-1 of ten.txt shown; more follow: read on with offset=2]", false},
		{"no final newline", obj{"file_path": "noeol.txt"}, "     1\ta\n     2\tb", false},
		{"crlf", obj{"file_path": "crlf.txt"}, "     1\ta\n     2\tb", false},
		{"empty", obj{"file_path": "empty.txt"}, "[empty.txt is empty]", false},
		{"empty past the end", obj{"file_path": "empty.txt", "offset": 2}, "past the end of empty.txt, which is empty", true},
		{"one blank line", obj{"file_path": "blank.txt"}, "     1\t", false},
		{"long line cut at a rune", obj{"file_path": "long.txt"}, "     1\t" + strings.Repeat("é", 10) + " [… line cut at 21 characters]\n     2\tshort", false},
		{"invalid utf-8", obj{"file_path": "invalid.txt"}, "     1\tok \uFFFD", false},
		{"binary", obj{"file_path": "bin.dat"}, "bin.dat is a binary file", true},
		{"directory", obj{"file_path": "dir"}, "dir is a directory", true},
		{"missing", obj{"file_path": "nope.txt"}, "nope.txt does not exist", true},
		{"under a file", obj{"file_path": "ten.txt/x"}, "not a directory", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, w, NameReadFile, tt.args)
			if res.IsError != tt.wantErr || !strings.Contains(res.Content, tt.want) || (!tt.wantErr && res.Content != tt.want) {
				t.Errorf("read_file(%v) =\n%s\n(error %v), want\n%s", tt.args, res.Content, res.IsError, tt.want)
			}
		})
	}
}

// The whole output stays under ReadChars; the note says where to read on.
func TestReadFileCharCap(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("x", 50)
	w := newWorkspace(t, ModePlan, map[string]string{"wide.txt": strings.Repeat(line+"\n", 100)},
		WithLimits(Limits{ReadChars: 200}))
	res := call(t, w, NameReadFile, obj{"file_path": "wide.txt"})
	want := fmt.Sprintf("     1\t%s\n     2\t%s\n     3\t%s\n[lines 1-3 of wide.txt shown (the output is cut to stay short); more follow: read on with offset=4]", line, line, line)
	if res.IsError || res.Content != want {
		t.Errorf("read_file =\n%s", res.Content)
	}
}

// A FIFO is refused without blocking on open.
func TestReadFileSpecial(t *testing.T) {
	t.Parallel()
	w := newWorkspace(t, ModePlan, nil)
	if err := mkfifo(filepath.Join(w.Root(), "fifo")); err != nil {
		t.Skip("no mkfifo:", err)
	}
	for _, tool := range []string{NameReadFile, NameGrep} {
		args := obj{"file_path": "fifo"}
		if tool == NameGrep {
			args = obj{"pattern": "x", "path": "fifo"}
		}
		if res := call(t, w, tool, args); !res.IsError || !strings.Contains(res.Content, "not a regular file") {
			t.Errorf("%s(fifo) = %+v", tool, res)
		}
	}
	if _, err := os.Stat(filepath.Join(w.Root(), "fifo")); err != nil {
		t.Fatal(err)
	}
}
