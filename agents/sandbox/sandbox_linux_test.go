package sandbox

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/sandbox/sandboxtest"
)

// requireKernel skips a test where the kernel cannot confine commands.
func requireKernel(t *testing.T) {
	t.Helper()
	if s := Probe(); !s.Enforced {
		t.Skipf("the sandbox cannot be enforced on this kernel: %s", s.Reason)
	}
}

// fixture is a user's machine in miniature: a home with a credential store, a STOKE_HOME
// with settings, a workspace (a git repository) and a directory outside both.
type fixture struct {
	home, stokeHome, ws, outside string
	sb                           *Sandbox
}

func newFixture(t *testing.T, cfg Config) *fixture {
	t.Helper()
	base := t.TempDir()
	f := &fixture{
		home:      filepath.Join(base, "home"),
		stokeHome: filepath.Join(base, "stoke-home"),
		ws:        filepath.Join(base, "home", "src", "project"),
		outside:   filepath.Join(base, "elsewhere"),
	}
	for _, d := range []string{filepath.Join(f.home, ".ssh"), f.stokeHome, f.ws, f.outside} {
		mkdir(t, d)
	}
	write(t, filepath.Join(f.home, ".ssh", "id_ed25519"), "PRIVATE KEY")
	write(t, filepath.Join(f.stokeHome, "settings.yaml"), "api-key: sk-secret\n")
	write(t, filepath.Join(f.ws, "README"), "hello\n")
	gitInit(t, f.ws)
	cfg.UserHome, cfg.StokeHome = f.home, f.stokeHome
	cfg.TempRoot = base
	sb, err := New(cfg, f.ws)
	if err != nil {
		t.Fatal(err)
	}
	f.sb = sb
	t.Cleanup(func() {
		if _, err := sb.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return f
}

// env is the environment the scripts see: the fixture's paths as variables.
func (f *fixture) env(extra ...string) []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + f.home, "STOKE_HOME=" + f.stokeHome, "OUTSIDE=" + f.outside,
		"GIT_CONFIG_NOSYSTEM=1", "GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false",
	}, extra...)
}

// run runs script in the sandbox and returns how it ended and its output.
func (f *fixture) run(t *testing.T, script string, env ...string) (Outcome, string) {
	t.Helper()
	var out bytes.Buffer
	o, err := f.sb.Run(t.Context(), Request{Root: f.ws, Args: []string{bash(t), "-c", script}, Env: f.env(env...),
		Output: &out, Timeout: time.Minute, WaitDelay: 2 * time.Second})
	if err != nil {
		t.Fatalf("run %q: %v", script, err)
	}
	return o, out.String()
}

// unconfined runs script as the shell tool does without a sandbox: the control.
func (f *fixture) unconfined(t *testing.T, script string, env ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bash(t), "-c", script)
	cmd.Dir, cmd.Env = f.ws, append(f.env(env...), "TMPDIR="+f.sb.TempDir())
	out, _ := cmd.CombinedOutput()
	return cmd.ProcessState.ExitCode(), string(out)
}

func bash(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	return p
}

func mkdir(t *testing.T, d string) {
	t.Helper()
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gitInit(t *testing.T, dir string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		mkdir(t, filepath.Join(dir, ".git", "hooks"))
		write(t, filepath.Join(dir, ".git", "config"), "[core]\n")
		return
	}
	cmd := exec.Command("git", "init", "-q", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
}

// loopback is the test's loopback listeners (sandboxtest.Loopback), closed at its end.
type loopback struct {
	*sandboxtest.Loopback
}

func newLoopback(t *testing.T) loopback {
	t.Helper()
	lb, err := sandboxtest.Listen()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lb.Close)
	return loopback{lb}
}

func (lb loopback) env() []string { return lb.Env() }

