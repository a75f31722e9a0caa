package cmd

import (
	"context"
	"io"
	"log/slog"
	"time"

	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/agents/trace"
)

// Default model endpoints, for server.address on the model-call spans.
const (
	openAIDefaultURL    = "https://api.openai.com/v1"
	anthropicDefaultURL = "https://api.anthropic.com"
)

// setupTelemetry starts the exporters that --trace-file and the OTEL_* variables ask for;
// console exporters write to console (stderr, through the progress line).
// A malformed OTEL_* value is a usage error; one that stoke does not act on is one
// warning line. The returned stop flushes them, within
// trace.FlushTimeout, and must run before the process exits.
func setupTelemetry(ctx context.Context, deps *Deps, cfg *Config, prices price.Table, logger *slog.Logger, console io.Writer) (trace.Tracer, func(), error) {
	tc, err := trace.ConfigFromEnv(deps.LookupEnv, console)
	if err != nil {
		return nil, nil, usageErrorf("telemetry: %v", err)
	}
	for _, u := range tc.Unsupported {
		logger.Warn("OTEL variable not supported: ignored", "var", u.Var, "reason", u.Reason)
	}
	tc.File = cfg.TraceFile
	tc.ServiceName, tc.ServiceVersion = "stoke", deps.Version
	tc.Provider, tc.ServerURL = genAIProvider(cfg.Provider), cfg.BaseURL
	if tc.ServerURL == "" {
		switch cfg.Provider {
		case providerOpenAI:
			tc.ServerURL = openAIDefaultURL
		case providerAnthropic:
			tc.ServerURL = anthropicDefaultURL
		}
	}
	tc.Prices, tc.Logger = prices, logger
	tracing, err := trace.Setup(ctx, tc)
	if err != nil {
		return nil, nil, usageErrorf("tracing: %v", err)
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tracing.Shutdown(sctx); err != nil {
			logger.Warn("flush traces", "err", err)
		}
	}
	if !tracing.Enabled() {
		return nil, stop, nil
	}
	return tracing.Tracer(), stop, nil
}

// genAIProvider is gen_ai.provider.name for a provider: the conventions' name, or
// stoke's own for the scripted model.
func genAIProvider(provider string) string {
	if provider == providerScripted {
		return "stoke.scripted"
	}
	return provider
}
