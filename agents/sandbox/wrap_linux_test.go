package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// wrapped runs script as another process runs the line Wrap makes (an ACP client's
// terminal): started by the test, not by the sandbox, with the terminal's own
// environment. It returns the wrapper's exit code and output.
func (f *fixture) wrapped(t *testing.T, script string, env ...string) (int, string) {
	t.Helper()
	cmd := f.wrapCmd(t, script, env...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run the wrapper: %v", err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

func (f *fixture) wrapCmd(t *testing.T, script string, env ...string) *exec.Cmd {
	t.Helper()
	args := append(append([]string{"env", "-i"}, f.sb.Environ(f.env(env...), f.ws)...), bash(t), "-c", script)
	w, err := f.sb.Wrap(f.ws, args)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Done() })
	if w.Args[1] != WrapArg || w.Args[len(w.Args)-1] != script {
		t.Fatalf("wrapped line %q: want stoke's binary, %s, the policy, then the command", w.Args, WrapArg)
	}
	cmd := exec.Command(w.Args[0], w.Args[1:]...)
	cmd.Dir = f.ws
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	return cmd
}

// The line Wrap makes confines its command as Run does, in a process the sandbox did
// not start.
func TestWrapConfines(t *testing.T) {
	requireKernel(t)
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
	lb := newLoopback(t)
	refused := []struct {
		name, script string
		effect       func(t *testing.T) bool
	}{
		{"write in $HOME", `echo x > "$HOME/planted"`, is(exists(filepath.Join(f.home, "planted")))},
		{"write outside the workspace", `echo x > "$OUTSIDE/planted"`, is(exists(filepath.Join(f.outside, "planted")))},
		{"read a key in ~/.ssh", `cat "$HOME/.ssh/id_ed25519"`, nil},
		{"read STOKE_HOME/settings.yaml", `cat "$STOKE_HOME/settings.yaml"`, nil},
		{"TCP connect to a loopback listener", `exec 3<>/dev/tcp/127.0.0.1/$TCP_PORT`, func(t *testing.T) bool { return lb.reached(t, "tcp") }},
		{"UDP datagram to a loopback listener", `echo x > /dev/udp/127.0.0.1/$UDP_PORT`, func(t *testing.T) bool { return lb.reached(t, "udp") }},
		{"signal the wrapper", `kill -0 $PPID`, nil},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			code, out := f.wrapped(t, tt.script, lb.env()...)
			if code == 0 || strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, "sk-secret") {
				t.Errorf("wrapped, %q exits %d: %s", tt.script, code, out)
			}
			if tt.effect != nil && tt.effect(t) {
				t.Errorf("wrapped, %q had its effect", tt.script)
			}
		})
	}
	if code, out := f.wrapped(t, `echo x > made && test "$TMPDIR" = `+f.sb.TempDir()+` && echo y > "$TMPDIR/f" && cat made`); code != 0 || out != "x\n" {
		t.Errorf("a write in the workspace and in TMPDIR: exit %d, %q", code, out)
	}
}

// The wrapper's exit code is its command's (128+n for signal n), and what the command
// left running ends with it: a terminal's command outlives nothing.
func TestWrapEndsWithItsCommand(t *testing.T) {
	requireKernel(t)
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
	code, out := f.wrapped(t, `sleep 300 >/dev/null 2>&1 & echo $! > bg.pid; exit 3`)
	if code != 3 {
		t.Fatalf("exit %d, want 3: %s", code, out)
	}
	if pid := readPid(t, filepath.Join(f.ws, "bg.pid")); syscall.Kill(pid, 0) == nil {
		t.Errorf("background process %d outlived the wrapper", pid)
	}
	if code, out := f.wrapped(t, `kill -TERM $$`); code != 128+int(syscall.SIGTERM) {
		t.Errorf("a command ended by SIGTERM: exit %d, want %d: %s", code, 128+int(syscall.SIGTERM), out)
	}
}

// A terminal that kills the wrapper (SIGTERM, as a client's kill may) ends the command
// and what it started.
func TestWrapKilled(t *testing.T) {
	requireKernel(t)
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
	cmd := f.wrapCmd(t, `sleep 300 >/dev/null 2>&1 & echo $! > bg.tmp && mv bg.tmp bg.pid; exec sleep 301`)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, exists(filepath.Join(f.ws, "bg.pid")))
	bg := readPid(t, filepath.Join(f.ws, "bg.pid"))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGKILL) {
		t.Errorf("wrapper exit %d (%v), want %d: its command killed", code, err, 128+int(syscall.SIGKILL))
	}
	if syscall.Kill(bg, 0) == nil {
		t.Errorf("background process %d outlived the killed wrapper", bg)
	}
}

// Started by hand, the wrapper says how it is meant to be started.
func TestWrapByHand(t *testing.T) {
	cmd := exec.Command(os.Args[0], WrapArg, "{}")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 126 || !strings.HasPrefix(string(out), "stoke: sandbox: ") || strings.Count(string(out), "\n") != 1 {
		t.Errorf("wrapper by hand: exit %d, %q; want 126 and one line", code, out)
	}
}
