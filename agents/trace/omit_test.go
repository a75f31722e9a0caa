//go:build stoke_omit_otlp

package trace

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// TestOTLPOmitted checks a binary built without the OTLP exporter: an endpoint is a
// clear error, which releases the trace file opened before it.
func TestOTLPOmitted(t *testing.T) {
	running := goleak.IgnoreCurrent()
	tr, err := Setup(context.Background(), Config{OTLPEndpoint: "http://localhost:4318/v1/traces", File: filepath.Join(t.TempDir(), "t.jsonl")})
	if !errors.Is(err, errOTLPOmitted) || tr != nil {
		t.Fatalf("Setup = %v, %v; want errOTLPOmitted", tr, err)
	}
	goleak.VerifyNone(t, running)
	tr = mustSetup(t, Config{File: filepath.Join(t.TempDir(), "t.jsonl")})
	shutdown(t, tr)
}
