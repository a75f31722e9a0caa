//go:build unix

package store

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// errnoName is the symbolic name of errno ("ENOSPC"), "" for none.
func errnoName(errno syscall.Errno) string {
	if errno == 0 {
		return ""
	}
	return unix.ErrnoName(errno)
}
