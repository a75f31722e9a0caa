package store

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/stoke-cli/stoke/agents/internal/fsx"
)

// ErrBadFile: a file of a session cannot be used: it is not a regular file (a directory,
// a symbolic link, a FIFO, a device) or reading it failed. A *FileError says which file
// and what is wrong.
var ErrBadFile = errors.New("bad session file")

// ErrNotStored: a write of session state failed (a full disk, a read-only home): what it
// held is not stored. A *FileError with Op "write" says which file and the errno; a
// Session reports the first one to its OnWriteFailure.
var ErrNotStored = errors.New("session state not stored")

// FileError is the error of a session file that cannot be used: the path, and what is
// wrong with it (the errno of the failed system call, or what the path is instead of a
// regular file). errors.Is(err, ErrBadFile) holds for a file that is not regular or
// could not be read, errors.Is(err, ErrNotStored) for a failed write of a regular one,
// and Unwrap reaches the cause (an *fs.PathError, a syscall.Errno, fsx.ErrNotRegular).
type FileError struct {
	Path string
	// Op says what was done: "read" or "write".
	Op  string
	Err error
}

func (e *FileError) Error() string {
	var nr *fsx.NotRegularError
	if errors.As(e.Err, &nr) {
		return "session file " + e.Path + " is " + fsx.Kind(nr.Mode) + ", not a regular file"
	}
	what := e.Err.Error()
	var pe *fs.PathError
	if errors.As(e.Err, &pe) {
		what = pe.Err.Error()
	}
	if name := errnoName(e.Errno()); name != "" {
		what += " (" + name + ")"
	}
	return "cannot " + e.Op + " session file " + e.Path + ": " + what
}

func (e *FileError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotStored) hold for a failed write of a regular file, and
// errors.Is(err, ErrBadFile) for the rest.
func (e *FileError) Is(target error) bool {
	var nr *fsx.NotRegularError
	stored := e.Op == "write" && !errors.As(e.Err, &nr)
	return target == ErrBadFile && !stored || target == ErrNotStored && stored
}

// Errno is the system's error number of the failure (0 when it has none, such as a
// path that is not a regular file).
func (e *FileError) Errno() syscall.Errno {
	var n syscall.Errno
	if errors.As(e.Err, &n) {
		return n
	}
	return 0
}

// fileError makes err, a failure to op the file at path, a *FileError; a missing file
// stays what it is (callers tell a missing file from a bad one with os.ErrNotExist).
func fileError(op, path string, err error) error {
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return err
	}
	var fe *FileError
	if errors.As(err, &fe) {
		return err
	}
	return &FileError{Path: path, Op: op, Err: err}
}
