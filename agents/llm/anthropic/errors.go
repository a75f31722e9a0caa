package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

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
func (m *Model) streamError(ctx context.Context, err error, stopped bool) error {
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
		return m.answerError(apiErr)
	}
	if err == nil {
		if stopped {
			return nil
		}
		return fmt.Errorf("anthropic: no message_stop before the stream ended: %w", llm.ErrStreamCut)
	}
	// No answer, a timeout, or a read failure after the answer began.
	return m.transport.Error(err)
}

// answerError maps an error answer, or an error event inside a 200 stream. A 404
// names the URL; a 401 names where the key came from.
func (m *Model) answerError(apiErr *sdk.Error) *llm.ProviderError {
	status := apiErr.StatusCode
	inStream := status < 400
	if inStream {
		status = statusOfType(apiErr.Type())
	}
	msg := apiErr.Message
	if msg == "" {
		msg = http.StatusText(status)
	}
	if m.key != "" {
		msg = strings.ReplaceAll(msg, m.key, "<redacted>")
	}
	pe := &llm.ProviderError{Provider: providerName, StatusCode: status, Message: msg, InStream: inStream, Err: apiErr}
	switch status {
	case http.StatusNotFound:
		if apiErr.Request != nil {
			pe.URL = llm.RedactURL(apiErr.Request.URL.String())
		}
	case http.StatusUnauthorized:
		pe.Hint = llm.KeyRejected(m.keyName)
	}
	return pe
}
