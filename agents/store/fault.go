package store

import (
	"errors"
	"io/fs"
	"sync"
)

// writeFailures records a session's first failed write of its state and tells the
// session's owner (Session.OnWriteFailure).
type writeFailures struct {
	mu    sync.Mutex
	first error
	on    func(error)
}

// OnWriteFailure has f called, once, with the first write of the session's state that
// fails from now on: session.json, a sidecar, a transcript (created, appended to, synced),
// the session directory's fsyncs. The error is a *FileError (errors.Is(err,
// ErrNotStored)) naming the file and the errno. f is called on the goroutine that
// wrote, with nothing of the session held; a failure that happened before OnWriteFailure
// was called is passed at once. A run ends on it: what the run goes on to report would
// not be stored.
func (s *Session) OnWriteFailure(f func(err error)) {
	w := s.failures
	w.mu.Lock()
	w.on = f
	first := w.first
	w.mu.Unlock()
	if first != nil && f != nil {
		f(first)
	}
}

// WriteFailure returns the session's first failed write of its state (nil when none).
func (s *Session) WriteFailure() error {
	s.failures.mu.Lock()
	defer s.failures.mu.Unlock()
	return s.failures.first
}

// failed records err, a failure to write the session file at path, and returns it as a
// *FileError. A path that lies outside the session (ErrOutside) is not a failed write of
// its state, and a missing file is left as it is (fileError).
func (w *writeFailures) failed(path string, err error) error {
	if err == nil || errors.Is(err, ErrOutside) || errors.Is(err, fs.ErrNotExist) {
		return err
	}
	err = fileError("write", path, err)
	w.mu.Lock()
	first := w.first == nil
	if first {
		w.first = err
	}
	on := w.on
	w.mu.Unlock()
	if first && on != nil {
		on(err)
	}
	return err
}