// reached reports whether something reached the network's listener since the last look.
func (lb loopback) reached(t *testing.T, network string) bool {
	t.Helper()
	got, err := lb.Reached(network)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Every case runs the same script twice: unconfined (the control: it succeeds, so the
// sandbox is what refuses it) and in the sandbox.
func TestSandboxRefuses(t *testing.T) {
	requireKernel(t)
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
	lb := newLoopback(t)
	tests := []struct {
		name, script string
		effect       func(t *testing.T) bool // the effect happened (checked after each run)
		undo         func()
		needs        string
	}{
		{name: "write in $HOME", script: `echo x > "$HOME/planted"`, effect: is(exists(filepath.Join(f.home, "planted")))},
		{name: "write in STOKE_HOME", script: `echo "approval-mode: yolo" > "$STOKE_HOME/settings.yaml"`,
			effect: is(contains(filepath.Join(f.stokeHome, "settings.yaml"), "yolo")),
			undo:   func() { write(t, filepath.Join(f.stokeHome, "settings.yaml"), "api-key: sk-secret\n") }},
		{name: "write outside the workspace", script: `echo x > "$OUTSIDE/planted"`, effect: is(exists(filepath.Join(f.outside, "planted")))},
		{name: "read STOKE_HOME/settings.yaml", script: `cat "$STOKE_HOME/settings.yaml"`},
		{name: "read a key in ~/.ssh", script: `cat "$HOME/.ssh/id_ed25519"`},
		{name: "list ~/.ssh/", script: `ls "$HOME/.ssh/"`},
		{name: "TCP connect to a loopback listener", script: `exec 3<>/dev/tcp/127.0.0.1/$TCP_PORT`, effect: func(t *testing.T) bool { return lb.reached(t, "tcp") }},
		{name: "UDP datagram to a loopback listener", script: `echo x > /dev/udp/127.0.0.1/$UDP_PORT`, effect: func(t *testing.T) bool { return lb.reached(t, "udp") }},
		{name: "UDP sendto without connect", script: `python3 -c "import socket,os; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'u', ('127.0.0.1', int(os.environ['UDP_PORT'])))"`,
			effect: func(t *testing.T) bool { return lb.reached(t, "udp") }, needs: "python3"},
		{name: "signal the supervisor", script: `kill -0 $PPID`},
		{name: "signal stoke", script: `kill -0 ` + strconv.Itoa(os.Getpid())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := exec.LookPath(tt.needs); tt.needs != "" && err != nil {
				t.Skipf("no %s", tt.needs)
			}
			code, out := f.unconfined(t, tt.script, lb.env()...)
			if code != 0 {
				t.Fatalf("control: unconfined, %q exits %d: %s", tt.script, code, out)
			}
			if tt.effect != nil && !tt.effect(t) {
				t.Fatalf("control: unconfined, %q had no effect", tt.script)
			}
			if tt.undo != nil {
				tt.undo()
			}
			os.Remove(filepath.Join(f.home, "planted"))
			os.Remove(filepath.Join(f.outside, "planted"))
			o, out := f.run(t, tt.script, lb.env()...)
			if o.ExitCode == 0 {
				t.Errorf("sandboxed, %q succeeded: %s", tt.script, out)
			}
			if tt.effect != nil && tt.effect(t) {
				t.Errorf("sandboxed, %q had its effect", tt.script)
			}
			if strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, "sk-secret") || strings.HasPrefix(out, "id_ed25519") {
				t.Errorf("sandboxed, %q read a secret: %s", tt.script, out)
			}
		})
	}
}

func is(f func() bool) func(*testing.T) bool { return func(*testing.T) bool { return f() } }

func exists(p string) func() bool {
	return func() bool { _, err := os.Lstat(p); return err == nil }
}

func contains(p, s string) func() bool {
	return func() bool { b, _ := os.ReadFile(p); return strings.Contains(string(b), s) }
}

// What a build needs works in the sandbox: the workspace and TMPDIR are writable, git,
// go and make run.
func TestSandboxAllows(t *testing.T) {
	requireKernel(t)
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
	write(t, filepath.Join(f.ws, "Makefile"), "all:\n\techo built > out.txt\n")
	tests := []struct {
		name, script string
		needs        string
	}{
		{"write in the workspace", `echo x > new.txt && mkdir -p a/b && echo y > a/b/c && rm -r a && cat new.txt`, ""},
		{"write in TMPDIR", `d=$(mktemp -d) && echo x > "$d/f" && cat "$d/f" && [ "${d#$TMPDIR}" != "$d" ]`, ""},
		{"read the workspace and the system", `cat README && cat /etc/passwd >/dev/null && ls /usr/bin >/dev/null`, ""},
		{"pipes and /dev/null", `echo a | tr a b >/dev/stdout && echo err >/dev/stderr && echo x >/dev/null`, ""},
		{"git status", `git status --short`, "git"},
		{"go version", `go version`, "go"},
		{"make", `make -s && cat out.txt`, "make"},
		{"background child of the workspace", `(sleep 0.1; echo done > bg.txt) & wait`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.needs != "" {
				if _, err := exec.LookPath(tt.needs); err != nil {
					t.Skipf("no %s", tt.needs)
				}
			}
			if o, out := f.run(t, tt.script); o.ExitCode != 0 {
				t.Errorf("%q exits %d: %s", tt.script, o.ExitCode, out)
			}
		})
	}
}

