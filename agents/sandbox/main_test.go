package sandbox

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the helper when the test binary is re-executed as one (Run starts
// /proc/self/exe), and the tests otherwise.
func TestMain(m *testing.M) {
	if IsHelper(os.Args) {
		os.Exit(HelperMain())
	}
	goleak.VerifyTestMain(m)
}
