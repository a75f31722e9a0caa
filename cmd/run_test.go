package cmd

import (
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/openai"
	"github.com/stoke-cli/stoke/agents/llm/retry"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/headless"
)

// ignoreWiring leaves out of comparisons the Options fields that are objects, not values.
var ignoreWiring = cmpopts.IgnoreFields(headless.Options{}, "Stdin", "Stdout", "Logger", "Model", "Prices", "Secrets", "Observe")

func TestOptionsFromFlags(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-test"
	got := p.run(t,
		"-p", "fix the bug",
		"--output-format", "stream-json",
		"-m", "gpt-5-mini",
		"--base-url", "http://127.0.0.1:9/v1",
		"--max-turns", "12",
		"--timeout", "5m",
		"--approval-mode", "yolo",
		"--background-on-exit", "cancel",
		"--max-background", "8",
		"--max-queued", "50",
		"--max-retained", "7",
		"--max-foreground", "2",
		"--no-background-agents",
		"--session-id", "7B4A4E70-5576-4AC3-B794-8F816B5C26E8",
		"--bare",
		"--verbose",
	)
	if got.code != 0 || got.opts == nil {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	want := headless.Options{
		Prompt:           "fix the bug",
		InputFormat:      "text",
		OutputFormat:     "stream-json",
		ModelName:        "gpt-5-mini",
		Provider:         "openai",
		MaxTurns:         12,
		Timeout:          5 * time.Minute,
		ApprovalMode:     "yolo",
		BackgroundOnExit: "cancel",
		CWD:              p.cwd,
		SessionID:        "7b4a4e70-5576-4ac3-b794-8f816b5c26e8",
		Home:             filepath.Join(p.userHome, ".stoke"),
		Version:          "1.2.3",
		MaxBackground:    8,
		MaxQueued:        50,
		MaxRetained:      7,
		MaxForeground:    2,
		BackgroundAgents: false,
		Bare:             true,
	}
	if d := cmp.Diff(want, *got.opts, ignoreWiring); d != "" {
		t.Errorf("Options (-want +got):\n%s", d)
	}
	if r, ok := got.opts.Model.(*retry.Model); !ok {
		t.Errorf("Model is %T, want *retry.Model", got.opts.Model)
	} else if l, ok := r.Model.(*llm.Limited); !ok {
		t.Errorf("Model retries a %T, want *llm.Limited", r.Model)
	} else if _, ok := l.Model.(*openai.Model); !ok {
		t.Errorf("Model limits a %T, want *openai.Model", l.Model)
	}
	if got.opts.Stdin != nil || got.opts.Logger == nil || got.opts.Stdout == nil {
		t.Errorf("Stdin %v, Logger %v, Stdout %v; want nil, set, set", got.opts.Stdin, got.opts.Logger, got.opts.Stdout)
	}
}

// --max-queued 0 is no queue (agents.NoQueue); STOKE_MAX_RETAINED sets --max-retained.
func TestOptionsNoQueueAndRetained(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-test"
	p.env["STOKE_MAX_RETAINED"] = "3"
	got := p.run(t, "-p", "hi", "--max-queued", "0")
	if got.code != 0 || got.opts == nil {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	if got.opts.MaxQueued != agents.NoQueue || got.opts.MaxRetained != 3 {
		t.Errorf("MaxQueued %d, MaxRetained %d; want agents.NoQueue and 3", got.opts.MaxQueued, got.opts.MaxRetained)
	}
}

func TestOptionsDefaults(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-test"
	got := p.run(t, "-p", "hi")
	if got.code != 0 || got.opts == nil {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	want := headless.Options{
		Prompt:           "hi",
		InputFormat:      "text",
		OutputFormat:     "text",
		ModelName:        defaultOpenAIModel,
		Provider:         "openai",
		ApprovalMode:     "default",
		BackgroundOnExit: "wait",
		CWD:              p.cwd,
		SessionID:        fixedSessionID,
		Home:             filepath.Join(p.userHome, ".stoke"),
		Version:          "1.2.3",
		MaxBackground:    4,
		MaxQueued:        1000,
		MaxRetained:      100,
		MaxForeground:    8,
		MaxTurns:         100,
		BackgroundAgents: true,
	}
	if d := cmp.Diff(want, *got.opts, ignoreWiring); d != "" {
		t.Errorf("Options (-want +got):\n%s", d)
	}
	if got.stderr != "" {
		t.Errorf("stderr = %q, want nothing at the default log level", got.stderr)
	}
}

func TestPromptSources(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		env        string // STOKE_PROMPT, when not empty
		tty        bool
		stdin      string
		wantPrompt string
		wantStdin  bool
	}{
		{name: "flag", args: []string{"-p", "from flag"}, tty: true, wantPrompt: "from flag"},
		{name: "piped stdin joins the prompt on a new line", args: []string{"-p", "from flag"}, stdin: "piped\n", wantPrompt: "from flag\npiped"},
		{name: "piped stdin joins the prompt argument", args: []string{"from arg"}, stdin: "a\nb\r\n\n", wantPrompt: "from arg\na\nb"},
		{name: "piped stdin joins STOKE_PROMPT", env: "from env", stdin: "piped", wantPrompt: "from env\npiped"},
		{name: "blank piped stdin adds nothing", args: []string{"-p", "from flag"}, stdin: " \n\n", wantPrompt: "from flag"},
		{name: "a blank prompt and piped stdin: stdin is the prompt", args: []string{"-p", " "}, stdin: "piped", wantPrompt: "piped"},
		{name: "stdin keeps inner blank lines and leading space", args: []string{"-p", "explain"}, stdin: "  x\n\ny\n", wantPrompt: "explain\n  x\n\ny"},
		{name: "STOKE_PROMPT", env: "from env", tty: true, wantPrompt: "from env"},
		{name: "flag beats STOKE_PROMPT", args: []string{"-p", "from flag"}, env: "from env", wantPrompt: "from flag"},
		{name: "piped stdin", stdin: "line one\nline two\n\n", wantPrompt: "line one\nline two"},
		{name: "piped stdin with CRLF", stdin: "hello\r\n", wantPrompt: "hello"},
		{name: "stream-json input", args: []string{"--input-format", "stream-json"}, stdin: `{"type":"user"}` + "\n", wantStdin: true},
		{name: "stream-json input from a terminal", args: []string{"--input-format", "stream-json"}, tty: true, wantStdin: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			p.env["OPENAI_API_KEY"] = "sk-test"
			p.tty, p.stdin = tt.tty, tt.stdin
			if tt.env != "" {
				p.env["STOKE_PROMPT"] = tt.env
			}
			got := p.run(t, tt.args...)
			if got.code != 0 || got.opts == nil {
				t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
			}
			if got.opts.Prompt != tt.wantPrompt {
				t.Errorf("Prompt = %q, want %q", got.opts.Prompt, tt.wantPrompt)
			}
			if (got.opts.Stdin != nil) != tt.wantStdin {
				t.Errorf("Stdin = %v, want set: %v", got.opts.Stdin, tt.wantStdin)
			}
		})
	}
}

func TestSessionIDs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		args         []string
		wantSession  string
		wantResume   string
		wantContinue bool
	}{
		{name: "generated", wantSession: fixedSessionID},
		{name: "given", args: []string{"--session-id", "{7b4a4e70-5576-4ac3-b794-8f816b5c26e8}"}, wantSession: "7b4a4e70-5576-4ac3-b794-8f816b5c26e8"},
		{name: "resume", args: []string{"--resume", "7b4a4e70-5576-4ac3-b794-8f816b5c26e8"}, wantResume: "7b4a4e70-5576-4ac3-b794-8f816b5c26e8"},
		{name: "continue", args: []string{"--continue"}, wantContinue: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			p.env["OPENAI_API_KEY"] = "sk-test"
			got := p.run(t, append([]string{"-p", "hi"}, tt.args...)...)
			if got.code != 0 || got.opts == nil {
				t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
			}
			o := got.opts
			if o.SessionID != tt.wantSession || o.Resume != tt.wantResume || o.Continue != tt.wantContinue {
				t.Errorf("SessionID %q, Resume %q, Continue %v; want %q, %q, %v",
					o.SessionID, o.Resume, o.Continue, tt.wantSession, tt.wantResume, tt.wantContinue)
			}
		})
	}
}

