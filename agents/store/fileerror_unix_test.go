//go:build unix

package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

// A session file that is a directory, a FIFO or a device is refused by every reader of
// the store with a *FileError naming it and what it is, without blocking on it.
func TestBadSessionFiles(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		make func(path string) error
		what string
	}{
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, "is a directory, not a regular file"},
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) }, "is a FIFO (named pipe), not a regular file"},
		{"symlink", func(p string) error { return os.Symlink(os.DevNull, p) }, "is a symbolic link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := New(t.TempDir(), "/w", lockID)
			if err := os.MkdirAll(filepath.Join(s.String(), agentsDir), 0o700); err != nil {
				t.Fatal(err)
			}
			for _, path := range []string{s.ParentTranscript(), filepath.Join(s.String(), infoFile), filepath.Join(s.String(), agentsDir, "a1"+sidecarSuffix)} {
				if err := c.make(path); err != nil {
					t.Fatal(err)
				}
			}
			check := func(what string, err error) {
				t.Helper()
				if err == nil || !strings.Contains(err.Error(), c.what) {
					t.Errorf("%s: %v, want an error saying %q", what, err, c.what)
				}
				if c.name != "symlink" && !errors.Is(err, ErrBadFile) {
					t.Errorf("%s: %v is not ErrBadFile", what, err)
				}
			}
			_, err := s.ReadTranscript(s.ParentTranscript())
			check("ReadTranscript", err)
			_, err = s.ReadInfo()
			check("ReadInfo", err)
			_, err = s.ReadSidecar("a1")
			check("ReadSidecar", err)
			if c.name != "symlink" {
				_, err = ProbeTranscript(s.ParentTranscript())
				check("ProbeTranscript", err)
				_, err = s.OpenParent(Info{SessionID: lockID}, nil)
				check("OpenParent", err)
			}
		})
	}
}

// A device is refused like a FIFO, and a FileError names the path and keeps the errno of
// a failed system call.
func TestFileErrorNamesPathAndErrno(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "session.jsonl")
	_, err := LoadTranscript(t.Context(), os.DevNull)
	var fe *FileError
	if !errors.As(err, &fe) || fe.Path != os.DevNull || !strings.Contains(err.Error(), "is a character device") {
		t.Errorf("LoadTranscript(%s) = %v", os.DevNull, err)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// A failure of a system call keeps its errno, and names it; a failed write is
	// ErrNotStored (the run fails, exit 1), a failed read ErrBadFile (exit 2).
	fe = &FileError{Path: path, Op: "write", Err: &os.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}}
	if fe.Errno() != syscall.ENOSPC || !errors.Is(fe, syscall.ENOSPC) || !errors.Is(fe, ErrNotStored) || errors.Is(fe, ErrBadFile) ||
		fe.Error() != "cannot write session file "+path+": no space left on device (ENOSPC)" {
		t.Errorf("FileError = %q (errno %v)", fe, fe.Errno())
	}
	fe = &FileError{Path: path, Op: "read", Err: &os.PathError{Op: "read", Path: path, Err: syscall.EIO}}
	if !errors.Is(fe, ErrBadFile) || errors.Is(fe, ErrNotStored) || fe.Error() != "cannot read session file "+path+": input/output error (EIO)" {
		t.Errorf("FileError = %q", fe)
	}
}

// A load stops once its context is done, however long the transcript.
func TestLoadTranscriptStopsWithTheContext(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	tr, err := OpenTranscript(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		role := llm.RoleUser
		if i%2 == 1 {
			role = llm.RoleAssistant
		}
		if err := tr.Append(llm.Message{Role: role, Content: []llm.Block{llm.TextBlock("line")}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	whole, err := LoadTranscript(t.Context(), path)
	if err != nil || len(whole.Messages) != 1000 {
		t.Fatalf("whole load: %v, %d messages", err, len(whole.Messages))
	}
	stop := errors.New("stopped")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(stop)
	if l, err := LoadTranscript(ctx, path); !errors.Is(err, stop) || l != nil {
		t.Errorf("cancelled load = %v (loaded: %v); want the cause", err, l != nil)
	}
}
