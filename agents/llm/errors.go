package llm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrNoAPIKey is wrapped by a provider constructor when no API key is configured.
// The CLI maps it to exit code 2.
var ErrNoAPIKey = errors.New("no API key")

// ErrBadConfig is wrapped by provider constructors for configuration the user must fix
// (unknown provider, missing scenario file, malformed scenario). Exit code 2.
var ErrBadConfig = errors.New("bad provider configuration")

// ErrStreamCut is returned when a provider's stream ended before its final event: the
// connection was reset or closed mid-answer, or the body ended without the terminal event.
var ErrStreamCut = errors.New("model stream ended early")

// ProviderError is an error the provider endpoint answered with.
type ProviderError struct {
	Provider   string
	StatusCode int
	Message    string
	// URL is the request's URL (without credentials or query), set where it helps the
	// user (a 404 says which URL was not found). Empty otherwise.
	URL string
	// Hint says what the user may do about it (for a 404, the /v1 an OpenAI-compatible
	// base URL usually ends in; for a 401, which setting the key came from). It never
	// holds a secret. Empty when there is nothing to add.
	Hint string
	// InStream tells that the error arrived inside an answer that had already begun
	// streaming (an error event in an HTTP 200 stream), where the provider SDK's own
	// retries do not reach.
	InStream bool
	Err      error
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
		if e.URL != "" {
			b.WriteString(" from " + e.URL)
		}
		b.WriteString(": ")
	}
	msg := e.Message
	if e.Hint != "" {
		msg = strings.TrimRight(msg, ". ")
	}
	b.WriteString(msg)
	if e.Hint != "" {
		b.WriteString(" (" + e.Hint + ")")
	}
	return b.String()
}

func (e *ProviderError) Unwrap() error { return e.Err }

// Retryable reports whether a later identical request may succeed (429 and 5xx).
func (e *ProviderError) Retryable() bool {
	return e.StatusCode == 429 || e.StatusCode >= 500
}

// ConnectError reports a request that got no answer at all: the endpoint could not be
// reached (connection refused, unknown host), or it dropped the connection before
// answering.
type ConnectError struct {
	Provider string
	// URL is the request's URL, without credentials or query.
	URL string
	// Dropped tells that a connection was made but closed before any answer; false
	// means none could be made.
	Dropped bool
	Err     error
}

func (e *ConnectError) Error() string {
	if e.Dropped {
		return fmt.Sprintf("%s: no answer from %s: %v", e.Provider, e.URL, e.Err)
	}
	return fmt.Sprintf("%s: cannot connect to %s: %v", e.Provider, e.URL, e.Err)
}

func (e *ConnectError) Unwrap() error { return e.Err }

// Refused reports whether nothing listened at the endpoint's address.
func (e *ConnectError) Refused() bool { return errors.Is(e.Err, syscall.ECONNREFUSED) }

// TimeoutError reports a request that did not complete within the provider's request
// timeout (the whole answer, streamed body included). It wraps context.DeadlineExceeded.
type TimeoutError struct {
	Provider string
	// Timeout is the limit that expired; Setting names where the user sets it.
	Timeout time.Duration
	Setting string
	Err     error
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("%s: request timed out: no complete answer within the %v request timeout", e.Provider, e.Timeout)
	if e.Setting != "" {
		msg += " (" + e.Setting + ")"
	}
	return msg
}

func (e *TimeoutError) Unwrap() error { return e.Err }

// Transport describes a provider's HTTP exchange for TransportError.
type Transport struct {
	Provider string
	// Timeout is the per-request timeout, TimeoutSetting where the user sets it.
	Timeout        time.Duration
	TimeoutSetting string
}

// Error turns err, a failure of the HTTP exchange itself (no HTTP status, no error
// answer), into the error a provider returns: a *TimeoutError when the request timeout
// expired; a *ConnectError when the request got no answer (err holds the HTTP client's
// *url.Error); else a cut stream: the answer had begun and its body broke off, an
// error wrapping ErrStreamCut and err. The caller has already ruled out its own
// context's cancellation.
func (t Transport) Error(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &TimeoutError{Provider: t.Provider, Timeout: t.Timeout, Setting: t.TimeoutSetting, Err: err}
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		var op *net.OpError
		dial := errors.As(err, &op) && op.Op == "dial"
		return &ConnectError{Provider: t.Provider, URL: RedactURL(ue.URL), Dropped: !dial, Err: ue.Err}
	}
	return fmt.Errorf("%s: %w: %w", t.Provider, ErrStreamCut, err)
}

// KeyRejected is the Hint of a 401 answer: keyName says where the key came from.
func KeyRejected(keyName string) string {
	if keyName == "" {
		return "the API key was rejected"
	}
	return "the API key from " + keyName + " was rejected"
}

// RedactURL returns raw without user credentials, query or fragment, for messages.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// ErrAnswerTooLarge is wrapped by the error of a call whose answer went past the cap on
// one answer (an *AnswerTooLargeError). Such a call is not retried: the same request
// would likely bring the same answer.
var ErrAnswerTooLarge = errors.New("model answer too large")

// AnswerTooLargeError ends a call whose answer (its text and tool-call arguments) went
// past the cap on one answer: the provider stopped reading it there. What was streamed
// before the cap is void like the rest of the call.
type AnswerTooLargeError struct {
	Provider string
	// Limit is the cap, in bytes; Setting names where the user sets it.
	Limit   int64
	Setting string
}

func (e *AnswerTooLargeError) Error() string {
	msg := fmt.Sprintf("%s: the model's answer is larger than the cap of %s on one answer; the call was stopped", e.Provider, formatBytes(e.Limit))
	if e.Setting != "" {
		msg += " (" + e.Setting + ")"
	}
	return msg
}

// Is makes errors.Is(err, ErrAnswerTooLarge) hold.
func (e *AnswerTooLargeError) Is(target error) bool { return target == ErrAnswerTooLarge }

// formatBytes writes n in MiB or KiB when it is a whole number of them, else in bytes.
func formatBytes(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
