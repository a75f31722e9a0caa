package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/price"
	"github.com/stoke-cli/stoke/agents/trace"
	"github.com/stoke-cli/stoke/headless"
)

// runRoot turns flags, the prompt argument (args), environment and settings into
// headless.Options and calls runF.
func runRoot(ctx context.Context, deps *Deps, flags *pflag.FlagSet, args []string, runF RunFunc) error {
	cwd, err := deps.Getwd()
	if err != nil {
		return fmt.Errorf("get working directory: %w", err)
	}
	home, err := stokeHome(deps, cwd)
	if err != nil {
		return err
	}
	claude, err := applyClaudeFlags(flags, claudeInput{lookupEnv: deps.LookupEnv, cwd: cwd, sdk: sdkFlags(flags)}) // before loadConfig: --permission-mode sets --approval-mode
	if err != nil {
		return err
	}
	if err := applyQwenFlags(flags, claude); err != nil { // before loadConfig too: --channel=SDK maps --approval-mode auto
		return err
	}
	if err := promptArgument(flags, args); err != nil { // before loadConfig: it sets --prompt
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
		k.log(logger)
	}
	claude.log(logger)
	if err := hideEnviron(); err != nil {
		logger.Warn("cannot hide the environment from child processes", "err", err)
	}
	if cfg.Scenario != "" && cfg.Provider != providerScripted {
		logger.Warn("scenario ignored: it is used only by the scripted provider", "provider", cfg.Provider, "scenario", cfg.Scenario)
	}

	resolveParentModel(cfg, logger) // --model sonnet, as an agent's model: through model-aliases
	serving := acpMode(flags, cfg)
	var prompt string
	var stdin io.Reader
	if serving {
		if err := checkACP(cfg); err != nil {
			return err
		}
	} else if prompt, stdin, err = readPrompt(ctx, cfg, deps, logger); err != nil {
		return err
	}
	model, cas, err := openModel(flags, deps, cfg, cwd, logger, func() (llm.Model, error) { // --record, --replay (record.go)
		return newModel(cfg, cwd, deps.LookupEnv, logger)
	})
	if err != nil {
		return err
	}
	mcpOpts, err := mcpOptions(flags, cfg, deps.LookupEnv, cwd, logger)
	if err != nil {
		return err
	}
	sb, err := newSandbox(cfg, flags, deps, cwd, home, logger)
	if err != nil {
		return err
	}
	defer closeSandbox(sb, logger)

	sessionID := cfg.SessionID
	if sessionID == "" && (cfg.Resume == "" && !cfg.Continue || cfg.ForkSession) {
		sessionID = deps.NewSessionID() // a new session, or the fork's
	}
	opts := headless.Options{
		Prompt:           prompt,
		Stdin:            stdin,
		InputFormat:      cfg.InputFormat,
		OutputFormat:     cfg.OutputFormat,
		Verbose:          cfg.Verbose,
		Stdout:           deps.Out,
		Logger:           logger,
		Model:            model,
		ModelName:        model.Name(),
		Provider:         cfg.Provider,
		ModelAliases:     cfg.ModelAliases,
		MaxTurns:         cfg.MaxTurns,
		Timeout:          cfg.Timeout,
		ApprovalMode:     cfg.ApprovalMode,
		BackgroundOnExit: cfg.BackgroundOnExit,
		CWD:              cwd,
		SessionID:        sessionID,
		Resume:           cfg.Resume,
		Continue:         cfg.Continue,
		ForkSession:      cfg.ForkSession,
		WaitForSession:   cfg.WaitForSession,
		Home:             home,
		Version:          deps.Version,
		MaxBackground:    cfg.MaxBackground,
		MaxForeground:    cfg.MaxForeground,
		MaxQueued:        maxQueued(cfg.MaxQueued),
		MaxRetained:      cfg.MaxRetained,
		BackgroundAgents: !cfg.NoBackgroundAgents,
		Bare:             cfg.Bare,
		TrustProject:     cfg.Trusted,
		Secrets:          cfg.secretsPolicy(deps.LookupEnv, deps.environ()),
		Sandbox:          sb,
		Prices:           price.Default().With(cfg.Prices),
		Report:           absPath(cwd, cfg.Report),
		Hooks:            cfg.Hooks,
		MCP:              mcpOpts,
		SDK:              claude.sdk,
		OutputSchema:     claude.outputSchema,
		OutputAttempts:   claude.outputAttempts,
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
	if tracer != nil {
		// The run nests in the pipeline's trace (TRACEPARENT, as CI systems and otel-cli
		// set it); a malformed one is one warning, and the run is a trace of its own.
		var perr error
		if ctx, perr = trace.ContextFromEnv(ctx, deps.LookupEnv); perr != nil {
			logger.Warn("TRACEPARENT ignored", "err", perr)
		}
	}
	defer attachProgress(prog, deps, &opts)()
	logger.Debug("starting run", "session_id", sessionID, "cwd", cwd, "home", home, "config", cfg)
	if serving {
		runF = serveACP(deps, flags, home, logger)
	}
	return cas.run(ctx, opts, runF)
}

// maxQueued is the registry's spelling of --max-queued: 0 is no queue.
func maxQueued(n int) int {
	if n == 0 {
		return agents.NoQueue
	}
	return n
}

// sdkFlags reports whether the flags ask for SDK mode: stream-json on stdin and stdout.
func sdkFlags(f *pflag.FlagSet) bool {
	in, _ := f.GetString("input-format")
	out, _ := f.GetString("output-format")
	return in == headless.InputStreamJSON && out == headless.OutputStreamJSON
}

// promptArgument makes the prompt argument (`stoke "fix it"`, `stoke -p --model m "fix
// it"`) the value of --prompt. There is at most one, and not besides --prompt or a word
// right after -p: `stoke -p "fix" it` is refused rather than guessed at.
func promptArgument(f *pflag.FlagSet, args []string) error {
	switch {
	case len(args) == 0:
		return nil
	case f.Changed("prompt"):
		return usageErrorf("unexpected argument %q: the prompt is already given (-p TEXT or --prompt); quote the whole prompt as one argument", args[0])
	case len(args) > 1:
		return usageErrorf("unexpected argument %q after the prompt %q: quote the whole prompt as one argument", args[1], args[0])
	}
	return f.Set("prompt", args[0])
}

// defaultStdinWait is how long a run with a prompt waits for the first byte of piped
// stdin before it goes on without it, as Claude Code does (3 s): a parent process may
// leave a pipe open that nobody writes to.
const defaultStdinWait = 3 * time.Second

// readPrompt returns the prompt of a text run, or stdin for a stream-json run. Piped
// stdin joins the prompt as Claude Code joins them: the prompt, a newline, then stdin
// (`cat log | stoke -p "explain"`); without a prompt, stdin is the prompt. Trailing line
// ends of stdin are dropped, and a blank part is left out.
func readPrompt(ctx context.Context, cfg *Config, deps *Deps, logger *slog.Logger) (string, io.Reader, error) {
	given := cfg.given("prompt") && strings.TrimSpace(cfg.Prompt) != ""
	if cfg.InputFormat == headless.InputStreamJSON {
		if cfg.given("prompt") {
			return "", nil, usageErrorf("a prompt%s cannot be used with --input-format stream-json: send user messages on stdin", cfg.from("prompt"))
		}
		return "", deps.In, nil
	}
	if deps.StdinIsTerminal() {
		switch {
		case given:
			return cfg.Prompt, nil, nil
		case cfg.given("prompt"):
			return "", nil, usageErrorf("empty prompt%s: pass the prompt as an argument (stoke -p \"TEXT\") or pipe it on stdin", cfg.from("prompt"))
		}
		return "", nil, usageErrorf("no prompt: pass the prompt as an argument (stoke -p \"TEXT\") or pipe it on stdin")
	}
	wait := time.Duration(0) // the prompt comes from stdin: wait for it as long as it takes
	if given {
		wait = deps.StdinWait
		if wait <= 0 {
			wait = defaultStdinWait
		}
	}
	data, ok, err := readStdin(ctx, deps.In, wait)
	if err != nil {
		return "", nil, fmt.Errorf("read the prompt from stdin: %w", err)
	}
	if !ok {
		logger.Warn("no stdin data received: going on with the prompt alone (redirect stdin from /dev/null to skip the wait)", "waited", wait)
	}
	prompt := joinPrompt(cfg.Prompt, data)
	if strings.TrimSpace(prompt) == "" {
		return "", nil, usageErrorf("no prompt: stdin was empty; pass the prompt as an argument (stoke -p \"TEXT\") or pipe it on stdin")
	}
	return prompt, nil, nil
}

// joinPrompt joins the prompt and piped stdin as Claude Code does ([prompt, stdin] less the
// empty parts, joined by a newline), with stdin's trailing line ends dropped.
func joinPrompt(prompt, stdin string) string {
	var parts []string
	for _, p := range []string{prompt, strings.TrimRight(stdin, "\r\n")} {
		if strings.TrimSpace(p) != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, "\n")
}

// readStdin reads r to its end. With wait > 0, it gives up when no byte has arrived after
// wait (ok false): the reading goroutine is then left blocked until the process exits,
// as nothing can interrupt a read of the process's stdin. Once data flows, it reads on to
// the end.
func readStdin(ctx context.Context, r io.Reader, wait time.Duration) (data string, ok bool, err error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	flowing := make(chan struct{})
	go func() {
		var buf bytes.Buffer
		p := make([]byte, 32<<10)
		for {
			n, err := r.Read(p)
			if n > 0 && buf.Len() == 0 {
				close(flowing)
			}
			buf.Write(p[:n])
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				done <- result{buf.Bytes(), err}
				return
			}
		}
	}()
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-flowing:
	case res := <-done:
		return string(res.data), true, res.err
	case <-timeout:
		return "", false, nil
	case <-ctx.Done():
		return "", false, ctx.Err()
	}
	select {
	case res := <-done:
		return string(res.data), true, res.err
	case <-ctx.Done():
		return "", false, ctx.Err()
	}
}

