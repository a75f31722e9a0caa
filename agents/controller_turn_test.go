package agents

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/runtime"
)

// A turn that outlives the definition's MaxTime fails with ErrMaxTime; a turn cancelled
// from outside stays cancelled; a turn within its time is untouched.
func TestDefinitionRunLimited(t *testing.T) {
	t.Parallel()
	waitForEnd := func(ctx context.Context) (runtime.TurnResult, error) {
		<-ctx.Done()
		return runtime.TurnResult{Reason: runtime.ReasonCancelled, Err: context.Cause(ctx)}, nil
	}
	d := catalog.Definition{MaxTime: time.Millisecond}
	res, err := runLimited(t.Context(), d, waitForEnd)
	if err != nil || res.Reason != runtime.ReasonError || !errors.Is(res.Err, ErrMaxTime) {
		t.Errorf("timed out turn = %+v, %v; want an ErrMaxTime error", res, err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, _ = runLimited(ctx, catalog.Definition{MaxTime: time.Hour}, waitForEnd)
	if res.Reason != runtime.ReasonCancelled || errors.Is(res.Err, ErrMaxTime) {
		t.Errorf("cancelled turn = %+v; want it cancelled", res)
	}

	var hasDeadline bool
	res, _ = runLimited(t.Context(), catalog.Definition{}, func(ctx context.Context) (runtime.TurnResult, error) {
		_, hasDeadline = ctx.Deadline()
		return runtime.TurnResult{Reason: runtime.ReasonCompleted}, nil
	})
	if hasDeadline || res.Reason != runtime.ReasonCompleted {
		t.Errorf("no MaxTime: deadline %v, result %+v", hasDeadline, res)
	}
}
