package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
)

// streamError turns the error that ended the SDK stream into the error Generate
// yields. finished tells whether a finish_reason had arrived before it.
func (m *Model) streamError(ctx context.Context, err error, finished bool) error {
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
		return m.answerError(apiErr)
	}
	var sseErr *ssestream.StreamError
	if errors.As(err, &sseErr) {
		// The endpoint sent {"error": ...} inside an HTTP 200 stream.
		msg := gjson.GetBytes(sseErr.Event.Data, "error.message").String()
		if msg == "" {
			msg = sseErr.Message
		}
		return &llm.ProviderError{Provider: providerName, Message: m.redact(msg), InStream: true, Err: err}
	}
	if err == nil {
		if finished {
			return nil
		}
		return fmt.Errorf("openai: no finish_reason before the stream ended: %w", llm.ErrStreamCut)
	}
	// No answer, a timeout, or a read failure after the answer began: the stream is
	// incomplete even if a finish_reason arrived (the usage chunk is missing).
	return m.transport.Error(err)
}

// answerError maps an HTTP error answer. A 404 names the URL, and when the base URL
// does not end in /v1 (where OpenAI-compatible servers serve their API), suggests it;
// a 401 names where the key came from.
func (m *Model) answerError(apiErr *sdk.Error) *llm.ProviderError {
	msg := apiErr.Message
	if msg == "" {
		msg = http.StatusText(apiErr.StatusCode)
	}
	pe := &llm.ProviderError{Provider: providerName, StatusCode: apiErr.StatusCode, Message: m.redact(msg), Err: apiErr}
	switch apiErr.StatusCode {
	case http.StatusNotFound:
		if apiErr.Request != nil {
			pe.URL = llm.RedactURL(apiErr.Request.URL.String())
		}
		if base := strings.TrimSuffix(llm.RedactURL(m.baseURL), "/"); !strings.HasSuffix(base, "/v1") {
			pe.Hint = fmt.Sprintf("OpenAI-compatible base URLs usually end in /v1: try %s/v1", base)
		}
	case http.StatusUnauthorized:
		pe.Hint = llm.KeyRejected(m.keyName)
	}
	return pe
}

// redact keeps the API key out of a message the endpoint wrote.
func (m *Model) redact(msg string) string {
	if m.key == "" {
		return msg
	}
	return strings.ReplaceAll(msg, m.key, "<redacted>")
}
