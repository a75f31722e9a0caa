package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gateScenario: the parent runs a foreground agent whose shell command waits for the file
// "gate" in the working directory, then answers PROGRESS-DONE.
const gateScenario = `name: progress-gate
model: scripted-progress
rules:
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - name: task
          input: {description: "Wait for the gate", prompt: "Wait for the gate.", subagent_type: general-purpose}
  - agent: parent
    reply: {text: "PROGRESS-DONE"}
  - agent: general-purpose
    when: {step: 1}
    reply:
      tool_calls:
        - name: shell
          input: {command: "while [ ! -e gate ]; do sleep 0.05; done; echo open"}
  - agent: general-purpose
    reply: {text: "The gate is open."}
`

// progressRun prepares a working directory with the scenario and returns it and the
// environment stoke runs with.
func progressRun(t *testing.T) (dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "progress.yaml"), []byte(gateScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, []string{
		"PATH=" + h.binDir + string(os.PathListSeparator) + "/usr/bin:/bin",
		"HOME=" + filepath.Join(dir, "home"), "STOKE_HOME=" + filepath.Join(t.TempDir(), ".stoke"), "GOCOVERDIR=" + h.coverDir,
		"TERM=xterm-256color",
	}
}

// TestProgressPlain: --progress plain writes one line per agent start and finish on
// stderr, and stdout holds only the answer.
func TestProgressPlain(t *testing.T) {
	dir, env := progressRun(t)
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(h.binDir, "stoke"+exeSuffix()), "-p", "go", "--scenario", "progress.yaml", "--approval-mode", "yolo", "--progress", "plain")
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("stoke: %v\n%s", err, stderr.String())
	}
	if stdout.String() != "PROGRESS-DONE\n" {
		t.Errorf("stdout %q, want only the answer", stdout.String())
	}
	for _, want := range []string{
		"stoke: agent started: general-purpose ", "(turn 1, fresh, foreground): Wait for the gate\n",
		"stoke: agent completed: general-purpose ",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
}

// TestProgressInTerminal runs stoke in a real terminal (tmux): while an agent runs, the
// pane shows the live status line; when the run ends, the line is gone and the answer
// is there.
func TestProgressInTerminal(t *testing.T) {
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed: `make test` installs it (apt-get install tmux)")
	}
	dir, env := progressRun(t)
	socket := filepath.Join(dir, "tmux.sock")
	run := func(args ...string) (string, error) {
		c := exec.Command(tmux, append([]string{"-S", socket, "-f", "/dev/null"}, args...)...)
		c.Env = env
		out, err := c.CombinedOutput()
		return string(out), err
	}
	stoke := filepath.Join(h.binDir, "stoke"+exeSuffix())
	script := "cd '" + dir + "' && '" + stoke + "' -p go --scenario progress.yaml --approval-mode yolo; echo EXIT=$?; exec sleep 600"
	if out, err := run("new-session", "-d", "-s", "stoke", "-x", "160", "-y", "20", script); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = run("kill-server") })
	// The pane is another process's screen: poll it, with a deadline for a loaded machine.
	screen := func(until func(string) bool) string {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			out, err := run("capture-pane", "-p", "-t", "stoke")
			if err != nil {
				t.Fatalf("tmux capture-pane: %v\n%s", err, out)
			}
			if until(out) || time.Now().After(deadline) {
				return out
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	live := screen(func(s string) bool { return strings.Contains(s, "stoke: agents 1 running") })
	if !strings.Contains(live, "stoke: agents 1 running, 0 queued, 0 done · turn 1 · ") {
		t.Fatalf("while the agent runs the pane shows:\n%s", live)
	}
	if err := os.WriteFile(filepath.Join(dir, "gate"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	end := screen(func(s string) bool { return strings.Contains(s, "EXIT=") })
	if !strings.Contains(end, "PROGRESS-DONE") || !strings.Contains(end, "EXIT=0") {
		t.Fatalf("after the run the pane shows:\n%s", end)
	}
	if strings.Contains(end, "stoke: agents") {
		t.Errorf("the status line was not erased:\n%s", end)
	}
}
