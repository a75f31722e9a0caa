package headless

import (
	"context"
	"errors"
)

// Run runs one headless session: prompt in, parent turns, background agents, the final result.
// It returns nil on success, or an error the CLI maps to an exit code: ErrMaxTurns,
// ErrRunFailed, ErrUsage (all wrapped) or *InterruptedError.
func Run(ctx context.Context, opts Options) error {
	return errors.New("not implemented")
}
