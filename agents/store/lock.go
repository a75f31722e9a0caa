package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stoke-cli/stoke/agents/internal/fsx"
)

// lockFile is the file of a session directory its writer holds locked. It holds the
// writer's pid, for the message a second writer gets; the lock itself is the kernel's
// (flock on Unix, LockFileEx on Windows), so a writer that dies, however it dies, never
// leaves the session locked.
const lockFile = "session.lock"

// ErrLocked: another process holds the session (a *LockedError says which).
var ErrLocked = errors.New("session in use")

// LockedError is the error of a lock that another process holds.
type LockedError struct {
	// SessionID is the session's id (its directory's name).
	SessionID string
	// PID is the holder's process id, as it wrote it in the lock file (0: not known yet).
	PID int
	// Waited is how long the lock was waited for.
	Waited time.Duration
}

func (e *LockedError) Error() string {
	holder := "another stoke run (pid unknown: it has not recorded it)"
	if e.PID > 0 {
		holder = fmt.Sprintf("another stoke run (pid %d)", e.PID)
	}
	msg := fmt.Sprintf("session %s is in use by %s", e.SessionID, holder)
	if e.Waited > 0 {
		msg += fmt.Sprintf(" (waited %v)", e.Waited)
	}
	return msg
}

// Is makes errors.Is(err, ErrLocked) hold.
func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// Lock is a held lock on a session directory. Unlock releases it; the kernel releases it
// when the process ends.
type Lock struct {
	f *os.File
}

// Unlock releases the lock. Idempotent; a nil Lock is a no-op.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the only descriptor releases the lock
	l.f = nil
	return err
}

// lock modes
const (
	exclusive = iota // a writer: creates the lock file and records its pid
	shared           // a reader that needs a still picture (a fork): writes nothing
)

// Lock takes the session's writer lock: one writer per session. It creates the session
// directory (0700) and the lock file when missing, and records this process's pid in it.
// A session that is not the user's own or that others may write is refused (ErrUnsafe).
// When another process holds the lock, Lock fails at once with a *LockedError if wait is
// 0; otherwise it tries again until wait has passed (then the *LockedError) or ctx ends.
func (s *Session) Lock(ctx context.Context, wait time.Duration) (*Lock, error) {
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("create session dir: %w", s.failures.failed(s.dir, err))
	}
	if err := s.checkSafe(); err != nil {
		return nil, err
	}
	return s.lock(ctx, wait, exclusive)
}

// LockShared takes a shared hold on the session: no writer holds it meanwhile, so what
// is read is a still picture (other shared holders may read too). It writes nothing into
// the session directory: a session that has no lock file yet is read without a lock.
// wait is as for Lock.
func (s *Session) LockShared(ctx context.Context, wait time.Duration) (*Lock, error) {
	if err := s.checkSafe(); err != nil {
		return nil, err
	}
	return s.lock(ctx, wait, shared)
}

func (s *Session) lock(ctx context.Context, wait time.Duration, mode int) (*Lock, error) {
	path := filepath.Join(s.dir, lockFile)
	var f *os.File
	var err error
	if mode == exclusive {
		f, err = fsx.OpenRegularFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	} else {
		f, err = fsx.OpenRegular(path)
		if errors.Is(err, os.ErrNotExist) {
			return &Lock{}, nil
		}
	}
	if err != nil && mode == exclusive {
		return nil, fmt.Errorf("open session lock: %w", s.failures.failed(path, err))
	}
	if err != nil {
		return nil, fmt.Errorf("open session lock: %w", fileError("read", path, err))
	}
	start := time.Now()
	delay := 10 * time.Millisecond
	for {
		ok, err := tryLock(f, mode == exclusive)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock session: %w", err)
		}
		if ok {
			break
		}
		waited := time.Since(start)
		if waited >= wait {
			f.Close()
			return nil, &LockedError{SessionID: filepath.Base(s.dir), PID: lockHolder(ctx, path), Waited: wait}
		}
		t := time.NewTimer(min(delay, wait-waited))
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("wait for session %s: %w", filepath.Base(s.dir), context.Cause(ctx))
		case <-t.C:
		}
		delay = min(2*delay, 250*time.Millisecond)
	}
	if mode == exclusive {
		// The pid names the holder in another run's refusal, and tells a resume that
		// the writer is gone (DeadWriter): a lock that cannot record it fails.
		pid := []byte(strconv.Itoa(os.Getpid()) + "\n")
		err := f.Truncate(0)
		if err == nil {
			_, err = f.WriteAt(pid, 0)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock session: %w", s.failures.failed(path, err))
		}
	}
	return &Lock{f: f}, nil
}

// DeadWriter returns the pid recorded by the session's last writer when that process no
// longer exists on this machine: a run killed without closing the session (SIGKILL, a
// crash), whose running agents a resume takes as paused. It is 0 when the writer lives,
// none was recorded, or the platform cannot tell. It neither takes nor tests the lock (a
// reader must never make a writer wait), so a writer in another pid namespace sharing
// the directory looks dead.
func (s *Session) DeadWriter() int {
	pid := holderPID(filepath.Join(s.dir, lockFile))
	if pid == 0 || pid == os.Getpid() || !processGone(pid) {
		return 0
	}
	return pid
}

// lockHolder returns the pid the holder of the lock at path wrote. A holder writes its
// pid right after it took the lock, so a file found empty is read again a few times
// (10 ms apart, about 100 ms in all) before the holder is said to be unknown (0).
func lockHolder(ctx context.Context, path string) int {
	for range 10 {
		if pid := holderPID(path); pid > 0 {
			return pid
		}
		t := time.NewTimer(10 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return 0
		case <-t.C:
		}
	}
	return holderPID(path)
}

// holderPID reads the pid the lock's holder wrote (0 when there is none yet).
func holderPID(path string) int {
	data, err := fsx.ReadRegular(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}
