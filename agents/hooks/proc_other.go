//go:build !unix

package hooks

import "os/exec"

// ownProcessGroup leaves cmd as it is: without process groups, cancellation kills the
// shell only (exec.CommandContext's default).
func ownProcessGroup(*exec.Cmd) {}
