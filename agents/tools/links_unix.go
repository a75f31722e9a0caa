//go:build unix

package tools

import (
	"os"
	"syscall"
)

// hardLinks returns how many hard links the regular file abs has (0 when it is not one,
// or does not exist).
func hardLinks(abs string) uint64 {
	fi, err := os.Lstat(abs)
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 0
}