func TestSandboxReadOnly(t *testing.T) {
	requireKernel(t)
	f := newFixture(t, Config{Mode: ModeReadOnly})
	if o, out := f.run(t, `echo x > new.txt`); o.ExitCode == 0 {
		t.Errorf("read-only: a write in the workspace succeeded: %s", out)
	}
	if o, out := f.run(t, `echo x > "$TMPDIR/f" && cat README`); o.ExitCode != 0 {
		t.Errorf("read-only: TMPDIR or a read failed: %s", out)
	}
}

// The user's widenings: --sandbox-writable, --sandbox-network; and --sandbox-deny-read
// narrows.
func TestSandboxOptions(t *testing.T) {
	requireKernel(t)
	extra := t.TempDir()
	secret := filepath.Join(t.TempDir(), "token")
	write(t, secret, "tok")
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite, Writable: []string{extra}, DenyRead: []string{secret}, Network: true})
	lb := newLoopback(t)
	if o, out := f.run(t, `echo x > "`+extra+`/f"`); o.ExitCode != 0 {
		t.Errorf("--sandbox-writable: %s", out)
	}
	if o, out := f.run(t, `cat "`+secret+`"`); o.ExitCode == 0 {
		t.Errorf("--sandbox-deny-read: read %s", out)
	}
	if o, out := f.run(t, `exec 3<>/dev/tcp/127.0.0.1/$TCP_PORT`, lb.env()...); o.ExitCode != 0 || !lb.reached(t, "tcp") {
		t.Errorf("--sandbox-network: %s", out)
	}
}

// .git/config stays what it was whatever the command does to it: the guard puts back
// what Landlock cannot keep in a writable workspace.
func TestSandboxGuard(t *testing.T) {
	requireKernel(t)
	tests := []struct{ name, script string }{
		{"direct write", `printf '[core]\n\tfsmonitor = touch PWNED\n' >> .git/config`},
		{"hard link", `ln .git/config cfg && printf '[core]\n\tfsmonitor = touch PWNED\n' >> cfg`},
		{"replace", `rm .git/config && printf '[core]\n\tfsmonitor = touch PWNED\n' > .git/config`},
		{"rename over", `printf '[core]\n\tfsmonitor = touch PWNED\n' > c && mv c .git/config`},
		{"rename .git", `mv .git real && mkdir -p .git/hooks && printf '[core]\n\tfsmonitor = touch PWNED\n' > .git/config`},
		{"new hook", `printf '#!/bin/sh\ntouch PWNED\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`},
		{"core.hooksPath", `git config core.hooksPath hooks`},
		{"plant .mcp.json", `echo '{"mcpServers":{}}' > .mcp.json`},
		{"plant .stoke", `mkdir -p .stoke && echo 'approval-mode: yolo' > .stoke/settings.yaml`},
		{"plant .claude", `mkdir -p .claude/agents && echo x > .claude/agents/evil.md`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
			before, err := os.ReadFile(filepath.Join(f.ws, ".git", "config"))
			if err != nil {
				t.Fatal(err)
			}
			hooks := names(t, filepath.Join(f.ws, ".git", "hooks"))
			o, out := f.run(t, tt.script)
			if len(o.Notes) == 0 {
				t.Errorf("no note in the result: %+v %s", o, out)
			}
			after, err := os.ReadFile(filepath.Join(f.ws, ".git", "config"))
			if err != nil || !bytes.Equal(before, after) {
				t.Errorf(".git/config changed: %q (%v)\nnotes: %v", after, err, o.Notes)
			}
			if got := names(t, filepath.Join(f.ws, ".git", "hooks")); got != hooks {
				t.Errorf(".git/hooks: %s, want %s", got, hooks)
			}
			for _, p := range []string{".mcp.json", ".stoke", ".claude"} {
				if _, err := os.Lstat(filepath.Join(f.ws, p)); err == nil {
					t.Errorf("%s was left", p)
				}
			}
			if fi, err := os.Stat(filepath.Join(f.ws, ".git", "config")); err == nil {
				if st := fi.Sys().(*syscall.Stat_t); st.Nlink != 1 {
					t.Errorf(".git/config has %d links", st.Nlink)
				}
			}
		})
	}
}

func names(t *testing.T, dir string) string {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return strings.Join(out, ",")
}

