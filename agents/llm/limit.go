package llm

import (
	"context"
	"fmt"
	"iter"
)

// Limited is a Model that runs at most a given number of calls at once: a call over the cap
// waits for a free place, under its context, before the wrapped model even builds its
// request, so a thousand agents waiting to call a provider hold little more than their
// goroutines. Safe for concurrent use if the wrapped model is.
type Limited struct {
	Model
	slots chan struct{}
}

// Limit returns m, running at most n calls at once.
func Limit(m Model, n int) *Limited {
	return &Limited{Model: m, slots: make(chan struct{}, n)}
}

// Generate implements Model: it waits for a place, then runs the call and frees the place
// when the call's sequence ends.
func (l *Limited) Generate(ctx context.Context, req *Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		select {
		case l.slots <- struct{}{}:
		case <-ctx.Done():
			yield(Event{}, fmt.Errorf("waiting for a model call slot: %w", context.Cause(ctx)))
			return
		}
		defer func() { <-l.slots }()
		for ev, err := range l.Model.Generate(ctx, req) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// Unwrap returns the wrapped model (Wrapper: what it takes as input is the wrapped model's).
func (l *Limited) Unwrap() Model { return l.Model }
