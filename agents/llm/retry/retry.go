// Package retry makes a model call again when its stream breaks before it completes, or
// when the request hits the provider's request timeout.
//
// The provider SDKs retry a request that fails before its answer starts (connection
// errors, 408/409/429/5xx statuses). Once an answer is streaming they do not: a
// connection reset, an EOF mid-body, a body that ends without its terminal event, or an
// overloaded error event inside the stream ends the call; nor do they retry a request
// whose request timeout expired. Model wraps an llm.Model so that such a call is sent
// again, up to MaxRetries times, after an exponential backoff that the call's context
// (the run's --timeout) cuts short.
//
// The consumer may already have received events of the broken attempt (text deltas,
// tool calls). Before the next attempt, Generate yields an llm.EventRetry: everything
// received since the call began is void, and the next events start the answer afresh.
// A consumer that ignores EventRetry would join two attempts into one reply.
package retry

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Defaults of a Policy's zero fields.
const (
	DefaultMaxRetries = 2
	DefaultBaseDelay  = 500 * time.Millisecond
	DefaultMaxDelay   = 8 * time.Second
)

// Policy says how often and how patiently a broken call is retried.
type Policy struct {
	// MaxRetries is how many times a call is made again; 0 means DefaultMaxRetries,
	// negative means never.
	MaxRetries int
	// BaseDelay is the wait before the first retry; it doubles for each further one,
	// up to MaxDelay. Zero means DefaultBaseDelay and DefaultMaxDelay. The wait is
	// jittered down by up to a quarter, so that agents cut off together do not all
	// come back at once.
	BaseDelay, MaxDelay time.Duration
	// Logger gets one warning per retry; nil logs nothing.
	Logger *slog.Logger
}

// Model is an llm.Model whose calls are retried when their stream breaks. It is safe
// for concurrent use if the wrapped model is.
type Model struct {
	llm.Model
	policy Policy
}

var _ llm.Model = (*Model)(nil)

// Wrap returns m with p's retries.
func Wrap(m llm.Model, p Policy) *Model {
	if p.MaxRetries == 0 {
		p.MaxRetries = DefaultMaxRetries
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay, p.MaxDelay = DefaultBaseDelay, DefaultMaxDelay
	}
	if p.MaxDelay < p.BaseDelay {
		p.MaxDelay = p.BaseDelay
	}
	return &Model{Model: m, policy: p}
}

// Unwrap returns the wrapped model (llm.Wrapper: it decides which media it takes).
func (m *Model) Unwrap() llm.Model { return m.Model }

// Retryable reports whether err ended a call whose answer broke off or never came: a
// cut stream, a request that hit the provider's request timeout (before its answer or
// in the middle of it, an *llm.TimeoutError), or a retryable provider error (429, 5xx,
// overloaded) that arrived inside the stream, where the SDK's own retries do not reach.
// An answer past the cap on one answer (llm.ErrAnswerTooLarge) is not retried.
func Retryable(err error) bool {
	var te *llm.TimeoutError
	if errors.Is(err, llm.ErrStreamCut) || errors.As(err, &te) {
		return true
	}
	var pe *llm.ProviderError
	return errors.As(err, &pe) && pe.InStream && pe.Retryable()
}

// Generate runs the call, and runs it again after a broken stream (see the package
// documentation). When the retries are spent, the last attempt's error is returned,
// saying how many attempts were made. Cancelling ctx ends a backoff wait at once.
func (m *Model) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		for attempt := 0; ; attempt++ {
			err := m.attempt(ctx, req, yield)
			switch {
			case err == nil:
				return // done, or the consumer stopped
			case ctx.Err() != nil || !Retryable(err):
				yield(llm.Event{}, err)
				return
			case attempt >= m.policy.MaxRetries:
				if attempt > 0 {
					err = fmt.Errorf("%w (gave up after %d attempts)", err, attempt+1)
				}
				yield(llm.Event{}, err)
				return
			}
			delay := m.delay(attempt)
			if m.policy.Logger != nil {
				what := "model stream broke; retrying"
				var te *llm.TimeoutError
				if errors.As(err, &te) {
					what = "model request timed out (--request-timeout); retrying"
				}
				m.policy.Logger.WarnContext(ctx, what,
					"agent", req.Agent, "attempt", attempt+1, "max_retries", m.policy.MaxRetries,
					"delay", delay, "error", err)
			}
			info := &llm.Retry{Attempt: attempt + 1, MaxRetries: m.policy.MaxRetries, Delay: delay, Err: err}
			if !yield(llm.Event{Kind: llm.EventRetry, Retry: info}, nil) {
				return
			}
			if err := wait(ctx, delay); err != nil {
				yield(llm.Event{}, fmt.Errorf("wait to retry the model call: %w", err))
				return
			}
		}
	}
}

// attempt forwards one call's events to yield. It returns the call's error, or nil
// when the call completed or the consumer stopped.
func (m *Model) attempt(ctx context.Context, req *llm.Request, yield func(llm.Event, error) bool) error {
	for ev, err := range m.Model.Generate(ctx, req) {
		if err != nil {
			return err
		}
		if !yield(ev, nil) {
			return nil
		}
	}
	return nil
}

// delay is the wait before retry number attempt+1.
func (m *Model) delay(attempt int) time.Duration {
	d := m.policy.BaseDelay << min(attempt, 16)
	if d <= 0 || d > m.policy.MaxDelay {
		d = m.policy.MaxDelay
	}
	return d - rand.N(d/4+1)
}

// wait sleeps for d, or until ctx is done.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
			return fmt.Errorf("%w: %w", ctx.Err(), cause)
		}
		return ctx.Err()
	}
}
