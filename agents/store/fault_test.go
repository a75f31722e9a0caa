package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Every write of a session's state that fails is told to its OnWriteFailure, the first
// once, as a *FileError naming the file that was not written and its errno; the writer
// gets the same error. Here the writes fail because agents/ (or the whole session
// directory) is a regular file: ENOTDIR, which any user can make.
func TestWriteFailuresAreTold(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		write func(t *testing.T, s *Session) error
		path  func(s *Session) string
	}{
		{"sidecar", func(t *testing.T, s *Session) error { return s.WriteSidecar("a1", []byte("{}")) },
			func(s *Session) string { return filepath.Join(s.String(), agentsDir, "a1"+sidecarSuffix) }},
		{"task transcript", func(t *testing.T, s *Session) error {
			_, err := s.OpenTranscript(s.TaskTranscript("a1"), nil)
			return err
		}, func(s *Session) string { return s.TaskTranscript("a1") }},
		{"transcript append", func(t *testing.T, s *Session) error {
			tr, err := s.OpenParent(Info{SessionID: lockID}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			breakDir(t, s.String())
			return tr.Append(llm.UserText("hello"))
		}, func(s *Session) string { return s.ParentTranscript() }},
		{"session.json", func(t *testing.T, s *Session) error {
			breakDir(t, s.String())
			return s.WriteInfo(Info{SessionID: lockID})
		}, func(s *Session) string { return filepath.Join(s.String(), infoFile) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := New(t.TempDir(), "/w", lockID)
			if err := os.MkdirAll(s.String(), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(s.String(), agentsDir), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			var told []error
			s.OnWriteFailure(func(err error) { told = append(told, err) })
			err := c.write(t, s)
			var fe *FileError
			if !errors.As(err, &fe) || fe.Path != c.path(s) || fe.Errno() != syscall.ENOTDIR ||
				!errors.Is(err, ErrNotStored) || !strings.Contains(err.Error(), "(ENOTDIR)") {
				t.Fatalf("write = %v, want a *FileError for %s with ENOTDIR", err, c.path(s))
			}
			if len(told) != 1 || told[0] != fe {
				t.Fatalf("told %v, want the writer's error once", told)
			}
			// A second failure is not told again; WriteFailure keeps the first.
			_ = s.WriteSidecar("a2", []byte("{}"))
			if len(told) != 1 || s.WriteFailure() != told[0] {
				t.Errorf("after a second failure: told %d times, WriteFailure = %v", len(told), s.WriteFailure())
			}
			// A late listener hears of the failure at once.
			var late error
			s.OnWriteFailure(func(err error) { late = err })
			if late != told[0] {
				t.Errorf("late listener told %v", late)
			}
		})
	}
}

// The writer's lock records its pid; a lock that cannot be taken in a home where
// nothing can be created fails as a write that was not stored, naming the path.
func TestLockFailureIsNotStored(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "projects"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := New(home, "/w", lockID)
	_, err := s.Lock(t.Context(), 0)
	var fe *FileError
	if !errors.As(err, &fe) || !errors.Is(err, ErrNotStored) || fe.Errno() != syscall.ENOTDIR || !strings.Contains(err.Error(), s.String()) {
		t.Errorf("Lock = %v", err)
	}
}

// An ordinary read failure stays ErrBadFile (a usage error), not ErrNotStored.
func TestReadFailureIsBadFile(t *testing.T) {
	t.Parallel()
	s := New(t.TempDir(), "/w", lockID)
	if err := os.MkdirAll(filepath.Join(s.String(), infoFile), 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := s.ReadInfo()
	if !errors.Is(err, ErrBadFile) || errors.Is(err, ErrNotStored) || s.WriteFailure() != nil {
		t.Errorf("ReadInfo = %v; WriteFailure = %v", err, s.WriteFailure())
	}
}

// breakDir replaces the directory dir with a regular file: every write under it fails
// with ENOTDIR.
func breakDir(t *testing.T, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}
