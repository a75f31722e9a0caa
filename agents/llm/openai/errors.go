package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
)

// streamError turns the error that ended the SDK stream into the error Generate
// yields. finished tells whether a finish_reason had arrived before it.
func streamError(ctx context.Context, err error, finished bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		// Keep both: callers match context.Canceled, and a cancel cause
		// (task_stop, --timeout) says why.
		if cause := context.Cause(ctx); cause != nil && cause != ctxErr {
			return fmt.Errorf("openai: %w: %w", ctxErr, cause)
		}
		return fmt.Errorf("openai: %w", ctxErr)
	}
	var apiErr *sdk.Error
	if errors.As(err, &apiErr) {
		msg := apiErr.Message
		if msg == "" {
			msg = http.StatusText(apiErr.StatusCode)
		}
		return &llm.ProviderError{Provider: providerName, StatusCode: apiErr.StatusCode, Message: msg, Err: err}
	}
	var sseErr *ssestream.StreamError
	if errors.As(err, &sseErr) {
		// The endpoint sent {"error": ...} inside an HTTP 200 stream.
		msg := gjson.GetBytes(sseErr.Event.Data, "error.message").String()
		if msg == "" {
			msg = sseErr.Message
		}
		return &llm.ProviderError{Provider: providerName, Message: msg, Err: err}
	}
	if err == nil {
		if finished {
			return nil
		}
		return fmt.Errorf("openai: no finish_reason before the stream ended: %w", llm.ErrStreamCut)
	}
	// A read or decode failure after the response started: the stream is incomplete
	// even if a finish_reason arrived (the usage chunk is missing).
	return fmt.Errorf("openai: %w: %w", llm.ErrStreamCut, err)
}
