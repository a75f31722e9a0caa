//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

// Supervises is false where there is no helper: the shell tool runs commands itself,
// unconfined (Status says why).
func (s *Sandbox) Supervises() bool { return false }

func probe() (abi int, seccomp bool, err error) { return 0, false, nil }

// Run is not available where there is no helper.
func (s *Sandbox) Run(context.Context, Request) (Outcome, error) {
	return Outcome{}, fmt.Errorf("%w: none on %s", ErrHelper, runtime.GOOS)
}

// HelperMain exists for the command line's dispatch; nothing starts it here.
func HelperMain() int { return 2 }

// IsHelper reports whether args (os.Args) start the sandbox helper: never here.
func IsHelper([]string) bool { return false }

// HelperArg is the helper's hidden argument (Linux only).
const HelperArg = "__stoke-sandbox-helper-v1"

// Wrap is not available where there is no helper: Supervises is false.
func (s *Sandbox) Wrap(string, []string) (*Wrapped, error) {
	return nil, fmt.Errorf("%w: none on %s", ErrHelper, runtime.GOOS)
}
