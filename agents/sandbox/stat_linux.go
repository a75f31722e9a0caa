package sandbox

import (
	"io/fs"
	"syscall"
)

// fileID identifies a file (device and inode) and the last change of its inode.
type fileID struct {
	dev, ino uint64
	ctime    int64
}

func idOf(fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: st.Dev, ino: st.Ino, ctime: st.Ctim.Nano()}
}

func (a fileID) sameFile(b fileID) bool { return a.dev == b.dev && a.ino == b.ino }

// noFollow opens a file without following a symbolic link in its last component.
const noFollow = syscall.O_NOFOLLOW
