package anthropic

import (
	"testing"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/anthropic/anthropictest"
	"github.com/stoke-cli/stoke/agents/llm/llmtest"
)

// provider is the anthropic provider over its mock server, for the conformance suite.
func provider() llmtest.Provider {
	return llmtest.Provider{
		Name: providerName,
		Serve: func(t *testing.T, backend llm.Model, key string, f llmtest.Faults) llmtest.Mock {
			s := anthropictest.New(backend, anthropictest.WithAPIKey(key), anthropictest.WithFaults(f), anthropictest.WithModelUsage())
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
		Misroute: func(base string) string { return base + "/elsewhere" },
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	llmtest.RunSuite(t, provider())
}
