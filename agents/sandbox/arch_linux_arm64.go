package sandbox

import "golang.org/x/sys/unix"

// auditArch is the seccomp architecture of this binary's syscalls; arm64 has no second
// ABI to refuse.
const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Bit    = 0
)

func archBlocked() []uintptr { return nil }
