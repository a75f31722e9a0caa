//go:build linux

package fsx

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed creates an unnamed file in dir (O_TMPFILE), or returns nil where the file
// system cannot, or where it could not be linked in later (no /proc).
func openUnnamed(dir string, perm os.FileMode) *os.File {
	fd, err := unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(perm.Perm()))
	if err != nil {
		return nil
	}
	if _, err := os.Stat("/proc/self/fd/" + strconv.Itoa(fd)); err != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), dir+"/(unnamed)")
}

// linkUnnamed gives the unnamed file f the name path, through /proc (which needs no
// privilege, unlike AT_EMPTY_PATH).
func linkUnnamed(f *os.File, path string) error {
	err := unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(int(f.Fd())), unix.AT_FDCWD, path, unix.AT_SYMLINK_FOLLOW)
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: path, Err: err}
	}
	return nil
}
