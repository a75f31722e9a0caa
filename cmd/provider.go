package cmd

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/anthropic"
	"github.com/stoke-cli/stoke/agents/llm/openai"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

// Providers.
const (
	providerOpenAI    = "openai"
	providerAnthropic = "anthropic"
	providerScripted  = "scripted"
)

const (
	defaultOpenAIModel    = "gpt-4o-mini"
	defaultAnthropicModel = "claude-sonnet-4-5"
	// openAIMaxRetries is how often a failed request is retried before the stream starts.
	openAIMaxRetries = 2
	// openAIRequestTimeout bounds one HTTP attempt, streamed body included.
	openAIRequestTimeout = 10 * time.Minute
)

// newModel builds the model cfg names. Relative scenario paths are resolved against cwd.
// Configuration errors wrap llm.ErrNoAPIKey or llm.ErrBadConfig, or are usage errors.
func newModel(cfg *Config, cwd string) (llm.Model, error) {
	switch cfg.Provider {
	case providerOpenAI:
		name := cfg.Model
		if name == "" {
			name = defaultOpenAIModel
		}
		m, err := openai.New(openai.Config{
			APIKey:         cfg.APIKey,
			BaseURL:        cfg.BaseURL,
			Model:          name,
			MaxRetries:     openAIMaxRetries,
			RequestTimeout: openAIRequestTimeout,
		})
		if err != nil {
			return nil, err
		}
		return m, nil
	case providerScripted:
		if cfg.Scenario == "" {
			return nil, usageErrorf("provider scripted needs a scenario: pass --scenario FILE")
		}
		path := cfg.Scenario
		if !filepath.IsAbs(path) {
			path = filepath.Join(cwd, path)
		}
		m, err := scripted.Open(path)
		if err != nil {
			return nil, err
		}
		return m, nil
	case providerAnthropic:
		name := cfg.Model
		if name == "" {
			name = defaultAnthropicModel
		}
		m, err := anthropic.New(anthropic.Config{
			APIKey:         cfg.APIKey,
			BaseURL:        cfg.BaseURL,
			Model:          name,
			MaxRetries:     openAIMaxRetries,
			RequestTimeout: openAIRequestTimeout,
		})
		if err != nil {
			return nil, err
		}
		return m, nil
	default:
		return nil, usageErrorf("unknown provider %q: want one of %s", cfg.Provider,
			strings.Join([]string{providerOpenAI, providerAnthropic, providerScripted}, ", "))
	}
}
