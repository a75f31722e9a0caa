//go:build unix

package llm

import "syscall"

// openFileLimit is the process's limit on open files (RLIMIT_NOFILE, soft).
func openFileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<20 {
		return 1 << 20
	}
	return int(r.Cur)
}
