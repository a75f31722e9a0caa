//go:build unix

package fsx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// OpenRegular, ReadRegular and OpenRegularFile refuse whatever is not a regular file,
// without blocking on it (a FIFO with no writer, a device) or following it (a link), and
// say what it is; a regular file is read whole.
func TestRegularOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	regular := filepath.Join(dir, "file")
	if err := os.WriteFile(regular, []byte("content\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "dir")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path string
		mode fs.FileMode
		kind string
	}{
		{sub, fs.ModeDir, "a directory"},
		{link, fs.ModeSymlink, "a symbolic link"},
		{fifo, fs.ModeNamedPipe, "a FIFO (named pipe)"},
		{os.DevNull, fs.ModeDevice | fs.ModeCharDevice, "a character device"},
	} {
		check := func(what string, err error) {
			t.Helper()
			var nr *NotRegularError
			if !errors.As(err, &nr) || !errors.Is(err, ErrNotRegular) || nr.Mode != c.mode || nr.Path != c.path {
				t.Errorf("%s %s: %v, want a *NotRegularError of mode %v", what, c.path, err, c.mode)
				return
			}
			if want := c.path + " is " + c.kind + ", not a regular file"; err.Error() != want {
				t.Errorf("%s: message %q, want %q", what, err, want)
			}
		}
		_, err := OpenRegular(c.path)
		check("OpenRegular", err)
		_, err = ReadRegular(c.path)
		check("ReadRegular", err)
		if c.path != os.DevNull {
			_, err = OpenRegularFile(c.path, os.O_RDWR, 0)
			check("OpenRegularFile", err)
		}
	}
	if data, err := ReadRegular(regular); err != nil || string(data) != "content\n" {
		t.Errorf("ReadRegular(regular) = %q, %v", data, err)
	}
	if _, err := ReadRegular(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	f, err := OpenRegularFile(filepath.Join(dir, "new"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatalf("OpenRegularFile create: %v", err)
	}
	f.Close()
	if !strings.HasSuffix(Kind(fs.ModeSocket), "socket") {
		t.Errorf("Kind(socket) = %q", Kind(fs.ModeSocket))
	}
}
