package cmd

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/spf13/pflag"

	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless"
)

// initializeLine is an ACP client's first message.
const initializeLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n"

// replyWriter is stoke's stdout in a test: it keeps what is written, and ends the
// client's side (closes stdin) once the answer to the request of id 1 is out.
type replyWriter struct {
	mu     sync.Mutex
	buf    strings.Builder
	hangUp func()
	once   sync.Once
}

func (w *replyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.buf.Write(p)
	done := strings.Contains(w.buf.String(), `"id":1,`)
	w.mu.Unlock()
	if done {
		w.once.Do(w.hangUp)
	}
	return len(p), nil
}

func (w *replyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestACPServes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"--acp", []string{"--acp"}, nil},
		{"--experimental-acp", []string{"--experimental-acp"}, nil},
		{"STOKE_ACP", nil, map[string]string{"STOKE_ACP": "true"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			for k, v := range tt.env {
				p.env[k] = v
			}
			writeFile(t, filepath.Join(p.cwd, "hi.yaml"), "rules:\n  - reply:\n      text: hello\n")
			deps, _, errOut := p.deps()
			inR, inW := io.Pipe()
			out := &replyWriter{hangUp: func() { inW.Close() }}
			deps.In, deps.Out = inR, out
			go func() { _, _ = io.WriteString(inW, initializeLine) }()
			ran := false
			runF := func(context.Context, headless.Options) error { ran = true; return nil }
			if code := execute(t.Context(), deps, runF, append(tt.args, "--scenario", "hi.yaml")); code != 0 {
				t.Fatalf("exit %d, stderr %s", code, errOut)
			}
			if ran {
				t.Fatal("--acp ran a headless run")
			}
			if got := out.String(); !strings.Contains(got, `"agentInfo":{"name":"stoke","title":"stoke","version":"1.2.3"}`) {
				t.Fatalf("stdout %q: want the initialize response naming stoke 1.2.3", got)
			}
		})
	}
}

func TestACPRefusesRunFlags(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--acp", "-p", "hello"},
		{"--acp", "hello"},
		{"--acp", "--resume", fixedSessionID},
		{"--acp", "--continue"},
		{"--acp", "--session-id", fixedSessionID},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			p := newTestProcess(t)
			got := p.run(t, append(args, "--scenario", "none.yaml")...)
			if got.code != 2 || !strings.Contains(got.stderr, "--acp takes its prompts and sessions from the client") {
				t.Fatalf("exit %d, stderr %q: want 2 and why", got.code, got.stderr)
			}
		})
	}
}

// A session in another directory gets that project's settings over the launch's.
func TestACPSessionOptions(t *testing.T) {
	t.Parallel()
	p := newTestProcess(t)
	other := t.TempDir()
	writeFile(t, filepath.Join(other, ".stoke", "settings.yaml"), "approval-mode: plan\nbackground-on-exit: cancel\n")
	deps, _, _ := p.deps()
	root := NewRootCmd(deps, nil)
	if err := root.ParseFlags([]string{"--acp", "--approval-mode", "auto-edit"}); err != nil {
		t.Fatal(err)
	}
	base := headless.Options{CWD: p.cwd, ApprovalMode: tools.ModeAutoEdit, ModelName: "m"}
	home := filepath.Join(p.userHome, ".stoke")
	check := func(flags *pflag.FlagSet, cwd string, want tools.Mode, policy headless.BackgroundPolicy) {
		t.Helper()
		got, err := sessionOptions(base, deps, flags, home, cwd, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if got.CWD != cwd || got.ApprovalMode != want || got.BackgroundOnExit != policy || got.ModelName != "m" {
			t.Fatalf("session in %s: cwd %s, mode %s, policy %s, model %q; want %s, %s, %s, the launch's", cwd, got.CWD, got.ApprovalMode, got.BackgroundOnExit, got.ModelName, cwd, want, policy)
		}
	}
	check(root.Flags(), p.cwd, tools.ModeAutoEdit, "") // the launch's options as they are
	// The flag is above the project's settings, as for a run started there.
	check(root.Flags(), other, tools.ModeAutoEdit, headless.BackgroundCancel)
	bare := NewRootCmd(deps, nil)
	if err := bare.ParseFlags([]string{"--acp"}); err != nil {
		t.Fatal(err)
	}
	check(bare.Flags(), other, tools.ModePlan, headless.BackgroundCancel) // a project narrows
}
