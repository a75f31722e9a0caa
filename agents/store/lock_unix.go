//go:build unix

package store

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"

	"github.com/stoke-cli/stoke/agents/internal/fsx"
)

// tryLock takes an flock on f without blocking; false when another descriptor holds a
// conflicting one.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EWOULDBLOCK):
			return false, nil
		default:
			return false, err
		}
	}
}

// processGone reports whether no process has that pid (EPERM: one exists that is not ours).
func processGone(pid int) bool { return fsx.ProcessGone(pid) }
