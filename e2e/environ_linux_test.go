//go:build linux

package e2e

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A child of stoke cannot read stoke's own environment from /proc (where the API key
// stoke keeps from its children stays): stoke makes itself non-dumpable. Run as an
// ordinary user, as a CI runner is; the test needs root to become one (nobody).
func TestChildrenCannotReadStokesEnviron(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run stoke as the user nobody")
	}
	dir, err := os.MkdirTemp("", "stoke-environ-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	work, cover, state := filepath.Join(dir, "work"), filepath.Join(dir, "cover"), filepath.Join(dir, "state")
	for _, d := range []string{work, cover, state} {
		if err := os.Mkdir(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{dir, work, cover, state} { // past the umask: nobody reads and writes
		if err := os.Chmod(d, map[bool]os.FileMode{true: 0o755, false: 0o777}[d == dir]); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "stoke")
	copyFile(t, filepath.Join(h.binDir, "stoke"), bin, 0o755)
	scenario := filepath.Join(dir, "s.yaml")
	if err := os.WriteFile(scenario, []byte(environScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	// --sandbox off: the shell is then stoke's own child ($PPID is stoke), which is what
	// this test is about; sandboxed, $PPID is the helper, and Landlock refuses a read of
	// any process's environ outside the sandbox (sandbox_kill.txtar, trust_secrets.txtar).
	cmd := exec.Command(bin, "-p", "go", "--scenario", scenario, "--approval-mode", "yolo", "--output-format", "stream-json", "--sandbox", "off")
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "STOKE_HOME=" + state,
		"GOCOVERDIR=" + cover, "MARKER_VAR=visible-marker"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("stoke as nobody: %v\n%s", err, out)
	}
	s := string(out)
	// the variable was there to find: the child's own environment has it
	if !strings.Contains(s, "child: visible-marker") {
		t.Fatalf("the shell tool did not run as expected:\n%s", s)
	}
	if strings.Contains(s, "parent: visible-marker") || !strings.Contains(s, "parent: unreadable") {
		t.Errorf("a child read stoke's /proc/PID/environ:\n%s", s)
	}
}

const environScenario = `
rules:
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - name: shell
          input: {command: "echo child: $MARKER_VAR; { tr '\\0' '\\n' < /proc/$PPID/environ 2>/dev/null || echo MARKER_VAR=unreadable; } | sed -n 's/^MARKER_VAR=/parent: /p'"}
  - agent: parent
    reply: {text: checked}
`

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, mode)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
