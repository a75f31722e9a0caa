//go:build unix

package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A session directory others may write, or a file in it that is not the user's, is
// refused by Lock and LockShared (a resume, a new session, a fork); the dirs stoke
// creates are 0700.
func TestUnsafeSessionRefused(t *testing.T) {
	t.Parallel()
	const id = "5e55a0f0-0000-4000-8000-000000000001"
	tests := []struct {
		name  string
		spoil func(t *testing.T, home string, s *Session)
		root  bool // needs root (to give a file to another user)
		why   string
	}{
		{name: "projects/ writable by everyone", spoil: func(t *testing.T, home string, s *Session) {
			chmod(t, filepath.Join(home, "projects"), 0o777)
		}, why: "is writable by everyone"},
		{name: "the session directory writable by everyone", spoil: func(t *testing.T, home string, s *Session) {
			chmod(t, s.dir, 0o777)
		}, why: "is writable by everyone"},
		{name: "a transcript writable by everyone", spoil: func(t *testing.T, home string, s *Session) {
			chmod(t, s.ParentTranscript(), 0o666)
		}, why: "is writable by everyone"},
		{name: "a transcript of another user", root: true, spoil: func(t *testing.T, home string, s *Session) {
			if err := os.Chown(s.ParentTranscript(), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, why: "belongs to uid 65534"},
		{name: "a project dir of another user", root: true, spoil: func(t *testing.T, home string, s *Session) {
			if err := os.Chown(filepath.Dir(s.dir), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, why: "belongs to uid 65534"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.root && os.Geteuid() != 0 {
				t.Skip("needs root to give a file to another user")
			}
			home := t.TempDir()
			s := New(home, "/work/project", id)
			l, err := s.Lock(t.Context(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(s.ParentTranscript(), []byte("{}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			_ = l.Unlock()
			for _, d := range []string{filepath.Join(home, "projects"), filepath.Dir(s.dir), s.dir} {
				if fi, err := os.Stat(d); err != nil || fi.Mode().Perm()&0o077 != 0 {
					t.Fatalf("%s: mode %v (%v), want 0700", d, fi.Mode(), err)
				}
			}
			// A wait: a child another test forks may hold a copy of l's descriptor a moment.
			if _, err := s.Lock(t.Context(), 10*time.Second); err != nil {
				t.Fatalf("control: a sound session is refused: %v", err)
			}
			tt.spoil(t, home, s)
			for name, lock := range map[string]func() (*Lock, error){
				"Lock":       func() (*Lock, error) { return s.Lock(t.Context(), 0) },
				"LockShared": func() (*Lock, error) { return s.LockShared(t.Context(), 0) },
			} {
				l, err := lock()
				if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), tt.why) || strings.Contains(err.Error(), "\n") {
					t.Errorf("%s = %v, want ErrUnsafe saying %q on one line", name, err, tt.why)
				}
				_ = l.Unlock()
			}
		})
	}
}

func chmod(t *testing.T, p string, m os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
}
