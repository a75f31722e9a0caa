// Package anthropic implements llm.Model on the official anthropic-sdk-go v2 client
// for the Anthropic Messages API and compatible endpoints.
//
// The client is built from Config alone: unlike anthropic.NewClient it does not read
// ANTHROPIC_* environment variables, profiles or credential files, and its
// OpenTelemetry spans (which the SDK would configure from the environment) are off.
// The command layer decides which variables feed Config.
//
// # Prompt caching
//
// Every request carries up to four cache_control breakpoints (the API's limit), so
// that an agent kept hot across turns reads, on each call, the prompt cache its
// previous call wrote. The cache is a prefix cache over tools, then system, then
// messages:
//
//  1. the last tool definition: the tool list, shared by every agent with the same tools;
//  2. the system block: tools + system, shared by every call of the same agent definition;
//  3. the last block of the last message: the whole request, which the next call of
//     this agent extends and so reads back;
//  4. the last block of the last user message before the final assistant message:
//     that is where breakpoint 3 stood in the agent's previous call, so the read is
//     found there directly, however many blocks the last round added (the API only
//     looks back about 20 blocks from a breakpoint for an earlier entry).
//
// The body is a pure function of the llm.Request and the Config. Each message
// serialises on its own, so when request N+1 extends the history of request N, the
// bytes of N's messages reappear unchanged at the start of N+1's, except that
// cache_control keys come and go: breakpoint 3 of request N is breakpoint 4 of
// request N+1 (it stays), and breakpoint 4 of request N is dropped (it moves up two
// messages). Tools and system are byte-identical between the two.
package anthropic

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/stoke-cli/stoke/agents/llm"
)

// providerName is the Provider of the *llm.ProviderError values this package returns.
const providerName = "anthropic"

// defaultBaseURL is the production endpoint, used when Config.BaseURL is empty.
const defaultBaseURL = "https://api.anthropic.com/"

// defaultRequestTimeout bounds one HTTP attempt, streamed body included.
const defaultRequestTimeout = 10 * time.Minute

// DefaultMaxTokens is the max_tokens sent when Config.MaxTokens is zero.
const DefaultMaxTokens = 8192

// Config configures a Model.
type Config struct {
	// APIKey is sent in the x-api-key header. Required.
	APIKey string
	// BaseURL is the endpoint root; requests go to BaseURL/v1/messages. A trailing
	// /v1 is accepted and dropped (the flag is shared with OpenAI-compatible
	// endpoints, whose URLs end in /v1). Empty means https://api.anthropic.com.
	BaseURL string
	// Model is the default model name; Request.Model overrides it when set. Required.
	Model string
	// MaxRetries is how often the SDK retries 408/409/429/5xx answers and connection
	// errors before the stream starts. Negative means the SDK default (2).
	MaxRetries int
	// RequestTimeout bounds each HTTP attempt, including reading the streamed body.
	// Zero means 10 minutes.
	RequestTimeout time.Duration
	// MaxTokens caps the output of one call. Zero means DefaultMaxTokens.
	MaxTokens int64
	// HTTPClient is optional; nil means http.DefaultClient.
	HTTPClient *http.Client
	// KeyName says where APIKey came from (an environment variable, a settings file),
	// for the message of a 401 answer. Never the key itself.
	KeyName string
	// TimeoutName says where RequestTimeout is set, for the message of a timeout.
	TimeoutName string
	// MaxAnswerBytes caps one answer, its text and tool-call inputs together: past it
	// the stream is closed and the call fails with an *llm.AnswerTooLargeError. Zero
	// means llm.DefaultMaxAnswerBytes, negative no cap. MaxAnswerName says where it is
	// set, for the message.
	MaxAnswerBytes int64
	MaxAnswerName  string
}

// Model is an llm.Model backed by the Messages API. It is safe for concurrent use:
// it holds only immutable configuration.
type Model struct {
	messages  sdk.MessageService
	model     string
	maxTokens int64
	key       string // only to keep it out of error messages
	keyName   string
	transport llm.Transport
	maxAnswer int64 // 0: none
	capName   string
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for cfg. A missing key is an error wrapping llm.ErrNoAPIKey;
// a missing model name, a bad base URL or a negative MaxTokens one wrapping
// llm.ErrBadConfig.
func New(cfg Config) (*Model, error) {
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("anthropic provider: set ANTHROPIC_API_KEY or STOKE_API_KEY: %w", llm.ErrNoAPIKey)
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("anthropic provider: no model name given: %w", llm.ErrBadConfig)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic provider: max tokens %d is negative: %w", cfg.MaxTokens, llm.ErrBadConfig)
	}
	baseURL, err := normalizeBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	timeout := cfg.RequestTimeout
	if timeout <= 0 {
		timeout = defaultRequestTimeout
	}
	maxTokens := cfg.MaxTokens
	if maxTokens == 0 {
		maxTokens = DefaultMaxTokens
	}
	// NewMessageService, unlike NewClient, applies no environment defaults; every
	// setting the SDK would look up is given here. The key goes in x-api-key, the
	// header the Messages API documents for API keys and the one compatible
	// endpoints accept; option.WithAPIKey would send it as a bearer token.
	opts := []option.RequestOption{
		option.WithBaseURL(baseURL),
		option.WithHeader("x-api-key", cfg.APIKey),
		option.WithRequestTimeout(timeout),
		option.WithOpenTelemetryTraces(false),
		option.WithOpenTelemetryPropagation(false),
	}
	if cfg.MaxRetries >= 0 {
		opts = append(opts, option.WithMaxRetries(cfg.MaxRetries))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{
		messages:  sdk.NewMessageService(opts...),
		model:     cfg.Model,
		maxTokens: maxTokens,
		key:       cfg.APIKey,
		keyName:   cfg.KeyName,
		transport: llm.Transport{Provider: providerName, Timeout: timeout, TimeoutSetting: cfg.TimeoutName},
		maxAnswer: llm.MaxAnswer(cfg.MaxAnswerBytes),
		capName:   cfg.MaxAnswerName,
	}, nil
}

// normalizeBaseURL checks raw and returns it without a trailing /v1, ending in a slash.
func normalizeBaseURL(raw string) (string, error) {
	if raw == "" {
		return defaultBaseURL, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("anthropic provider: base URL %q is not an http(s) URL: %w", raw, llm.ErrBadConfig)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") + "/"
	return u.String(), nil
}

// Name is the configured default model name.
func (m *Model) Name() string { return m.model }
