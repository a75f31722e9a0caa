package tools

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// buffers are an editor's buffers (Files): the text they hold by path, and the writes
// they were sent. read or write false leaves that half to the disk (ErrOnDisk).
type buffers struct {
	mu          sync.Mutex
	text        map[string]string
	writes      []string // the paths written
	read, write bool
}

func (b *buffers) ReadTextFile(_ context.Context, path string) (string, error) {
	if !b.read {
		return "", ErrOnDisk
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.text[path], nil
}

func (b *buffers) WriteTextFile(_ context.Context, path, content string) error {
	if !b.write {
		return ErrOnDisk
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.text[path] = content
	b.writes = append(b.writes, path)
	return nil
}

func TestFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		read, write bool
		tool        string
		args        obj
		wantText    string // part of the result
		wantBuffer  string // the buffer's text after ("-": not written)
		wantDisk    string // f.txt on disk after
	}{
		{"read_file reads the buffer", true, true, NameReadFile, obj{"file_path": "f.txt"}, "unsaved", "-", "saved\n"},
		{"read_file on disk without read", false, true, NameReadFile, obj{"file_path": "f.txt"}, "saved", "-", "saved\n"},
		{"write_file writes the buffer", true, true, NameWriteFile, obj{"file_path": "f.txt", "content": "new\n"}, "overwrote f.txt", "new\n", "saved\n"},
		{"write_file on disk without write", true, false, NameWriteFile, obj{"file_path": "f.txt", "content": "new\n"}, "overwrote f.txt", "-", "new\n"},
		{"edit reads and writes the buffer", true, true, NameEdit, obj{"file_path": "f.txt", "old_string": "unsaved", "new_string": "edited"}, "replaced 1 occurrence", "edited\n", "saved\n"},
		{"edit reads the buffer, writes on disk", true, false, NameEdit, obj{"file_path": "f.txt", "old_string": "unsaved", "new_string": "edited"}, "replaced 1 occurrence", "-", "edited\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := &buffers{text: map[string]string{}, read: tt.read, write: tt.write}
			w := newWorkspace(t, ModeAutoEdit, map[string]string{"f.txt": "saved\n"}, WithFiles(b))
			path := filepath.Join(w.Root(), "f.txt")
			b.text[path] = "unsaved\n"
			res := call(t, w, tt.tool, tt.args)
			if res.IsError || !strings.Contains(res.Content, tt.wantText) {
				t.Fatalf("%s = %+v, want success containing %q", tt.tool, res, tt.wantText)
			}
			if tt.wantBuffer == "-" {
				if len(b.writes) > 0 {
					t.Errorf("the buffers were written: %v", b.writes)
				}
			} else if got := b.text[path]; got != tt.wantBuffer || len(b.writes) != 1 {
				t.Errorf("buffer %q after %d writes, want %q after 1", got, len(b.writes), tt.wantBuffer)
			}
			if got, _ := os.ReadFile(path); string(got) != tt.wantDisk {
				t.Errorf("disk %q, want %q", got, tt.wantDisk)
			}
		})
	}
}
