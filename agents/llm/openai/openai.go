// Package openai implements llm.Model on the official openai-go v3 client for any
// OpenAI-compatible chat-completions endpoint (OpenAI, DashScope/Qwen, vLLM, Ollama,
// llama.cpp server, OpenRouter).
//
// The client is built from Config alone: unlike openai.NewClient it does not read
// OPENAI_* environment variables, so a key or header meant for one endpoint never
// leaks to another. The command layer decides which variables feed Config.
package openai

import (
	"fmt"
	"net/http"
	"net/url"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/stoke-cli/stoke/agents/llm"
)

// providerName is the Provider of the *llm.ProviderError values this package returns.
const providerName = "openai"

// defaultBaseURL is the SDK's production endpoint, used when Config.BaseURL is empty.
const defaultBaseURL = "https://api.openai.com/v1/"

// defaultRequestTimeout bounds one HTTP attempt, streamed body included.
const defaultRequestTimeout = 10 * time.Minute

// Config configures a Model.
type Config struct {
	// APIKey is sent as a bearer token. Required.
	APIKey string
	// BaseURL is the endpoint root, ending in /v1 for most servers.
	// Empty means https://api.openai.com/v1.
	BaseURL string
	// Model is the default model name; Request.Model overrides it when set. Required.
	Model string
	// MaxRetries is how often the SDK retries 408/409/429/5xx answers and connection
	// errors before the stream starts. Negative means the SDK default (2).
	MaxRetries int
	// RequestTimeout bounds each HTTP attempt, including reading the streamed body.
	// Zero means 10 minutes.
	RequestTimeout time.Duration
	// HTTPClient is optional; nil means http.DefaultClient.
	HTTPClient *http.Client
	// KeyName says where APIKey came from (an environment variable, a settings file),
	// for the message of a 401 answer. Never the key itself.
	KeyName string
	// TimeoutName says where RequestTimeout is set, for the message of a timeout.
	TimeoutName string
	// MaxAnswerBytes caps one answer, its text and tool-call arguments together: past
	// it the stream is closed and the call fails with an *llm.AnswerTooLargeError. Zero
	// means llm.DefaultMaxAnswerBytes, negative no cap. MaxAnswerName says where it is
	// set, for the message.
	MaxAnswerBytes int64
	MaxAnswerName  string
}

// Model is an llm.Model backed by a chat-completions endpoint. It is safe for
// concurrent use: it holds only immutable configuration.
type Model struct {
	chat      sdk.ChatCompletionService
	model     string
	baseURL   string
	key       string // only to keep it out of error messages
	keyName   string
	transport llm.Transport
	maxAnswer int64 // 0: none
	capName   string
}

var _ llm.Model = (*Model)(nil)

// New returns a Model for cfg. A missing key is an error wrapping llm.ErrNoAPIKey, a
// missing model name one wrapping llm.ErrBadConfig.
func New(cfg Config) (*Model, error) {
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("openai provider: set OPENAI_API_KEY or STOKE_API_KEY: %w", llm.ErrNoAPIKey)
	}
	if cfg.Model == "" {
		return nil, fmt.Errorf("openai provider: no model name given: %w", llm.ErrBadConfig)
	}
	baseURL := cfg.BaseURL
	if baseURL == "" {
		baseURL = defaultBaseURL
	}
	if u, err := url.Parse(baseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai provider: base URL %q is not an http(s) URL: %w", baseURL, llm.ErrBadConfig)
	}
	timeout := cfg.RequestTimeout
	if timeout <= 0 {
		timeout = defaultRequestTimeout
	}
	opts := []option.RequestOption{
		option.WithBaseURL(baseURL),
		option.WithAPIKey(cfg.APIKey),
		option.WithRequestTimeout(timeout),
	}
	if cfg.MaxRetries >= 0 {
		opts = append(opts, option.WithMaxRetries(cfg.MaxRetries))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Model{
		chat:      sdk.NewChatCompletionService(opts...),
		model:     cfg.Model,
		baseURL:   baseURL,
		key:       cfg.APIKey,
		keyName:   cfg.KeyName,
		transport: llm.Transport{Provider: providerName, Timeout: timeout, TimeoutSetting: cfg.TimeoutName},
		maxAnswer: llm.MaxAnswer(cfg.MaxAnswerBytes),
		capName:   cfg.MaxAnswerName,
	}, nil
}

// Name is the configured default model name.
func (m *Model) Name() string { return m.model }
