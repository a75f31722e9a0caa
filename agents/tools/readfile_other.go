//go:build !unix

package tools

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// dirFile is a directory whose files grep reads.
type dirFile struct{ path string }

func openDir(path string) (dirFile, error) { return dirFile{path}, nil }

func (dirFile) close() {}

// read reads the file name of the directory into buf[:0], growing it as needed, up to max
// bytes.
func (d dirFile) read(buf []byte, name string, max int) ([]byte, error) {
	f, err := os.Open(filepath.Join(d.path, name))
	if err != nil {
		return buf[:0], err
	}
	defer f.Close()
	buf = buf[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if len(buf) > max {
			return buf[:0], errTooLarge
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return buf[:0], err
		}
	}
}
