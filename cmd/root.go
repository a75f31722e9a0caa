// Package cmd is stoke's command line: cobra commands and viper configuration, wired to
// headless.Run. It holds no logic beyond turning flags, environment and settings files
// into headless.Options, and errors into exit codes.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/spf13/viper"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless"
	"github.com/stoke-cli/stoke/headless/progress"
)

// devVersion is reported when the binary carries no module version: built with
// -buildvcs=false or outside a clone, so no tag or commit backs it (make install stamps
// one).
const devVersion = "0.0.0-devel"

// Deps is what the commands take from the process. Execute fills it from the real
// process; tests fill it with buffers, a fake environment and temporary directories.
type Deps struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// StdinIsTerminal reports whether In is an interactive terminal, from which no
	// prompt is read.
	StdinIsTerminal func() bool
	// LookupEnv reads the environment (os.LookupEnv in production), and Environ lists it
	// (os.Environ; nil: an empty list). Nothing in cmd reads the process environment any
	// other way.
	LookupEnv func(key string) (string, bool)
	Environ   func() []string
	// Getwd returns the workspace root and the directory of the project settings.
	Getwd func() (string, error)
	// UserHomeDir locates ~/.stoke when STOKE_HOME is not set.
	UserHomeDir func() (string, error)
	// StdinWait is how long a run given a prompt waits for the first byte of piped stdin
	// before it goes on without it (0: 3 s, as Claude Code).
	StdinWait time.Duration
	// NewSessionID returns the id of a new session when --session-id is not given.
	NewSessionID func() string
	// Viper is a fresh viper.New(), used for one command execution.
	Viper *viper.Viper
	// Version is stoke's version, without a leading "v".
	Version string
}

// environ is the process environment, NAME=value entries (none when Environ is nil).
func (d *Deps) environ() []string {
	if d.Environ == nil {
		return nil
	}
	return d.Environ()
}

// RunFunc runs one headless session. It is headless.Run outside tests.
type RunFunc func(ctx context.Context, opts headless.Options) error

// Execute runs stoke with the process's arguments and returns its exit code. (Started
// as the sandbox's helper, the process never gets here: package sandbox runs the helper
// from its initialisation, before the heavier packages are initialised.)
func Execute() int {
	deps := &Deps{
		In:              os.Stdin,
		Out:             os.Stdout,
		ErrOut:          os.Stderr,
		StdinIsTerminal: stdinIsTerminal,
		LookupEnv:       os.LookupEnv,
		Environ:         os.Environ,
		Getwd:           os.Getwd,
		UserHomeDir:     os.UserHomeDir,
		NewSessionID:    uuid.NewString,
		Viper:           viper.New(),
		Version:         buildVersion(),
	}
	return execute(context.Background(), deps, headless.Run, os.Args[1:])
}

// execute runs the command tree on args, reports a failure on one stderr line and
// returns the exit code.
func execute(ctx context.Context, deps *Deps, runF RunFunc, args []string) int {
	root := NewRootCmd(deps, runF)
	args, err := normalizeArgs(root, args, argEnv{isDir: dirIn(deps)}) // Claude Code's idioms: -p, variadic flags
	if err == nil {
		root.SetArgs(args)
		allowSDKFlags(root, args, deps.ErrOut) // the Claude Agent SDK may pass flags stoke does not know
		err = root.ExecuteContext(ctx)
	}
	if err != nil {
		fmt.Fprintf(deps.ErrOut, "stoke: %s\n", oneLine(err.Error()))
	}
	return exitCode(err)
}

// dirIn returns a function that reports whether a path, relative to the working
// directory, is a directory.
func dirIn(deps *Deps) func(string) bool {
	return func(p string) bool {
		if !filepath.IsAbs(p) {
			cwd, err := deps.Getwd()
			if err != nil {
				return false
			}
			p = filepath.Join(cwd, p)
		}
		fi, err := os.Stat(p)
		return err == nil && fi.IsDir()
	}
}

