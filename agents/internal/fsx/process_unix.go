//go:build unix

package fsx

import (
	"errors"
	"syscall"
)

// ProcessGone reports whether no process has that pid on this machine (EPERM: one
// exists that is not ours).
func ProcessGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
