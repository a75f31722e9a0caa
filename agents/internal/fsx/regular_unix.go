//go:build unix

package fsx

import (
	"errors"
	"syscall"
)

// openNoBlock makes an open neither follow a final symbolic link nor wait for a FIFO.
const openNoBlock = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// isLoop reports the error of an O_NOFOLLOW open of a symbolic link.
func isLoop(err error) bool { return errors.Is(err, syscall.ELOOP) }

// isDir reports the error of opening a directory for writing.
func isDir(err error) bool { return errors.Is(err, syscall.EISDIR) }
