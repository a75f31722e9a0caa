package tools

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/secrets"
)

// fakeTerminal answers every command with res (or err), and records the requests.
type fakeTerminal struct {
	res  TerminalResult
	err  error
	reqs []TerminalRequest
}

func (f *fakeTerminal) Run(_ context.Context, req TerminalRequest) (TerminalResult, error) {
	f.reqs = append(f.reqs, req)
	return f.res, f.err
}

func TestShellInTerminal(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		res     TerminalResult
		err     error
		want    string // the result's content
		wantErr bool   // the result is an error
	}{
		{"exit 0", TerminalResult{Output: "hi\n"}, nil, "hi\n[exit code 0]", false},
		{"exit 3, no output", TerminalResult{ExitCode: 3}, nil, "(no output)\n[exit code 3]", true},
		{"killed by a signal", TerminalResult{Output: "x", ExitCode: -1, Signal: "SIGKILL"}, nil, "x\n[exit: signal SIGKILL]", true},
		{"timed out", TerminalResult{Output: "slow\n", ExitCode: -1, Signal: "SIGKILL", TimedOut: true}, nil, "slow\n[timed out after 2m0s; the command was killed]\n[exit: signal SIGKILL]", true},
		{"the terminal failed", TerminalResult{}, errors.New("no terminals left"), "shell: the terminal: no terminals left", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			term := &fakeTerminal{res: tt.res, err: tt.err}
			w := newWorkspace(t, ModeYolo, nil, WithTerminal(term), WithSecrets(secrets.New(secrets.Config{Deny: []string{"PATH"}})))
			res := call(t, w, NameShell, obj{"command": "echo hi"})
			if res.Content != tt.want || res.IsError != tt.wantErr {
				t.Fatalf("shell = %+v, want %q (error %v)", res, tt.want, tt.wantErr)
			}
			if len(term.reqs) != 1 {
				t.Fatalf("%d terminal requests, want 1", len(term.reqs))
			}
			req := term.reqs[0]
			if req.CallID != "toolu_1" || req.Dir != w.Root() || req.Timeout != DefaultShellTimeout {
				t.Errorf("request %+v: want the call's id, the workspace root, the default timeout", req)
			}
			if !slices.Equal(req.Args[:2], []string{"env", "-i"}) || !slices.Equal(req.Args[len(req.Args)-3:], []string{"bash", "-c", "echo hi"}) {
				t.Errorf("args %q: want env -i … bash -c 'echo hi'", req.Args)
			}
			for _, a := range req.Args {
				if strings.HasPrefix(a, "PATH=") {
					t.Errorf("args %q pass a denied variable on", req.Args)
				}
			}
		})
	}
}
