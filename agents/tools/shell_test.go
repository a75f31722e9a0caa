package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stoke-cli/stoke/agents/sandbox"
)

func requireBash(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
}

// runShell runs the shell tool directly (yolo), with a short wait for stray output holders.
func runShell(ctx context.Context, w *Workspace, args obj) Result {
	in, _ := json.Marshal(args)
	return shellTool{w: w, waitDelay: 200 * time.Millisecond}.Run(ctx, Call{Name: NameShell, Input: in})
}

// newSandbox returns a workspace-write sandbox over dir, closed at the test's end.
func newSandbox(t *testing.T, cfg sandbox.Config, dir string) *sandbox.Sandbox {
	t.Helper()
	if cfg.Mode == "" {
		cfg.Mode = sandbox.ModeWorkspaceWrite
	}
	cfg.TempRoot = t.TempDir()
	sb, err := sandbox.New(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := sb.Close(); err != nil {
			t.Error(err)
		}
	})
	return sb
}

// bothWays runs test on a yolo workspace holding files twice: with the commands run by
// stoke itself (--sandbox off) and by a sandbox helper. The shell tool's results are
// the same either way.
func bothWays(t *testing.T, files map[string]string, test func(t *testing.T, w *Workspace)) {
	t.Helper()
	requireBash(t)
	for _, sandboxed := range []bool{false, true} {
		t.Run(fmt.Sprintf("sandboxed=%v", sandboxed), func(t *testing.T) {
			t.Parallel()
			w := newWorkspace(t, ModeYolo, files)
			if sandboxed {
				w = w.With(WithSandbox(newSandbox(t, sandbox.Config{}, w.Root())))
			}
			test(t, w)
		})
	}
}

func TestShell(t *testing.T) {
	t.Parallel()
	bothWays(t, map[string]string{"f.txt": "content\n"}, testShell)
}

func testShell(t *testing.T, w *Workspace) {
	tests := []struct {
		name    string
		command string
		want    string
		wantErr bool
	}{
		{"ok", "echo hi", "hi\n[exit code 0]", false},
		{"runs in the root", "pwd; cat f.txt", w.Root() + "\ncontent\n[exit code 0]", false},
		{"stderr is combined in order", "echo out; echo err >&2; echo out2", "out\nerr\nout2\n[exit code 0]", false},
		{"exit code", "echo failing; exit 3", "failing\n[exit code 3]", true},
		{"no output", "true", "(no output)\n[exit code 0]", false},
		{"no final newline", "printf abc", "abc\n[exit code 0]", false},
		{"stdin is empty", "cat; echo done", "done\n[exit code 0]", false},
		{"bash features", "a=(x y); echo ${#a[@]} $((6*7))", "2 42\n[exit code 0]", false},
		{"killed by a signal", "kill -9 $$", "(no output)\n[exit: signal: killed]", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := call(t, w, NameShell, obj{"command": tt.command})
			if res.Content != tt.want || res.IsError != tt.wantErr {
				t.Errorf("shell(%q) = %q (error %v), want %q (error %v)", tt.command, res.Content, res.IsError, tt.want, tt.wantErr)
			}
		})
	}
}

// A timeout kills the shell's whole process group, a background child included: if the
// child lived, it would hold the output pipe open and the call would last its 30 seconds.
func TestShellTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	bothWays(t, nil, testShellTimeout)
}

func testShellTimeout(t *testing.T, w *Workspace) {
	start := time.Now()
	res := shellTool{w: w, waitDelay: time.Minute}.Run(t.Context(), Call{Name: NameShell,
		Input: []byte(`{"command":"sleep 30 & echo child $!; wait","timeout_ms":300}`)})
	elapsed := time.Since(start)
	if !res.IsError || !strings.Contains(res.Content, "[timed out after 300ms; the command and its processes were killed]") {
		t.Fatalf("shell = %+v", res)
	}
	if elapsed > 20*time.Second {
		t.Errorf("the call took %s: the sleep was not killed", elapsed)
	}
	pid := childPID(t, res.Content)
	if st := procState(pid); st == 'S' || st == 'T' {
		t.Errorf("the child sleep %d is still alive (state %c)", pid, st)
	}
}

func childPID(t *testing.T, out string) int {
	t.Helper()
	var pid int
	if _, err := fmt.Sscanf(out, "child %d", &pid); err != nil {
		t.Fatalf("no child pid in %q: %v", out, err)
	}
	return pid
}

