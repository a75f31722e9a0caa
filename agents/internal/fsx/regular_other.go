//go:build !unix

package fsx

// openNoBlock: the system has no such flags; the type checks around the open remain.
const openNoBlock = 0

func isLoop(error) bool { return false }

func isDir(error) bool { return false }
