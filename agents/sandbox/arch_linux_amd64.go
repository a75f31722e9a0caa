package sandbox

import "golang.org/x/sys/unix"

// auditArch is the seccomp architecture of this binary's syscalls; x32Bit marks the
// x32 ABI's syscall numbers, refused whole.
const (
	auditArch = unix.AUDIT_ARCH_X86_64
	x32Bit    = 0x40000000
)

// archBlocked are this architecture's own syscalls the filter refuses: port I/O.
func archBlocked() []uintptr { return []uintptr{unix.SYS_IOPL, unix.SYS_IOPERM} }