// stokeHome is $STOKE_HOME (relative to cwd when relative), else ~/.stoke. A home inside
// the working directory is refused (ErrUsage): the checkout's own files would then be
// read as the user's settings — as when cwd is $HOME and STOKE_HOME is unset, where the
// project's .stoke/settings.yaml is ~/.stoke/settings.yaml.
func stokeHome(deps *Deps, cwd string) (string, error) {
	var home, src string
	if h, ok := deps.LookupEnv("STOKE_HOME"); ok && h != "" {
		if !filepath.IsAbs(h) {
			h = filepath.Join(cwd, h)
		}
		home, src = filepath.Clean(h), "STOKE_HOME"
	} else {
		dir, err := deps.UserHomeDir()
		if err != nil || dir == "" {
			return "", usageErrorf("cannot find the home directory: set STOKE_HOME")
		}
		home, src = filepath.Join(dir, ".stoke"), "~/.stoke (STOKE_HOME is not set)"
	}
	if within(resolved(cwd), resolved(home)) {
		return "", usageErrorf("%s, %s, lies inside the working directory %s, whose files would be read as your own settings: set STOKE_HOME to a directory outside it", src, home, cwd)
	}
	return home, nil
}

// resolved returns p with the symbolic links of the part that exists resolved.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := filepath.Split(filepath.Clean(p))
	if dir = filepath.Clean(dir); dir == p || dir == "." || dir == string(filepath.Separator) {
		return filepath.Clean(p)
	}
	return filepath.Join(resolved(dir), base)
}

// absPath is path made absolute against cwd ("" stays "").
func absPath(cwd, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(cwd, path)
}
