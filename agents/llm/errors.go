package llm

import (
	"errors"
	"fmt"
)

// ErrNoAPIKey is wrapped by a provider constructor when no API key is configured.
// The CLI maps it to exit code 2.
var ErrNoAPIKey = errors.New("no API key")

// ErrBadConfig is wrapped by provider constructors for configuration the user must fix
// (unknown provider, missing scenario file, malformed scenario). Exit code 2.
var ErrBadConfig = errors.New("bad provider configuration")

// ErrStreamCut is returned when a provider's stream ended before its final event.
var ErrStreamCut = errors.New("model stream ended early")

// ProviderError is an error the provider endpoint answered with.
type ProviderError struct {
	Provider   string
	StatusCode int
	Message    string
	Err        error
}

func (e *ProviderError) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("%s: HTTP %d: %s", e.Provider, e.StatusCode, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Provider, e.Message)
}

func (e *ProviderError) Unwrap() error { return e.Err }

// Retryable reports whether a later identical request may succeed (429 and 5xx).
func (e *ProviderError) Retryable() bool {
	return e.StatusCode == 429 || e.StatusCode >= 500
}
