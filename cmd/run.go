package cmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/headless"
)

// maxRetained caps settled task rows kept per parent.
const maxRetained = 100

// runRoot turns flags, environment and settings into headless.Options and calls runF.
func runRoot(ctx context.Context, deps *Deps, flags *pflag.FlagSet, runF RunFunc) error {
	cwd, err := deps.Getwd()
	if err != nil {
		return fmt.Errorf("get working directory: %w", err)
	}
	home, err := stokeHome(deps, cwd)
	if err != nil {
		return err
	}
	claude, err := applyClaudeFlags(flags, deps.LookupEnv) // before loadConfig: --permission-mode sets --approval-mode
	if err != nil {
		return err
	}
	cfg, ignored, err := loadConfig(deps.Viper, configInput{flags: flags, lookupEnv: deps.LookupEnv, cwd: cwd, home: home})
	if err != nil {
		return err
	}
	level, err := cfg.validate()
	if err != nil {
		return err
	}
	prog := newProgress(deps, cfg)
	logger := slog.New(slog.NewTextHandler(prog.Writer(), &slog.HandlerOptions{Level: level}))
	for _, k := range ignored {
		logger.Warn("settings key ignored", "file", k.file, "key", k.key, "reason", k.reason)
	}
	claude.log(logger)
	if cfg.Scenario != "" && cfg.Provider != providerScripted {
		logger.Warn("scenario ignored: it is used only by the scripted provider", "provider", cfg.Provider, "scenario", cfg.Scenario)
	}

	prompt, stdin, err := readPrompt(cfg, deps)
	if err != nil {
		return err
	}
	model, err := newModel(cfg, cwd)
	if err != nil {
		return err
	}

	sessionID := cfg.SessionID
	if sessionID == "" && cfg.Resume == "" && !cfg.Continue {
		sessionID = deps.NewSessionID()
	}
	opts := headless.Options{
		Prompt:           prompt,
		Stdin:            stdin,
		InputFormat:      cfg.InputFormat,
		OutputFormat:     cfg.OutputFormat,
		Stdout:           deps.Out,
		Logger:           logger,
		Model:            model,
		ModelName:        model.Name(),
		MaxTurns:         cfg.MaxTurns,
		Timeout:          cfg.Timeout,
		ApprovalMode:     cfg.ApprovalMode,
		BackgroundOnExit: cfg.BackgroundOnExit,
		CWD:              cwd,
		SessionID:        sessionID,
		Resume:           cfg.Resume,
		Continue:         cfg.Continue,
		Home:             home,
		Version:          deps.Version,
		MaxBackground:    cfg.MaxBackground,
		MaxRetained:      maxRetained,
		BackgroundAgents: !cfg.NoBackgroundAgents,
		Bare:             cfg.Bare,
		Prices:           price.Default().With(cfg.Prices),
		Hooks:            cfg.Hooks,
		SDK:              claude.sdk,
	}
	if claude.noPersistence && cfg.Resume == "" && !cfg.Continue {
		opts.Home = "" // --no-session-persistence: nothing is written under $STOKE_HOME
	}
	if opts.Prices, err = checkPrices(opts.Prices, opts.ModelName, opts.SDK.MaxBudgetUSD, logger); err != nil {
		return err
	}
	tracer, stopTelemetry, err := setupTelemetry(ctx, deps, cfg, opts.Prices, logger, prog.Writer())
	if err != nil {
		return err
	}
	defer stopTelemetry()
	opts.Tracer = tracer
	defer attachProgress(prog, deps, &opts)()
	logger.Debug("starting run", "session_id", sessionID, "cwd", cwd, "home", home, "config", cfg)
	return runF(ctx, opts)
}

// readPrompt returns the prompt of a text run, or stdin for a stream-json run.
func readPrompt(cfg *Config, deps *Deps) (string, io.Reader, error) {
	if cfg.InputFormat == headless.InputStreamJSON {
		if cfg.given("prompt") {
			return "", nil, usageErrorf("--prompt%s cannot be used with --input-format stream-json: send user messages on stdin", cfg.from("prompt"))
		}
		return "", deps.In, nil
	}
	if cfg.given("prompt") {
		if strings.TrimSpace(cfg.Prompt) == "" {
			return "", nil, usageErrorf("empty prompt%s: pass -p TEXT or pipe the prompt on stdin", cfg.from("prompt"))
		}
		return cfg.Prompt, nil, nil
	}
	if deps.StdinIsTerminal() {
		return "", nil, usageErrorf("no prompt: pass -p TEXT or pipe the prompt on stdin")
	}
	data, err := io.ReadAll(deps.In)
	if err != nil {
		return "", nil, fmt.Errorf("read prompt from stdin: %w", err)
	}
	prompt := strings.TrimRight(string(data), "\r\n")
	if strings.TrimSpace(prompt) == "" {
		return "", nil, usageErrorf("no prompt: stdin was empty; pass -p TEXT or pipe the prompt on stdin")
	}
	return prompt, nil, nil
}

// stokeHome is $STOKE_HOME (relative to cwd when relative), else ~/.stoke.
func stokeHome(deps *Deps, cwd string) (string, error) {
	if h, ok := deps.LookupEnv("STOKE_HOME"); ok && h != "" {
		if !filepath.IsAbs(h) {
			h = filepath.Join(cwd, h)
		}
		return filepath.Clean(h), nil
	}
	dir, err := deps.UserHomeDir()
	if err != nil || dir == "" {
		return "", usageErrorf("cannot find the home directory: set STOKE_HOME")
	}
	return filepath.Join(dir, ".stoke"), nil
}
