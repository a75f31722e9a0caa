//go:build !unix

package tools

import "os/exec"

// ownProcessGroup is a no-op where there are no Unix process groups: cancelling cmd kills
// the shell only.
func ownProcessGroup(*exec.Cmd) {}

// killProcessGroup kills the shell.
func killProcessGroup(cmd *exec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}
