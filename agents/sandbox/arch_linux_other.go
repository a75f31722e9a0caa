//go:build linux && !amd64 && !arm64

package sandbox

// auditArch 0: stoke has no seccomp filter for this architecture; Landlock still
// confines the file system, and the status says the network is not confined.
const (
	auditArch = 0
	x32Bit    = 0
)

func archBlocked() []uintptr { return nil }
