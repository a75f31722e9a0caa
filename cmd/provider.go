package cmd

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/anthropic"
	"github.com/stoke-cli/stoke/agents/llm/openai"
	"github.com/stoke-cli/stoke/agents/llm/retry"
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
	// sdkMaxRetries is how often the provider SDKs retry a failed request before its
	// answer starts streaming (connection errors, 408/409/429/5xx).
	sdkMaxRetries = 2
	// defaultRequestTimeout bounds one HTTP attempt, streamed body included
	// (--request-timeout).
	defaultRequestTimeout = 10 * time.Minute
)

// defaultProvider is the provider when none is configured: scripted with a scenario;
// anthropic when only Anthropic's variables are set (ANTHROPIC_API_KEY or
// ANTHROPIC_BASE_URL, and neither OPENAI_API_KEY nor OPENAI_BASE_URL); else openai.
func defaultProvider(scenario string, lookupEnv func(string) (string, bool)) string {
	if scenario != "" {
		return providerScripted
	}
	if providerVarsSet(providerAnthropic, lookupEnv) && !providerVarsSet(providerOpenAI, lookupEnv) {
		return providerAnthropic
	}
	return providerOpenAI
}

// providerVarsSet reports whether the provider's own key or base URL variable is set
// and not empty.
func providerVarsSet(provider string, lookupEnv func(string) (string, bool)) bool {
	vars := providerEnv(provider)
	for _, key := range []string{"api-key", "base-url"} {
		if v, ok := lookupEnv(vars[key]); ok && v != "" {
			return true
		}
	}
	return false
}

// newModel builds the model cfg names. Relative scenario paths are resolved against cwd.
// Configuration errors wrap llm.ErrNoAPIKey or llm.ErrBadConfig, or are usage errors.
// The network providers retry a call whose stream breaks (retry.Model), logging each
// retry on logger.
func newModel(cfg *Config, cwd string, lookupEnv func(string) (string, bool), logger *slog.Logger) (llm.Model, error) {
	switch cfg.Provider {
	case providerOpenAI, providerAnthropic:
		m, err := newNetworkModel(cfg)
		if err != nil {
			return nil, withOtherKeyHint(err, cfg.Provider, lookupEnv)
		}
		// At most llm.MaxConns calls in flight; each attempt of a retried call takes its place.
		return retry.Wrap(llm.Limit(m, llm.MaxConns()), retry.Policy{Logger: logger}), nil
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
		m.CapAnswers(int64(cfg.MaxAnswerBytes), answerCapName(cfg))
		m.DiscardRequests()
		return m, nil
	default:
		return nil, usageErrorf("unknown provider %q: want one of %s", cfg.Provider,
			strings.Join([]string{providerOpenAI, providerAnthropic, providerScripted}, ", "))
	}
}

// resolveParentModel maps the parent's model (--model, STOKE_MODEL, settings) through
// model-aliases, as an agent file's model is mapped (catalog.ResolveModel): --model
// sonnet runs on what model-aliases says sonnet is. A name the map does not hold is sent
// as written; an entry that cannot be honoured (it maps to inherit, or to another alias)
// is a warning, and the name is sent as written.
func resolveParentModel(cfg *Config, logger *slog.Logger) {
	if cfg.Model == "" || len(cfg.ModelAliases) == 0 {
		return
	}
	r := catalog.ResolveModel(cfg.Model, cfg.ModelAliases, cfg.Provider)
	switch {
	case r.Alias == "":
	case r.Model != "":
		logger.Debug("parent model mapped by model-aliases", "model", cfg.Model, "to", r.Model)
		cfg.Model = r.Model
	default:
		problem := r.Problem
		if problem == "" {
			problem = fmt.Sprintf("model-aliases maps %q to inherit, and the parent has no model to inherit", r.Alias)
		}
		logger.Warn("model alias not applied to the parent's model: it is sent as written", "model", cfg.Model, "problem", problem)
	}
}

// newNetworkModel builds the openai or anthropic provider. Its connections to the endpoint
// are capped (llm.MaxConns), as are its calls (newModel): many agents at once wait their
// turn rather than run the process out of file descriptors and memory.
func newNetworkModel(cfg *Config) (llm.Model, error) {
	timeout := cfg.RequestTimeout
	if timeout <= 0 {
		return nil, usageErrorf("invalid --request-timeout %v%s: want a positive duration", timeout, cfg.from("request-timeout"))
	}
	timeoutName := "--request-timeout"
	if src, ok := cfg.sources["request-timeout"]; ok && src != timeoutName {
		timeoutName += ", from " + src
	}
	if cfg.Provider == providerAnthropic {
		name := cfg.Model
		if name == "" {
			name = defaultAnthropicModel
		}
		return anthropic.New(anthropic.Config{
			APIKey: cfg.APIKey, KeyName: keyName(cfg), BaseURL: cfg.BaseURL, Model: name,
			MaxRetries: sdkMaxRetries, RequestTimeout: timeout, TimeoutName: timeoutName,
			MaxAnswerBytes: maxAnswer(cfg), MaxAnswerName: answerCapName(cfg),
			HTTPClient: llm.HTTPClient(llm.MaxConns()),
		})
	}
	name := cfg.Model
	if name == "" {
		name = defaultOpenAIModel
	}
	return openai.New(openai.Config{
		APIKey: cfg.APIKey, KeyName: keyName(cfg), BaseURL: cfg.BaseURL, Model: name,
		MaxRetries: sdkMaxRetries, RequestTimeout: timeout, TimeoutName: timeoutName,
		MaxAnswerBytes: maxAnswer(cfg), MaxAnswerName: answerCapName(cfg),
		HTTPClient: llm.HTTPClient(llm.MaxConns()),
	})
}

// maxAnswer is --max-answer-bytes as the providers' configurations take it: 0 (no cap)
// becomes negative.
func maxAnswer(cfg *Config) int64 {
	if cfg.MaxAnswerBytes == 0 {
		return -1
	}
	return int64(cfg.MaxAnswerBytes)
}

// answerCapName says where the cap on one answer is set, for the message of an answer
// past it.
func answerCapName(cfg *Config) string {
	name := "--max-answer-bytes"
	if src, ok := cfg.sources["max-answer-bytes"]; ok && src != name {
		name += ", from " + src
	}
	return name
}

// keyName says where the API key came from, for the message of a 401 answer.
func keyName(cfg *Config) string {
	src := cfg.sources["api-key"]
	if strings.HasSuffix(src, settingsFile) {
		return "api-key in " + src
	}
	return src
}

// withOtherKeyHint adds to a missing-key error of provider that the other network
// provider's key is set, and how to use it.
func withOtherKeyHint(err error, provider string, lookupEnv func(string) (string, bool)) error {
	other := providerAnthropic
	if provider == providerAnthropic {
		other = providerOpenAI
	}
	if !errors.Is(err, llm.ErrNoAPIKey) || !providerVarsSet(other, lookupEnv) {
		return err
	}
	return fmt.Errorf("%w (%s is set: pass --provider %s to use it)", err, providerEnv(other)["api-key"], other)
}