// exitCode maps the error a command returned to stoke's exit code. It is the only place
// that does. The order matters: an interrupted run is reported as interrupted whatever
// else it wraps, and a run that failed after it started (ErrMaxTurns, ErrRunFailed)
// exits 1 even when the cause was a provider's configuration error.
func exitCode(err error) int {
	var interrupted *headless.InterruptedError
	var usage *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &interrupted):
		return interrupted.ExitCode()
	case errors.As(err, &usage), errors.Is(err, headless.ErrUsage), errors.Is(err, headless.ErrSessionBusy):
		return 2
	case errors.Is(err, headless.ErrMaxTurns), errors.Is(err, headless.ErrRunFailed):
		return 1
	case errors.Is(err, llm.ErrNoAPIKey), errors.Is(err, llm.ErrBadConfig):
		return 2
	default:
		return 1
	}
}

// oneLine folds a message onto one line, so stderr gets exactly one line per failure.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// NewRootCmd returns the stoke command tree. The root command runs one headless session
// through runF (headless.Run when nil).
func NewRootCmd(deps *Deps, runF RunFunc) *cobra.Command {
	if runF == nil {
		runF = headless.Run
	}
	cmd := &cobra.Command{
		Use:   "stoke [flags] [PROMPT]",
		Short: "Run one headless agent session and exit",
		Long: `stoke runs a model-driven tool loop on one prompt and writes the result on stdout:
the final text, one JSON result object, or stream-JSON events (--output-format).

The prompt is the argument (stoke -p "fix the bug", stoke "fix the bug"), or
--prompt TEXT; piped stdin is added to it on a new line (git diff | stoke -p
"review this"), or is the whole prompt when none is given (echo hi | stoke -p).
Claude Code's flags work as scripts write them (docs/claude-code-flags.md).

Configuration comes from flags, then STOKE_* environment variables (dashes as
underscores: STOKE_MODEL, STOKE_BASE_URL, ...), then .stoke/settings.yaml in the
working directory, then $STOKE_HOME/settings.yaml (default ~/.stoke). API keys come
only from the environment (STOKE_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY) or
api-key in a settings file. A project's settings may only narrow the run unless it is
trusted (--trust-project, or trusted-projects in $STOKE_HOME/settings.yaml).`,
		Example:                    rootExamples,
		Version:                    deps.Version,
		SilenceUsage:               true,
		SilenceErrors:              true,
		SuggestionsMinimumDistance: 2,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 || strings.ContainsAny(args[0], " \t\n") {
				return nil // runRoot checks the prompt arguments
			}
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				return usageErrorf("unknown command %q; did you mean %q? (to send it as the prompt: stoke -p %s)", args[0], s[0], args[0])
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runRoot(c.Context(), deps, c.Flags(), args, runF)
		},
	}
	cmd.SetIn(deps.In)
	cmd.SetOut(deps.Out)
	cmd.SetErr(deps.ErrOut)
	cmd.SetVersionTemplate(versionLine(deps.Version) + "\n")
	cmd.CompletionOptions.DisableDefaultCmd = true
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageErrorf("%v (see '%s --help')", err, c.CommandPath())
	})

	addRunFlags(cmd.Flags())
	addSandboxFlags(cmd.Flags())
	addACPFlags(cmd.Flags())
	addMCPFlags(cmd.Flags())
	addRecordFlags(cmd.Flags())
	addClaudeFlags(cmd.Flags())
	addQwenFlags(cmd.Flags())
	completeFlagValues(cmd)
	setRootUsage(cmd)

	cmd.AddCommand(NewCmdVersion(deps))
	cmd.AddCommand(NewCmdCompletion(deps))
	cmd.AddCommand(NewCmdSessions(deps, nil))
	cmd.AddCommand(NewCmdAgents(deps, nil))
	return cmd
}

