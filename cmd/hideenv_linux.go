//go:build linux

package cmd

import "golang.org/x/sys/unix"

// hideEnviron makes this process non-dumpable, as ssh-agent does: another process of the
// same user — the shell tool's commands, hooks, MCP servers — can then no longer read
// /proc/<stoke's pid>/environ, where the API key stoke was started with stays whatever
// stoke keeps out of its children's environments. Children are dumpable again from their
// exec. Root with CAP_SYS_PTRACE still reads it; the tool results redact the key then.
func hideEnviron() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }
