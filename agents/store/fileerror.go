package store

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/stoke-cli/stoke/agents/internal/fsx"
)

// ErrBadFile: a file of a session cannot be used: it is not a regular file (a directory,
// a symbolic link, a FIFO, a device) or reading or writing it failed. A *FileError says
// which file and what is wrong.
var ErrBadFile = errors.New("bad session file")

// FileError is the error of a session file that cannot be used: the path, and what is
// wrong with it (the errno of the failed system call, or what the path is instead of a
// regular file). errors.Is(err, ErrBadFile) holds, and Unwrap reaches the cause (an
// *fs.PathError, a syscall.Errno, fsx.ErrNotRegular).
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
	var pe *fs.PathError
	if errors.As(e.Err, &pe) {
		return "cannot " + e.Op + " session file " + e.Path + ": " + pe.Err.Error()
	}
	return "cannot " + e.Op + " session file " + e.Path + ": " + e.Err.Error()
}

func (e *FileError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBadFile) hold.
func (e *FileError) Is(target error) bool { return target == ErrBadFile }

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
