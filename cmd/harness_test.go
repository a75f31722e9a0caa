package cmd

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/viper"

	"github.com/stoke-cli/stoke/headless"
)

// fixedSessionID is what the fake deps hand out as a new session id.
const fixedSessionID = "00000000-0000-4000-8000-000000000001"

// testProcess is a fake process: environment, working directory, home directory and stdin.
// Nothing here reads the real environment or the real home.
type testProcess struct {
	env      map[string]string
	cwd      string // the project directory
	userHome string // the user's home; $STOKE_HOME defaults to <userHome>/.stoke
	stdin    string
	in       io.Reader     // stdin instead of the string stdin, when set
	wait     time.Duration // Deps.StdinWait
	tty      bool          // stdin is a terminal
	runErr   error         // what the fake runF returns
}

func newTestProcess(t *testing.T) *testProcess {
	t.Helper()
	return &testProcess{env: map[string]string{}, cwd: t.TempDir(), userHome: t.TempDir(), tty: true}
}

// outcome is what one invocation produced.
type outcome struct {
	code           int
	stdout, stderr string
	opts           *headless.Options // nil when runF was not called
}

func (p *testProcess) deps() (*Deps, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	var in io.Reader = strings.NewReader(p.stdin)
	if p.in != nil {
		in = p.in
	}
	return &Deps{
		In:              in,
		StdinWait:       p.wait,
		Out:             &out,
		ErrOut:          &errOut,
		StdinIsTerminal: func() bool { return p.tty },
		LookupEnv:       func(k string) (string, bool) { v, ok := p.env[k]; return v, ok },
		Environ: func() []string {
			var env []string
			for k, v := range p.env {
				env = append(env, k+"="+v)
			}
			return env
		},
		Getwd:        func() (string, error) { return p.cwd, nil },
		UserHomeDir:  func() (string, error) { return p.userHome, nil },
		NewSessionID: func() string { return fixedSessionID },
		Viper:        viper.New(),
		Version:      "1.2.3",
	}, &out, &errOut
}

// run executes stoke with args, the way Execute does, with a runF that records the
// Options it is given.
func (p *testProcess) run(t *testing.T, args ...string) outcome {
	t.Helper()
	deps, out, errOut := p.deps()
	var got *headless.Options
	runF := func(_ context.Context, opts headless.Options) error {
		got = &opts
		return p.runErr
	}
	code := execute(t.Context(), deps, runF, args)
	return outcome{code: code, stdout: out.String(), stderr: errOut.String(), opts: got}
}

// config parses args with the real flag set and loads the configuration, without running.
func (p *testProcess) config(t *testing.T, args ...string) (*Config, error) {
	t.Helper()
	deps, _, _ := p.deps()
	root := NewRootCmd(deps, nil)
	if err := root.ParseFlags(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	home, err := stokeHome(deps, p.cwd)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := loadConfig(deps.Viper, configInput{flags: root.Flags(), lookupEnv: deps.LookupEnv, cwd: p.cwd, home: home})
	if err != nil {
		return nil, err
	}
	if _, err := cfg.validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// projectSettings writes <cwd>/.stoke/settings.yaml and returns its path.
func (p *testProcess) projectSettings(t *testing.T, yaml string) string {
	t.Helper()
	return writeFile(t, filepath.Join(p.cwd, ".stoke", "settings.yaml"), yaml)
}

// homeSettings writes $STOKE_HOME/settings.yaml (the default ~/.stoke unless env sets
// STOKE_HOME) and returns its path.
func (p *testProcess) homeSettings(t *testing.T, yaml string) string {
	t.Helper()
	home := filepath.Join(p.userHome, ".stoke")
	if h, ok := p.env["STOKE_HOME"]; ok {
		home = h
	}
	return writeFile(t, filepath.Join(home, "settings.yaml"), yaml)
}

func writeFile(t *testing.T, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// requireOneErrorLine fails unless stderr is exactly one "stoke: ..." line.
func requireOneErrorLine(t *testing.T, stderr string) {
	t.Helper()
	if !strings.HasPrefix(stderr, "stoke: ") || strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Fatalf("stderr is not exactly one \"stoke: \" line:\n%s", stderr)
	}
}
