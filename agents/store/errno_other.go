//go:build !unix

package store

import "syscall"

// errnoName is "" where the system's errno names are not known.
func errnoName(syscall.Errno) string { return "" }
