package tools

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/sandbox"
)

// requireSandbox skips a test that needs bash and a kernel that can confine commands.
func requireSandbox(t *testing.T) {
	t.Helper()
	requireBash(t)
	if s := sandbox.Probe(); !s.Enforced {
		t.Skipf("the sandbox cannot be enforced on this kernel: %s", s.Reason)
	}
}

// A refusal by the sandbox ends the result with one line naming the sandbox and the
// flag that widens it; the guard's repairs are said too. The same holds for the commands
// an ACP client runs in its terminal (execTerminal): the line is the sandbox's wrapper,
// and the guard and the hint work around it.
func TestShellSandboxSaysSo(t *testing.T) {
	t.Parallel()
	requireSandbox(t)
	for _, way := range []struct {
		name string
		opts []Option
	}{{"stoke's own", nil}, {"a terminal's", []Option{WithTerminal(execTerminal{})}}} {
		t.Run(way.name, func(t *testing.T) {
			t.Parallel()
			outside := t.TempDir()
			w := newWorkspace(t, ModeYolo, map[string]string{".git/config": "[core]\n"}, way.opts...)
			sb := newSandbox(t, sandbox.Config{}, w.Root())
			w = w.With(WithSandbox(sb))
			tests := []struct {
				name, command, want string
				isError             bool
			}{
				{"write outside", "echo x > " + filepath.Join(outside, "f"), "[sandbox workspace-write: commands write only in the workspace and $TMPDIR, not " + filepath.Join(outside, "f") + "; --sandbox-writable DIR (a flag or the home settings) lets them write DIR]", true},
				{"network", "exec 3<>/dev/tcp/127.0.0.1/9", "--sandbox-network lets them use it]", true},
				{"guard", "echo '[core] fsmonitor = x' >> .git/config", "stoke put back .git/config]", false},
				{"write inside", "echo x > f && cat f", "x\n[exit code 0]", false},
				{"its TMPDIR, not the terminal's environment", "test \"$TMPDIR\" = " + sb.TempDir() + " && echo x > \"$TMPDIR/f\" && echo ${TERMINAL_ONLY:-unset}", "unset\n[exit code 0]", false},
				{"a plain failure says nothing", "exit 3", "(no output)\n[exit code 3]", true},
			}
			for _, tt := range tests {
				res := call(t, w, NameShell, obj{"command": tt.command})
				if !strings.HasSuffix(res.Content, tt.want) || res.IsError != tt.isError {
					t.Errorf("%s: shell(%q) = %q (error %v), want it to end with %q", tt.name, tt.command, res.Content, res.IsError, tt.want)
				}
			}
			if _, err := os.Stat(filepath.Join(outside, "f")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the write outside the workspace happened (stat: %v)", err)
			}
			if got := readBack(t, w, ".git/config"); got != "[core]\n" {
				t.Errorf(".git/config = %q", got)
			}
		})
	}
}

// refusingSandbox is a sandbox whose Check refuses, as --sandbox-required does where the
// kernel cannot enforce it.
type refusingSandbox struct{ ran bool }

func (s *refusingSandbox) Check() error {
	return errors.New("the sandbox is required but this kernel cannot enforce it: no Landlock")
}
func (s *refusingSandbox) Supervises() bool { return true }
func (s *refusingSandbox) Run(context.Context, sandbox.Request) (sandbox.Outcome, error) {
	s.ran = true
	return sandbox.Outcome{}, nil
}
func (s *refusingSandbox) Hint(string, string) string              { return "" }
func (s *refusingSandbox) Environ(env []string, _ string) []string { return env }
func (s *refusingSandbox) Wrap(string, []string) (*sandbox.Wrapped, error) {
	s.ran = true
	return nil, errors.New("Wrap despite Check")
}

func TestShellSandboxRequired(t *testing.T) {
	t.Parallel()
	requireBash(t)
	sb := &refusingSandbox{}
	w := newWorkspace(t, ModeYolo, nil, WithSandbox(sb))
	res := call(t, w, NameShell, obj{"command": "touch ran"})
	if !res.IsError || !strings.Contains(res.Content, "shell: the sandbox is required but this kernel cannot enforce it: no Landlock") || sb.ran || fileExists(w, "ran") {
		t.Errorf("shell = %+v (ran %v)", res, sb.ran)
	}
}

func TestShellSandboxRequiredInTerminal(t *testing.T) {
	t.Parallel()
	sb, term := &refusingSandbox{}, &fakeTerminal{}
	w := newWorkspace(t, ModeYolo, nil, WithSandbox(sb), WithTerminal(term))
	res := call(t, w, NameShell, obj{"command": "touch ran"})
	if !res.IsError || !strings.Contains(res.Content, "shell: the sandbox is required") || sb.ran || len(term.reqs) != 0 {
		t.Errorf("shell = %+v (wrapped %v, %d terminal requests)", res, sb.ran, len(term.reqs))
	}
}

// execTerminal runs each command line itself, as an ACP client's terminal does: a
// process stoke does not start, with the terminal's own environment.
type execTerminal struct{}

func (execTerminal) Run(ctx context.Context, req TerminalRequest) (TerminalResult, error) {
	cmd := exec.CommandContext(ctx, req.Args[0], req.Args[1:]...)
	cmd.Dir = req.Dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TERMINAL_ONLY=yes"}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return TerminalResult{}, err
	}
	return TerminalResult{Output: string(out), ExitCode: cmd.ProcessState.ExitCode()}, nil
}
