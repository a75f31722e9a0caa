package sandbox

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filter's answer for one syscall, from the seccomp_data the kernel would pass it.
func verdict(t *testing.T, prog []bpf.Instruction, arch uint32, nr uint32, arg0 uint64) uint32 {
	t.Helper()
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], arch)
	binary.LittleEndian.PutUint64(data[16:], arg0)
	// the VM reads loads big-endian, as network packets are; seccomp_data is native
	// (little-endian here), so swap the words the filter loads
	for _, off := range []int{0, 4, 16} {
		binary.BigEndian.PutUint32(data[off:], binary.LittleEndian.Uint32(data[off:]))
	}
	v, err := vm.Run(data)
	if err != nil {
		t.Fatal(err)
	}
	return uint32(v)
}

func TestFilter(t *testing.T) {
	if auditArch == 0 {
		t.Skip("no filter for this architecture")
	}
	errno := func(e unix.Errno) uint32 { return unix.SECCOMP_RET_ERRNO | uint32(e) }
	allow := uint32(unix.SECCOMP_RET_ALLOW)
	tests := []struct {
		name                  string
		network, blockConnect bool
		arch, nr              uint32
		arg0                  uint64
		want                  uint32
	}{
		{"unix socket", false, true, auditArch, unix.SYS_SOCKET, unix.AF_UNIX, allow},
		{"inet socket", false, true, auditArch, unix.SYS_SOCKET, unix.AF_INET, errno(unix.EACCES)},
		{"inet6 socket", false, true, auditArch, unix.SYS_SOCKET, unix.AF_INET6, errno(unix.EACCES)},
		{"netlink socket", false, true, auditArch, unix.SYS_SOCKET, unix.AF_NETLINK, errno(unix.EACCES)},
		{"packet socket", false, true, auditArch, unix.SYS_SOCKET, unix.AF_PACKET, errno(unix.EACCES)},
		{"inet socket with the network", true, false, auditArch, unix.SYS_SOCKET, unix.AF_INET, allow},
		{"connect without pathname scoping", false, true, auditArch, unix.SYS_CONNECT, 3, errno(unix.EACCES)},
		{"connect with pathname scoping", false, false, auditArch, unix.SYS_CONNECT, 3, allow},
		{"connect with the network", true, false, auditArch, unix.SYS_CONNECT, 3, allow},
		{"io_uring", true, false, auditArch, unix.SYS_IO_URING_SETUP, 0, errno(unix.EPERM)},
		{"kernel module", true, false, auditArch, unix.SYS_FINIT_MODULE, 0, errno(unix.EPERM)},
		{"keyring", true, false, auditArch, unix.SYS_KEYCTL, 0, errno(unix.EPERM)},
		{"open_by_handle_at", true, false, auditArch, unix.SYS_OPEN_BY_HANDLE_AT, 0, errno(unix.EPERM)},
		{"read", false, true, auditArch, unix.SYS_READ, 0, allow},
		{"another ABI", false, true, 0x40000003, unix.SYS_READ, 0, errno(unix.EPERM)},
	}
	if x32Bit != 0 {
		tests = append(tests, struct {
			name                  string
			network, blockConnect bool
			arch, nr              uint32
			arg0                  uint64
			want                  uint32
		}{"x32", true, false, auditArch, x32Bit | unix.SYS_SOCKET, unix.AF_INET, errno(unix.ENOSYS)})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := filter(tt.network, tt.blockConnect)
			if err != nil {
				t.Fatal(err)
			}
			prog, ok := bpf.Disassemble(raw)
			if !ok {
				t.Fatal("disassemble")
			}
			if got := verdict(t, prog, tt.arch, tt.nr, tt.arg0); got != tt.want {
				t.Errorf("verdict %#x, want %#x", got, tt.want)
			}
		})
	}
}
