//go:build unix

package hooks

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own and makes its cancellation
// (timeout or ctx) kill the whole group, so that a hook's children die with it.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone
		}
		return err
	}
}
