package cmd

import (
	"testing"

	"go.uber.org/goleak"
)

// Some tests run whole sessions through Execute's wiring: none may leave a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