// addRunFlags declares the flags of a run. Their names are the configuration keys.
func addRunFlags(f *pflag.FlagSet) {
	f.SortFlags = false
	f.BoolP("print", "p", false, "print the result and exit, as stoke always does (Claude Code's flag); a word right after -p is the prompt")
	f.String("prompt", "", "the prompt `TEXT`, instead of the argument (piped stdin is added to it; alone, stdin is the prompt)")
	f.String("output-format", headless.OutputText, "text | json (one result object) | stream-json (NDJSON events)")
	f.String("input-format", headless.InputText, "text | stream-json (user messages, one JSON line each, on stdin)")
	f.String("provider", "", "openai | anthropic | scripted (default scripted with --scenario, anthropic when only ANTHROPIC_* is set, else openai)")
	f.StringP("model", "m", "", "model name passed to the provider (openai default "+defaultOpenAIModel+")")
	f.String("base-url", "", "provider endpoint (OpenAI-compatible: ends in /v1)")
	f.String("scenario", "", "scenario `FILE` for the scripted provider")
	f.Int("max-turns", agents.DefaultMaxTurns, "cap on parent model calls per prompt, the turns reading the notifications that follow it included; 0: no cap")
	f.Duration("timeout", 0, "whole-run deadline, e.g. 10m (0: none)")
	f.Duration("request-timeout", defaultRequestTimeout, "limit on one model request, streamed answer included")
	f.Int("max-answer-bytes", llm.DefaultMaxAnswerBytes, "cap on one model answer, its text and tool-call arguments together, in bytes; past it the call fails (0: no cap)")
	f.String("approval-mode", string(tools.ModeDefault), tools.ModeNames(" | "))
	f.String("background-on-exit", string(headless.BackgroundWait), "wait: end after background agents settle | cancel: cancel them at the end")
	f.Int("max-background", agents.DefaultMaxBackground, "cap on running background agents; launches over it wait in a queue")
	f.Int("max-queued", agents.DefaultMaxQueued, "cap on background launches waiting for a slot; past it a launch fails (0: no queue, a launch over --max-background fails at once)")
	f.Int("max-retained", agents.DefaultMaxRetained, "settled agent records kept per session, the oldest dropped first (never one whose notification the parent has not read)")
	f.Int("max-foreground", agents.DefaultMaxForeground, "cap on foreground agents running at once; the others wait their turn")
	f.Bool("no-background-agents", false, "turn background agents off (no run_in_background)")
	f.StringP("resume", "r", "", "continue the stored session `SESSION_ID` (restores its agent roster)")
	f.BoolP("continue", "c", false, "resume the most recent session of this working directory")
	f.String("session-id", "", "start a new session with this `UUID` (with --fork-session: the fork's id)")
	f.Bool("fork-session", false, "with --resume or --continue: continue a copy of the session under a new id, leaving the original untouched")
	f.Duration("wait-for-session", 0, "wait up to `DURATION` for another run that writes the same session (default: exit 2 at once)")
	f.Bool("bare", false, "no project settings, no post-restore reminder")
	f.Bool("trust-project", false, "let the project's settings and agent files widen the run (endpoints, keys, hooks, trace file); see README")
	f.Bool("verbose", false, "accepted for compatibility with Claude Code's stream-json usage")
	f.BoolP("debug", "d", false, "log debug diagnostics on stderr (else STOKE_LOG_LEVEL, default warn)")
	f.String("trace-file", "", "write OpenTelemetry spans to `FILE` as OTLP JSON, one ExportTraceServiceRequest per line (OTEL_* variables export over OTLP: docs/observability.md)")
	f.String("report", "", "at the end of the run, however it ends, write the session's report to `FILE` (HTML: stoke sessions report, docs/report.md)")
	f.String("progress", progress.ModeAuto, "progress on stderr: auto (a live status line when stderr is a terminal) | plain (a line per agent event, a heartbeat every 10s) | off")
}

// buildVersion is the main module's version from the build info, or devVersion.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return strings.TrimPrefix(bi.Main.Version, "v")
	}
	return devVersion
}

// versionLine is what `stoke version` and `stoke --version` print.
func versionLine(version string) string {
	return fmt.Sprintf("stoke %s (%s %s/%s)", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// stdinIsTerminal reports whether the process's stdin is a character device. /dev/null
// counts as one, which is what we want: nothing to read there.
func stdinIsTerminal() bool {
	fi, err := os.Stdin.Stat()
	return err != nil || fi.Mode()&os.ModeCharDevice != 0
}
