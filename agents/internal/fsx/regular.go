package fsx

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular: a path that should name a regular file names something else (a
// directory, a symbolic link, a FIFO, a device, a socket). A *NotRegularError says which.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError is the error of a path that names something other than a regular
// file. Its message names the path and what it is.
type NotRegularError struct {
	Path string
	Mode fs.FileMode // the type bits of what the path names
}

func (e *NotRegularError) Error() string {
	return e.Path + " is " + Kind(e.Mode) + ", not a regular file"
}

// Is makes errors.Is(err, ErrNotRegular) hold.
func (e *NotRegularError) Is(target error) bool { return target == ErrNotRegular }

// Kind names the type of a file mode for messages: "a directory", "a FIFO", ...
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO (named pipe)"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return "a special file"
}

// OpenRegular opens the regular file name for reading in a way that cannot block or
// leave the path: a symbolic link, a directory, a FIFO or a device is refused with a
// *NotRegularError without reading from it (its type is checked before the open and, on
// the open descriptor, after it), and the open itself does not follow a link nor wait
// for a FIFO's writer (O_NOFOLLOW|O_NONBLOCK where the system has them). Other failures
// are the *fs.PathError of the open, which names the path and the errno. It is retried
// as OpenFile is while descriptors run out.
func OpenRegular(name string) (*os.File, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &NotRegularError{Path: name, Mode: fi.Mode().Type()}
	}
	f, err := OpenFile(name, os.O_RDONLY|openNoBlock, 0)
	if err != nil {
		if isLoop(err) { // replaced by a link since the Lstat
			return nil, &NotRegularError{Path: name, Mode: fs.ModeSymlink}
		}
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() { // replaced since the Lstat
		f.Close()
		return nil, &NotRegularError{Path: name, Mode: fi.Mode().Type()}
	}
	return f, nil
}

// OpenRegularFile is OpenFile for a file that must be regular when it exists: the open
// does not follow a final symbolic link nor wait for a FIFO (O_NOFOLLOW|O_NONBLOCK where
// the system has them), and what it opened is checked to be a regular file (else a
// *NotRegularError). Writes to it block as usual.
func OpenRegularFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := OpenFile(name, flag|openNoBlock, perm)
	if err != nil {
		switch {
		case isLoop(err):
			return nil, &NotRegularError{Path: name, Mode: fs.ModeSymlink}
		case isDir(err):
			return nil, &NotRegularError{Path: name, Mode: fs.ModeDir}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &NotRegularError{Path: name, Mode: fi.Mode().Type()}
	}
	return f, nil
}

// ReadRegular reads the whole regular file name (see OpenRegular): a file that is not
// one fails with a *NotRegularError, and nothing can make the read block.
func ReadRegular(name string) ([]byte, error) {
	f, err := OpenRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := 512
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 && fi.Size() < 1<<30 {
		size = int(fi.Size()) + 1 // one more, to see the end without growing
	}
	data := make([]byte, 0, size)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

// ContextReader is r whose reads fail with ctx's cause once ctx is done: a long read
// of a large file stops at the next chunk when the run is interrupted.
type ContextReader struct {
	Ctx context.Context
	R   io.Reader
}

func (c ContextReader) Read(p []byte) (int, error) {
	if err := c.Ctx.Err(); err != nil {
		return 0, fmt.Errorf("read cancelled: %w", context.Cause(c.Ctx))
	}
	return c.R.Read(p)
}