// What stoke's own tools change between commands, while no sandboxed process runs, is
// not put back.
func TestGuardAcceptsChangesBetweenCommands(t *testing.T) {
	requireKernel(t)
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
	f.run(t, `true`)
	write(t, filepath.Join(f.ws, ".mcp.json"), "{}")
	if o, _ := f.run(t, `true`); len(o.Notes) != 0 {
		t.Errorf("notes: %v", o.Notes)
	}
	if _, err := os.Stat(filepath.Join(f.ws, ".mcp.json")); err != nil {
		t.Errorf(".mcp.json written between commands was removed: %v", err)
	}
}

// A process a command leaves in the background outlives the command, not the run;
// one that changes protected configuration after its command is caught at Close.
func TestBackgroundEndsWithTheRun(t *testing.T) {
	requireKernel(t)
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
	o, out := f.run(t, `sleep 300 >/dev/null 2>&1 & echo $! > bg.pid; (sleep 0.2; echo '{}' > .mcp.json; sleep 300) >/dev/null 2>&1 & echo $! > bg2.pid`)
	if o.ExitCode != 0 {
		t.Fatalf("%+v %s", o, out)
	}
	pids := []int{readPid(t, filepath.Join(f.ws, "bg.pid")), readPid(t, filepath.Join(f.ws, "bg2.pid"))}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) != nil {
			t.Fatalf("background process %d is gone before the run ends", pid)
		}
	}
	waitFor(t, exists(filepath.Join(f.ws, ".mcp.json")))
	notes, err := f.sb.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if syscall.Kill(pid, 0) == nil {
			t.Errorf("background process %d outlived Close", pid)
		}
	}
	if exists(filepath.Join(f.ws, ".mcp.json"))() || len(notes) == 0 {
		t.Errorf("the .mcp.json a background process planted is there after Close (notes %v)", notes)
	}
	if _, err := os.Stat(f.sb.TempDir()); err == nil {
		t.Errorf("the private TMPDIR %s is left", f.sb.TempDir())
	}
}

// waitFor polls cond with a generous bound (a bound on a wait, not a timed assertion).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func readPid(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// A timeout ends the command and what it started, in another process group included.
func TestTimeoutKillsTheTree(t *testing.T) {
	requireKernel(t)
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
	var out bytes.Buffer
	o, err := f.sb.Run(t.Context(), Request{Root: f.ws, Args: []string{bash(t), "-c", `setsid sleep 300 & echo $! > bg.pid; sleep 300`},
		Env: f.env(), Output: &out, Timeout: 300 * time.Millisecond, WaitDelay: 2 * time.Second})
	if err != nil || !o.TimedOut {
		t.Fatalf("%+v %v %s", o, err, out.String())
	}
	pid := readPid(t, filepath.Join(f.ws, "bg.pid"))
	waitFor(t, func() bool { return syscall.Kill(pid, 0) != nil })
}

// Required and unenforceable: every command is refused.
func TestRequiredRefusesWhenUnenforced(t *testing.T) {
	sb := &Sandbox{cfg: Config{Mode: ModeWorkspaceWrite, Required: true}, status: Status{Mode: ModeWorkspaceWrite, Reason: "no Landlock"}, runs: &runs{live: map[*supervisor]struct{}{}}, guard: newGuard()}
	if err := sb.Check(); err == nil || !strings.Contains(err.Error(), "no Landlock") {
		t.Errorf("Check = %v", err)
	}
	sb.cfg.Required = false
	if err := sb.Check(); err != nil {
		t.Errorf("not required: Check = %v", err)
	}
}

// A command run as root loses the capabilities that reach past the sandbox: here
// CAP_SYS_PTRACE, with which root reads stoke's (non-dumpable) environment from /proc.
func TestRootLosesCapabilities(t *testing.T) {
	requireKernel(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: an ordinary user has no capabilities to lose")
	}
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
	const script = `grep -E '^Cap(Eff|Bnd)' /proc/self/status`
	has := func(out string) bool { // CAP_SYS_PTRACE is bit 19
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			_, hex, _ := strings.Cut(line, "\t")
			v, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil || v&(1<<19) != 0 {
				return true
			}
		}
		return false
	}
	if code, out := f.unconfined(t, script); code != 0 || !has(out) {
		t.Fatalf("control: unconfined root lacks CAP_SYS_PTRACE: %s", out)
	}
	if o, out := f.run(t, script); o.ExitCode != 0 || has(out) {
		t.Errorf("sandboxed root keeps CAP_SYS_PTRACE: %s", out)
	}
}

