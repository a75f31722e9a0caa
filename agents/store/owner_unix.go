//go:build unix

package store

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// unsafeOwner says why fi is not safe to trust ("" when it is): owned by another user,
// writable by everyone, or by a group that is not the user's.
func unsafeOwner(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || fi.Mode()&fs.ModeSymlink != 0 && int(st.Uid) == os.Getuid() {
		return ""
	}
	switch perm := fi.Mode().Perm(); {
	case int(st.Uid) != os.Getuid():
		return fmt.Sprintf("belongs to uid %d, not to you (uid %d)", st.Uid, os.Getuid())
	case perm&0o002 != 0:
		return fmt.Sprintf("is writable by everyone (mode %#o)", perm)
	case perm&0o020 != 0 && int(st.Gid) != os.Getgid():
		return fmt.Sprintf("is writable by group %d (mode %#o)", st.Gid, perm)
	}
	return ""
}
