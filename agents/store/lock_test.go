package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const lockID = "0e9c4b7a-5d3f-4e21-9a8b-7c6d5e4f3a21"

func TestLockOneWriter(t *testing.T) {
	t.Parallel()
	s := New(t.TempDir(), "/work/repo", lockID)
	first, err := s.Lock(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(s.String(), lockFile))
	if err != nil || strings.TrimSpace(string(data)) != strconv.Itoa(os.Getpid()) {
		t.Fatalf("lock file = %q, %v; want this pid", data, err)
	}
	// A second writer (another open file description: flock tells them apart even in one
	// process) fails at once, naming the session and the holder.
	_, err = s.Lock(t.Context(), 0)
	var locked *LockedError
	if !errors.As(err, &locked) || !errors.Is(err, ErrLocked) || locked.PID != os.Getpid() || locked.SessionID != lockID {
		t.Fatalf("second lock: %v", err)
	}
	if want := "session " + lockID + " is in use by another stoke run (pid " + strconv.Itoa(os.Getpid()) + ")"; err.Error() != want {
		t.Errorf("message = %q, want %q", err, want)
	}
	// A shared hold (a fork's) waits for the writer too.
	if _, err := s.LockShared(t.Context(), 0); !errors.Is(err, ErrLocked) {
		t.Errorf("shared hold beside a writer: %v", err)
	}
	// Waiting gives up after the wait, saying so.
	start := time.Now()
	_, err = s.Lock(t.Context(), 50*time.Millisecond)
	if !errors.As(err, &locked) || locked.Waited != 50*time.Millisecond || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("waited lock: %v after %v", err, time.Since(start))
	}
	if !strings.HasSuffix(err.Error(), "(waited 50ms)") {
		t.Errorf("message = %q", err)
	}
	// Waiting ends with the context.
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errors.New("interrupted"))
	if _, err := s.Lock(ctx, time.Hour); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("lock under a cancelled context: %v", err)
	}
	// Once released, the next writer gets it.
	if err := first.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := first.Unlock(); err != nil {
		t.Errorf("second unlock: %v", err)
	}
	// With a wait: a child another test forks at this moment holds a copy of the
	// descriptor, and so the lock, until it execs (flock follows the open file).
	second, err := s.Lock(t.Context(), 10*time.Second)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	_ = second.Unlock()
}

// A writer waiting for the lock gets it when the holder lets go.
func TestLockWaitsForTheHolder(t *testing.T) {
	t.Parallel()
	s := New(t.TempDir(), "/work/repo", lockID)
	held, err := s.Lock(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := s.Lock(t.Context(), time.Minute)
		if err == nil {
			err = l.Unlock()
		}
		got <- err
	}()
	_ = held.Unlock()
	if err := <-got; err != nil {
		t.Fatalf("waiting writer: %v", err)
	}
}

func TestLockSharedWritesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := At(filepath.Join(dir, lockID))
	// No lock file: nothing to hold, nothing created.
	l, err := s.LockShared(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = l.Unlock()
	if _, err := os.Stat(s.String()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a shared hold created the session dir: %v", err)
	}
	w, err := s.Lock(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	_ = w.Unlock()
	before, _ := os.ReadFile(filepath.Join(s.String(), lockFile))
	a, err := s.LockShared(t.Context(), 10*time.Second) // a forked child may hold w's copy a moment
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.LockShared(t.Context(), 0) // readers share
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lock(t.Context(), 0); !errors.Is(err, ErrLocked) {
		t.Errorf("writer beside readers: %v", err)
	}
	_, _ = a.Unlock(), b.Unlock()
	if after, _ := os.ReadFile(filepath.Join(s.String(), lockFile)); string(after) != string(before) {
		t.Errorf("a shared hold wrote the lock file: %q -> %q", before, after)
	}
}

// A holder that has not recorded its pid (the lock file is empty) is said to be unknown.
func TestLockHolderUnknown(t *testing.T) {
	t.Parallel()
	s := New(t.TempDir(), "/work/repo", lockID)
	held, err := s.Lock(t.Context(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	if err := os.Truncate(filepath.Join(s.String(), lockFile), 0); err != nil {
		t.Fatal(err)
	}
	_, err = s.Lock(t.Context(), 0)
	var locked *LockedError
	if !errors.As(err, &locked) || locked.PID != 0 {
		t.Fatalf("lock beside a silent holder: %v", err)
	}
	if want := "session " + lockID + " is in use by another stoke run (pid unknown: it has not recorded it)"; err.Error() != want {
		t.Errorf("message = %q, want %q", err, want)
	}
}
