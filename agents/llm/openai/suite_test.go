package openai

import (
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
	"github.com/stoke-cli/stoke/agents/llm/openai/openaitest"
)

// provider is the openai provider over its mock server, for the conformance suite.
func provider() llmtest.Provider {
	return llmtest.Provider{
		Name: providerName,
		Serve: func(t *testing.T, backend llm.Model, key string, f llmtest.Faults) llmtest.Mock {
			s := openaitest.New(backend, openaitest.WithAPIKey(key), openaitest.WithFaults(f))
			t.Cleanup(s.Close)
			return s
		},
		New: func(c llmtest.Client) (llm.Model, error) {
			return New(Config{
				APIKey: c.APIKey, BaseURL: c.BaseURL, Model: c.Model, MaxRetries: c.MaxRetries,
				RequestTimeout: c.RequestTimeout, HTTPClient: c.HTTPClient, KeyName: c.KeyName, TimeoutName: c.TimeoutName,
				MaxAnswerBytes: c.MaxAnswerBytes, MaxAnswerName: c.MaxAnswerName,
			})
		},
		// The API is served under /v1; without it, the /v1 hint.
		Misroute:     func(base string) string { return strings.TrimSuffix(base, "/v1") },
		NotFoundHint: "usually end in /v1",
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	llmtest.RunSuite(t, provider())
}