// The calls of one reply run at once: what one command changes is put back even when
// another command's checks are the first to see it.
func TestGuardConcurrentCommands(t *testing.T) {
	requireKernel(t)
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
	fifo := filepath.Join(f.ws, "go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no mkfifo:", err)
	}
	cfg := filepath.Join(f.ws, ".git", "config")
	before, _ := os.ReadFile(cfg)
	done := make(chan Outcome, 1)
	go func() {
		var out bytes.Buffer
		o, err := f.sb.Run(t.Context(), Request{Root: f.ws, Args: []string{bash(t), "-c", `printf '[core]\n\tfsmonitor = x\n' >> .git/config; cat go`},
			Env: f.env(), Output: &out, Timeout: time.Minute, WaitDelay: 2 * time.Second})
		if err != nil {
			t.Error(err)
		}
		done <- o
	}()
	waitFor(t, func() bool { b, _ := os.ReadFile(cfg); return !bytes.Equal(b, before) })
	o, out := f.run(t, `echo go > go`)
	if o.ExitCode != 0 {
		t.Fatalf("%+v %s", o, out)
	}
	<-done
	if after, _ := os.ReadFile(cfg); !bytes.Equal(after, before) {
		t.Errorf(".git/config = %q: a change made while another command started was taken as the reference", after)
	}
}

// An isolated agent's worktree lives in STOKE_HOME: its commands write it, and still
// read nothing else of STOKE_HOME.
func TestWorktreeInStokeHome(t *testing.T) {
	requireKernel(t)
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
	wt := filepath.Join(f.stokeHome, "projects", "p", "s", "worktrees", "task-1")
	mkdir(t, wt)
	var out bytes.Buffer
	o, err := f.sb.Run(t.Context(), Request{Root: wt, Args: []string{bash(t), "-c", `echo x > made && cat made && cat "$STOKE_HOME/settings.yaml"`},
		Env: f.env(), Output: &out, Timeout: time.Minute, WaitDelay: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wt, "made")); err != nil || !strings.HasPrefix(out.String(), "x\n") {
		t.Errorf("the worktree is not writable: %v %s", err, out.String())
	}
	if o.ExitCode == 0 || strings.Contains(out.String(), "sk-secret") {
		t.Errorf("STOKE_HOME/settings.yaml was read from the worktree: %s", out.String())
	}
}

// A session rooted elsewhere (an ACP session in another project) writes its own
// directory, not the launch's; it shares the run's TMPDIR and Close.
func TestRooted(t *testing.T) {
	requireKernel(t)
	f := newFixture(t, Config{Mode: ModeWorkspaceWrite})
	other := filepath.Join(f.outside, "other-project")
	mkdir(t, other)
	sb, ok := f.sb.Rooted(ModeWorkspaceWrite, other)
	if !ok || sb.Mode() != ModeWorkspaceWrite {
		t.Fatalf("Rooted(workspace-write) = %s, %v", sb.Mode(), ok)
	}
	if ro, _ := f.sb.Rooted(ModeReadOnly, other); ro.Mode() != ModeReadOnly || f.sb.Mode() != ModeWorkspaceWrite {
		t.Errorf("a project's read-only: rooted %s, the run's %s; want read-only, workspace-write", ro.Mode(), f.sb.Mode())
	}
	if wide, _ := f.sb.Rooted(ModeOff, other); wide.Mode() != ModeWorkspaceWrite {
		t.Errorf("a project's off widened the session to %s", wide.Mode())
	}
	if sb.TempDir() != f.sb.TempDir() {
		t.Errorf("TMPDIR %s, want the run's %s", sb.TempDir(), f.sb.TempDir())
	}
	var out bytes.Buffer
	script := `echo x > made; echo y > "$LAUNCH/planted"; cat made`
	o, err := sb.Run(t.Context(), Request{Root: other, Args: []string{bash(t), "-c", script},
		Env: f.env("LAUNCH=" + f.ws), Output: &out, Timeout: time.Minute, WaitDelay: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if o.ExitCode != 0 || !strings.HasSuffix(out.String(), "x\n") {
		t.Errorf("the session's own directory is not writable: %+v %s", o, out.String())
	}
	if exists(filepath.Join(f.ws, "planted"))() {
		t.Errorf("a session rooted in %s wrote the launch's directory %s", other, f.ws)
	}
	if _, err := f.sb.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sb.Check(); !errors.Is(err, ErrClosed) {
		t.Errorf("after the run's Close, the rooted sandbox's Check = %v, want ErrClosed", err)
	}
}
