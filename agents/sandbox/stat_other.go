//go:build !linux

package sandbox

import "io/fs"

// fileID is empty where stoke reads no inode numbers: the guard compares sizes and
// modification times only.
type fileID struct {
	dev, ino uint64
	ctime    int64
}

func idOf(fs.FileInfo) fileID { return fileID{} }

func (a fileID) sameFile(b fileID) bool { return a == b }

const noFollow = 0
