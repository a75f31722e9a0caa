package tools

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/sandbox"
)

// A refusal by the sandbox ends the result with one line naming the sandbox and the
// flag that widens it; the guard's repairs are said too.
func TestShellSandboxSaysSo(t *testing.T) {
	t.Parallel()
	requireBash(t)
	if s := sandbox.Probe(); !s.Enforced {
		t.Skipf("the sandbox cannot be enforced on this kernel: %s", s.Reason)
	}
	outside := t.TempDir()
	w := newWorkspace(t, ModeYolo, map[string]string{".git/config": "[core]\n"})
	w = w.With(WithSandbox(newSandbox(t, sandbox.Config{}, w.Root())))
	tests := []struct {
		name, command, want string
		isError             bool
	}{
		{"write outside", "echo x > " + filepath.Join(outside, "f"), "[sandbox workspace-write: commands write only in the workspace and $TMPDIR, not " + filepath.Join(outside, "f") + "; --sandbox-writable DIR (a flag or the home settings) lets them write DIR]", true},
		{"network", "exec 3<>/dev/tcp/127.0.0.1/9", "--sandbox-network lets them use it]", true},
		{"guard", "echo '[core] fsmonitor = x' >> .git/config", "stoke put back .git/config]", false},
		{"a plain failure says nothing", "exit 3", "[exit code 3]", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, w, NameShell, obj{"command": tt.command})
			if !strings.HasSuffix(res.Content, tt.want) || res.IsError != tt.isError {
				t.Errorf("shell(%q) = %q (error %v), want it to end with %q", tt.command, res.Content, res.IsError, tt.want)
			}
		})
	}
	if got := readBack(t, w, ".git/config"); got != "[core]\n" {
		t.Errorf(".git/config = %q", got)
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
func (s *refusingSandbox) Hint(string, string) string { return "" }

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
