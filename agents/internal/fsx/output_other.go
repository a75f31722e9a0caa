//go:build !linux

package fsx

import (
	"errors"
	"os"
)

// openUnnamed: only Linux has O_TMPFILE; outputs are named temporary files here.
func openUnnamed(string, os.FileMode) *os.File { return nil }

func linkUnnamed(*os.File, string) error { return errors.New("no unnamed files on this system") }
