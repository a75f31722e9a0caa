package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter of a sandboxed command: the network's families (every socket but
// AF_UNIX is refused, so UDP, DNS, raw and packet sockets are closed besides what
// Landlock's TCP rules close; and connect(2), which would reach the pathname sockets of
// daemons outside the sandbox, on kernels whose Landlock cannot scope them), io_uring
// (whose operations seccomp cannot see), and what would reach past the sandbox for a
// process running as root: kernel modules, kexec, keyrings, bpf, perf events,
// open_by_handle_at. Syscalls of another ABI (i386, x32) are refused whole: a filter
// that reads x86-64 numbers cannot judge them.
//
// It is written with x/net/bpf rather than a policy library: it is a dozen checks, and
// github.com/elastic/go-seccomp-bpf, the candidate, builds its syscall tables at every
// process start (0.4 ms for each stoke and each helper) and sends a foreign-ABI syscall
// to the policy's default action, which for an allow-by-default filter is allow.

// seccomp_data offsets (include/uapi/linux/seccomp.h): nr, arch, args[0] (low half on a
// little-endian machine).
const (
	offNr   = 0
	offArch = 4
	offArg0 = 16
)

func retErrno(errno unix.Errno) bpf.RetConstant {
	return bpf.RetConstant{Val: unix.SECCOMP_RET_ERRNO | uint32(errno)}
}

// blockedSyscalls are refused with EPERM in every mode.
func blockedSyscalls() []uintptr {
	return append([]uintptr{
		unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
		unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
		unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD,
		unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
		unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_OPEN_BY_HANDLE_AT,
		unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_REBOOT,
	}, archBlocked()...)
}

// filter assembles the program. network lets every socket family and connect through;
// blockConnect refuses connect(2) (the network is off and Landlock cannot scope
// pathname sockets).
func filter(network, blockConnect bool) ([]bpf.RawInstruction, error) {
	if auditArch == 0 {
		return nil, fmt.Errorf("seccomp: no filter for this architecture")
	}
	p := []bpf.Instruction{
		bpf.LoadAbsolute{Off: offArch, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		retErrno(unix.EPERM),
		bpf.LoadAbsolute{Off: offNr, Size: 4},
	}
	if x32Bit != 0 {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1}, retErrno(unix.ENOSYS))
	}
	for _, nr := range blockedSyscalls() {
		p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 1}, retErrno(unix.EPERM))
	}
	if !network {
		p = append(p,
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(unix.SYS_SOCKET), SkipFalse: 4},
			bpf.LoadAbsolute{Off: offArg0, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.AF_UNIX, SkipFalse: 1},
			bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
			retErrno(unix.EACCES),
		)
		if blockConnect {
			p = append(p, bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(unix.SYS_CONNECT), SkipFalse: 1}, retErrno(unix.EACCES))
		}
	}
	p = append(p, bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW})
	return bpf.Assemble(p)
}

// loadFilter installs prog on the calling thread only (no TSYNC): the helper confines
// the thread it forks the command from. no_new_privs must be set.
func loadFilter(prog []bpf.RawInstruction) error {
	fs := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		fs[i] = unix.SockFilter{Code: in.Op, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(fs)), Filter: &fs[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp: %w", e)
	}
	return nil
}

// seccompAvailable reports whether filters returning an errno can be installed.
func seccompAvailable() bool {
	if auditArch == 0 {
		return false
	}
	action := uint32(unix.SECCOMP_RET_ERRNO)
	_, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	return e == 0
}
