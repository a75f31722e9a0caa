package headless

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// withSignals returns a context cancelled with an *InterruptedError cause on SIGINT or
// SIGTERM, and a stop func that restores default signal handling.
func withSignals(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			sig, _ := s.(syscall.Signal)
			cancel(&InterruptedError{Signal: sig})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}

// WithSignals is withSignals for an entry point that serves sessions itself (the ACP
// server): ctx ends with an *InterruptedError cause on SIGINT or SIGTERM.
func WithSignals(parent context.Context) (context.Context, func()) { return withSignals(parent) }
