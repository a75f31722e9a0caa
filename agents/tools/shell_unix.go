//go:build unix

package tools

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own, and makes cancelling it kill the
// whole group, so that the commands a shell line starts die with it.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killProcessGroup(cmd) }
}

// killProcessGroup kills every process of cmd's group.
func killProcessGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
