package sandbox

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for leaked goroutines. (Re-executed as the helper by Run, which starts
// /proc/self/exe, the test binary runs it from the package's init.)
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
