//go:build !unix

package mcp

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup leaves cmd as it is: without process groups only the server itself is
// ended.
func ownProcessGroup(*exec.Cmd) {}

// signalGroup kills the process itself (the only signal there is).
func signalGroup(cmd *exec.Cmd, _ syscall.Signal) error {
	return cmd.Process.Kill()
}
