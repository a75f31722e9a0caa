package tools

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrOnDisk is returned by a Files method for a file it leaves to the disk (an editor that
// reads buffers but does not write them): the tool reads or writes it itself, as without
// Files.
var ErrOnDisk = errors.New("the file is read and written on disk")

// Files is where a workspace's file tools read and write text when it is not the disk
// alone: an editor's buffers, which may hold changes not saved yet (the ACP client's
// fs/read_text_file and fs/write_text_file). Paths are absolute, under the root as it was
// given to NewWorkspace, and Resolve has checked them; the tools still look on disk
// whether a file exists and is a regular file, and refuse what is not.
type Files interface {
	// ReadTextFile returns the file's text. It is called from the goroutine running the
	// call, possibly for several calls at once, and must return when ctx is cancelled.
	ReadTextFile(ctx context.Context, path string) (string, error)
	// WriteTextFile replaces the file's text, creating it (and its directories) when
	// missing; the same rules as ReadTextFile.
	WriteTextFile(ctx context.Context, path, content string) error
}

// WithFiles makes the file tools read and write through f (read_file, write_file, edit);
// glob and grep still read the disk.
func WithFiles(f Files) Option { return func(w *Workspace) { w.files = f } }

// filesPath is abs (a Resolve result) as Files names it: under the root as given.
func (w *Workspace) filesPath(abs string) string {
	root := w.root
	if w.alias != "" {
		root = w.alias
	}
	return filepath.Join(root, filepath.FromSlash(w.display(abs)))
}

// textReader opens the regular file name (abs) under root for reading: through Files when
// the workspace has them, else from disk. The caller closes it.
func (w *Workspace) textReader(ctx context.Context, root *os.Root, name, abs string) (io.ReadCloser, error) {
	if w.files == nil {
		return root.Open(name)
	}
	text, err := w.files.ReadTextFile(ctx, w.filesPath(abs))
	if errors.Is(err, ErrOnDisk) {
		return root.Open(name)
	}
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader([]byte(text))), nil
}

// readText reads the regular file name (abs) under root, as textReader.
func (w *Workspace) readText(ctx context.Context, root *os.Root, name, abs string) ([]byte, error) {
	if w.files == nil {
		return root.ReadFile(name)
	}
	text, err := w.files.ReadTextFile(ctx, w.filesPath(abs))
	if errors.Is(err, ErrOnDisk) {
		return root.ReadFile(name)
	}
	return []byte(text), err
}

// writeText writes data to name (abs) under root, through Files when the workspace has
// them (writeFile otherwise). It reports whether the file is new.
func (w *Workspace) writeText(ctx context.Context, root *os.Root, name, abs string, data []byte) (created bool, err error) {
	if w.files == nil {
		return writeFile(root, name, data)
	}
	fi, err := root.Stat(name)
	switch {
	case err == nil && fi.IsDir():
		return false, errors.New("is a directory")
	case err == nil && !fi.Mode().IsRegular():
		return false, errors.New("is not a regular file")
	case errors.Is(err, fs.ErrNotExist):
		created = true
	case err != nil:
		return false, err
	}
	err = w.files.WriteTextFile(ctx, w.filesPath(abs), string(data))
	if errors.Is(err, ErrOnDisk) {
		return writeFile(root, name, data)
	}
	return created, err
}
