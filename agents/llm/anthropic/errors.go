package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/stoke-cli/stoke/agents/llm"
)

// statusOfType gives the HTTP status the API answers with for an error type, or 0.
// An error event inside a streamed 200 answer carries only its type; mapping it
// keeps ProviderError.Retryable meaningful for it (an overloaded_error mid-stream is
// as retryable as a 529 answer).
func statusOfType(t sdk.ErrorType) int {
	switch t {
	case sdk.ErrorTypeInvalidRequestError:
		return http.StatusBadRequest
	case sdk.ErrorTypeAuthenticationError:
		return http.StatusUnauthorized
	case sdk.ErrorTypeBillingError:
		return http.StatusPaymentRequired
	case sdk.ErrorTypePermissionError:
		return http.StatusForbidden
	case sdk.ErrorTypeNotFoundError:
		return http.StatusNotFound
	case sdk.ErrorTypeRateLimitError:
		return http.StatusTooManyRequests
	case sdk.ErrorTypeTimeoutError:
		return http.StatusGatewayTimeout
	case sdk.ErrorTypeAPIError:
		return http.StatusInternalServerError
	case sdk.ErrorTypeOverloadedError:
		return 529
	}
	return 0
}

// streamError turns the error that ended the SDK stream into the error Generate
// yields. stopped tells whether message_stop had arrived before it.
func streamError(ctx context.Context, err error, stopped bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		// Keep both: callers match context.Canceled, and a cancel cause
		// (task_stop, --timeout) says why.
		if cause := context.Cause(ctx); cause != nil && cause != ctxErr {
			return fmt.Errorf("anthropic: %w: %w", ctxErr, cause)
		}
		return fmt.Errorf("anthropic: %w", ctxErr)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		status := apiErr.StatusCode
		if status < 400 { // an error event in a 200 stream
			status = statusOfType(apiErr.Type())
		}
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(status)
		}
		return &llm.ProviderError{Provider: providerName, StatusCode: status, Message: msg, Err: err}
	}
	if err == nil {
		if stopped {
			return nil
		}
		return fmt.Errorf("anthropic: no message_stop before the stream ended: %w", llm.ErrStreamCut)
	}
	// A read or decode failure after the response started.
	return fmt.Errorf("anthropic: %w: %w", llm.ErrStreamCut, err)
}