// procState returns the state letter of a process in /proc (0 when it is gone or there is
// no /proc): S sleeping, R running, Z zombie, ...
func procState(pid int) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0
	}
	return s[i+2]
}

// Cancelling the call's context kills the group too; the command signals through a FIFO
// that it is running, so the test cancels at a known point without sleeping.
func TestShellCancel(t *testing.T) {
	t.Parallel()
	bothWays(t, nil, testShellCancel)
}

func testShellCancel(t *testing.T, w *Workspace) {
	fifo := filepath.Join(w.Root(), "started")
	if err := mkfifo(fifo); err != nil {
		t.Skip("no mkfifo:", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan Result, 1)
	go func() {
		done <- runShell(ctx, w, obj{"command": "sleep 30 & echo child $!; echo go > started; wait"})
	}()
	b, err := os.ReadFile(fifo) // returns once the command has written and closed it
	if err != nil || string(b) != "go\n" {
		t.Fatalf("read fifo: %q %v", b, err)
	}
	cancel()
	res := <-done
	if !res.IsError || !strings.Contains(res.Content, "[cancelled after") || !strings.Contains(res.Content, "the command and its processes were killed]") {
		t.Fatalf("shell = %+v", res)
	}
	if st := procState(childPID(t, res.Content)); st == 'S' || st == 'T' {
		t.Errorf("the child sleep is still alive (state %c)", st)
	}
	// Already cancelled: nothing starts.
	if res := runShell(ctx, w, obj{"command": "touch ran"}); !res.IsError || fileExists(w, "ran") {
		t.Errorf("shell after cancel = %+v", res)
	}
}

// A background process left holding the output is killed once the shell is done.
func TestShellStrayBackground(t *testing.T) {
	t.Parallel()
	bothWays(t, nil, testShellStray)
}

func testShellStray(t *testing.T, w *Workspace) {
	res := runShell(t.Context(), w, obj{"command": "sleep 30 & echo child $!"})
	if res.IsError || !strings.Contains(res.Content, "[background processes still holding the output were killed]\n[exit code 0]") {
		t.Fatalf("shell = %+v", res)
	}
	if st := procState(childPID(t, res.Content)); st == 'S' || st == 'T' {
		t.Errorf("the child sleep is still alive (state %c)", st)
	}
}

func TestShellOutputCap(t *testing.T) {
	t.Parallel()
	requireBash(t)
	w := newWorkspace(t, ModeYolo, nil, WithLimits(Limits{OutputChars: 1000}))
	res := runShell(t.Context(), w, obj{"command": `echo START; for i in $(seq 1 5000); do echo "line $i é"; done; echo END; exit 1`})
	if !res.IsError || !strings.HasPrefix(res.Content, "START\nline 1 é\n") || !strings.HasSuffix(res.Content, "line 5000 é\nEND\n[exit code 1]") {
		t.Fatalf("shell = %q", res.Content)
	}
	if !strings.Contains(res.Content, "bytes of output cut …]") || len(res.Content) > 1100 {
		t.Errorf("cut output is %d bytes:\n%s", len(res.Content), res.Content)
	}
	if !json.Valid([]byte(strconv.Quote(res.Content))) || strings.ContainsRune(res.Content, '\uFFFD') {
		t.Errorf("the cut split a rune: %q", res.Content)
	}
}

func TestHeadTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
	}{
		{"fits", 10, []string{"abc", "def"}, "abcdef"},
		{"exactly", 6, []string{"abc", "def"}, "abcdef"},
		{"middle cut", 6, []string{"abc", "XYZ", "def"}, "abc\n[… about 3 bytes of output cut …]\ndef"},
		{"many writes", 4, []string{"a", "b", "c", "d", "e", "f", "g", "h"}, "ab\n[… about 4 bytes of output cut …]\ngh"},
		{"runes kept whole", 4, []string{"aéé", "xyz", "éé"}, "a\n[… about 8 bytes of output cut …]\né"},
		{"tail starts mid-rune", 6, []string{"aéé", "xyz", "éé"}, "aé\n[… about 6 bytes of output cut …]\né"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := &headTail{max: tt.max}
			for _, s := range tt.writes {
				if n, err := h.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := h.String(); got != tt.want {
				t.Errorf("String = %q, want %q", got, tt.want)
			}
		})
	}
}