func TestScriptedProvider(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	writeFile(t, filepath.Join(p.cwd, "scenarios", "hi.yaml"), "model: scripted-hi\nrules:\n  - reply:\n      text: hello\n")
	// No API key anywhere: the scripted provider needs none.
	got := p.run(t, "-p", "hi", "--scenario", filepath.Join("scenarios", "hi.yaml"))
	if got.code != 0 || got.opts == nil {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	if _, ok := got.opts.Model.(*scripted.Model); !ok {
		t.Errorf("Model is %T, want *scripted.Model", got.opts.Model)
	}
	if got.opts.ModelName != "scripted-hi" {
		t.Errorf("ModelName = %q, want scripted-hi", got.opts.ModelName)
	}
}

func TestHomeFromEnvironment(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-test"
	p.env["STOKE_HOME"] = "state" // relative to the working directory
	got := p.run(t, "-p", "hi")
	if got.code != 0 || got.opts == nil {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	if want := filepath.Join(p.cwd, "state"); got.opts.Home != want {
		t.Errorf("Home = %q, want %q", got.opts.Home, want)
	}
}

// --debug logs the configuration on stderr, without the API key.
func TestDebugLogHidesKey(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-very-secret"
	got := p.run(t, "-p", "hi", "--debug")
	if got.code != 0 {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	if !strings.Contains(got.stderr, "level=DEBUG") || !strings.Contains(got.stderr, "config.api-key=<redacted>") {
		t.Errorf("no debug record with the redacted key:\n%s", got.stderr)
	}
	if strings.Contains(got.stderr, "sk-very-secret") {
		t.Errorf("stderr shows the API key:\n%s", got.stderr)
	}
	if got.opts.Logger == nil || !got.opts.Logger.Enabled(t.Context(), slog.LevelDebug) {
		t.Error("Options.Logger is not at debug level")
	}
}

func TestLogLevelFromEnvironment(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-test"
	p.env["STOKE_LOG_LEVEL"] = "error"
	got := p.run(t, "-p", "hi")
	if got.code != 0 || got.opts == nil {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	if got.opts.Logger.Enabled(t.Context(), slog.LevelWarn) || !got.opts.Logger.Enabled(t.Context(), slog.LevelError) {
		t.Error("Options.Logger is not at error level")
	}
}

// Structured settings: prices and hooks, merged entry by entry (project over home), with
// model names that hold dots kept whole.
func TestStructuredSettings(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	p.env["STOKE_TRUST_PROJECT"] = "1" // project prices and hooks count only in a trusted project
	p.homeSettings(t, "prices:\n  gpt-4.1-custom: {input: 1, output: 2}\n  other: {input: 9, output: 9}\n")
	p.projectSettings(t, "prices:\n  other: {input: 3, output: 4}\nhooks:\n  SubagentStart:\n    - command: ./on-start.sh\n      timeout: 5s\n")
	writeFile(t, filepath.Join(p.cwd, "s.yaml"), "rules:\n  - reply:\n      text: hello\n")
	got := p.run(t, "-p", "x", "--scenario", "s.yaml")
	if got.code != 0 {
		t.Fatalf("code %d: %s", got.code, got.stderr)
	}
	u := llm.Usage{InputTokens: 1_000_000, OutputTokens: 1_000_000}
	if c := got.opts.Prices.Cost("gpt-4.1-custom", u); c != 3 {
		t.Errorf("cost of gpt-4.1-custom = %v, want 3 (home settings)", c)
	}
	if c := got.opts.Prices.Cost("other", u); c != 7 {
		t.Errorf("cost of other = %v, want 7 (the project's entry wins)", c)
	}
	hs := got.opts.Hooks[hooks.SubagentStart]
	if len(hs) != 1 || hs[0].Command != "./on-start.sh" || hs[0].Timeout != 5*time.Second {
		t.Errorf("hooks = %+v", got.opts.Hooks)
	}
	bad := newTestProcess(t)
	bad.env["STOKE_TRUST_PROJECT"] = "1"
	bad.projectSettings(t, "prices: 3\n")
	if got := bad.run(t, "-p", "x", "--scenario", "s.yaml"); got.code != 2 || !strings.Contains(got.stderr, "prices") {
		t.Errorf("bad prices: code %d, stderr %q", got.code, got.stderr)
	}
}

// A run given a prompt waits a bounded time for piped stdin that never comes (a parent
// that leaves the pipe open), then goes on with the prompt alone and one warning.
func TestPromptStdinNeverWritten(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() }) // ends the reader left blocked on the pipe
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-test"
	p.tty, p.in, p.wait = false, pr, 10*time.Millisecond
	got := p.run(t, "-p", "q")
	if got.code != 0 || got.opts == nil {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	if got.opts.Prompt != "q" {
		t.Errorf("Prompt = %q, want %q", got.opts.Prompt, "q")
	}
	if strings.Count(got.stderr, "level=WARN") != 1 || !strings.Contains(got.stderr, "no stdin data received") {
		t.Errorf("stderr = %q, want one warning about stdin", got.stderr)
	}
}

// Once stdin data flows, it is read to the end however long that takes: the wait bounds
// only the first byte.
func TestPromptStdinSlowWriter(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	p := newTestProcess(t)
	p.env["OPENAI_API_KEY"] = "sk-test"
	p.tty, p.in, p.wait = false, pr, time.Hour
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		_, _ = io.WriteString(pw, "first ")
		_, _ = io.WriteString(pw, "second\n")
		_ = pw.Close()
	}()
	got := p.run(t, "-p", "q")
	<-wrote
	if got.code != 0 || got.opts == nil {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	if got.opts.Prompt != "q\nfirst second" {
		t.Errorf("Prompt = %q, want %q", got.opts.Prompt, "q\nfirst second")
	}
}

func TestJoinPrompt(t *testing.T) {
	t.Parallel()
	tests := []struct{ prompt, stdin, want string }{
		{"explain", "log line\n", "explain\nlog line"},
		{"", "q\n", "q"},
		{"q", "", "q"},
		{"q", "\n\n", "q"},
		{"  ", "q", "q"},
		{"a\n", "b", "a\n\nb"}, // the prompt is kept as given
		{"", "", ""},
	}
	for _, tt := range tests {
		if got := joinPrompt(tt.prompt, tt.stdin); got != tt.want {
			t.Errorf("joinPrompt(%q, %q) = %q, want %q", tt.prompt, tt.stdin, got, tt.want)
		}
	}
}
