//go:build linux

package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"golang.org/x/sys/unix"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/store"
)

// The parent launches two background agents: a holder, whose model call streams a
// little and then holds until it is cancelled, and a filler, which waits for the holder
// to be under way and then fills STOKE_HOME (a 1 MiB tmpfs) from its shell and
// completes. The filler's end cannot be stored; only stopping both agents ends the run.
const noSpaceScenario = `
name: nospace
rules:
  - agent: parent
    when: {last_user_contains: "Fill the home"}
    reply:
      tool_calls:
        - name: task
          input: {description: holder, prompt: "Hold on", run_in_background: true}
        - name: task
          input: {description: filler, prompt: "Fill the home", run_in_background: true}
  - agent: parent
    reply: {text: 'parent saw {{ lastUser }}'}
  - agent: general-purpose
    when: {last_user_contains: "Hold on"}
    reply: {partial: "holding", signal: holding}
  - agent: general-purpose
    when: {step: 1}
    reply:
      wait_for: holding
      tool_calls:
        - name: shell
          input: {command: 'dd if=/dev/zero of="$STOKE_HOME/fill" bs=4k 2>/dev/null; echo filled'}
  - agent: general-purpose
    reply: {text: "filled it"}
`

// A write of session state that fails fails the run (issue 26): with STOKE_HOME on a
// tmpfs that fills up mid-run, the run stops its agents, ends with exit 1 and an error
// result naming the file and ENOSPC, and no success result. A resume in the same home
// made read-only fails the same way, naming its file and EROFS. Once the home is
// writable again, the next resume repairs every row the failed run left running or
// queued on disk (it says so, naming each) and leaves none active. Skipped where a
// tmpfs cannot be mounted (not root, no CAP_SYS_ADMIN).
func TestFailedWritesFailTheRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home := mountTmpfs(t, filepath.Join(dir, "home"), "size=1m")
	cwd := filepath.Join(dir, "work")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join(dir, "nospace.yaml")
	if err := os.WriteFile(scenario, []byte(noSpaceScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	const sid = "5a1e0000-0000-4000-8000-00000000f111"
	run := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		// --sandbox off: the filler's shell stands for whatever else fills the disk; the
		// sandbox would refuse its write in STOKE_HOME (and the holder would hold forever).
		cmd := exec.Command(filepath.Join(h.binDir, "stoke"), append(args, "--scenario", scenario, "--output-format", "stream-json", "--approval-mode", "yolo", "--sandbox", "off")...)
		cmd.Dir = cwd
		cmd.Env = append(slices.Clip(os.Environ()), "GOCOVERDIR="+h.coverDir, "STOKE_HOME="+home)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
	}
	sess := store.New(home, cwd, sid)

	stdout, stderr, code := run("-p", "Fill the home", "--session-id", sid)
	checkNotStored(t, "full home", stdout, stderr, code, sess.String(), "no space left on device (ENOSPC)")
	if !strings.Contains(stdout, `"errors":["session state not stored: cannot write session file `) {
		t.Errorf("the full home's error result does not say the session state was not stored:\n%s", stdout)
	}
	active := activeRows(t, sess)
	if len(active) == 0 {
		t.Fatalf("the failed run left no row active on disk, so the repair is not tested: %v", active)
	}
	if err := os.Remove(filepath.Join(home, "fill")); err != nil {
		t.Fatal(err)
	}

	// A read-only home: the resume cannot take the session's lock.
	if err := unix.Mount("", home, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	stdout, stderr, code = run("-p", "Hello again", "--resume", sid)
	checkNotStored(t, "read-only home", stdout, stderr, code, filepath.Join(sess.String(), "session.lock"), "read-only file system (EROFS)")
	if err := unix.Mount("", home, "", unix.MS_REMOUNT, ""); err != nil {
		t.Fatalf("remount read-write: %v", err)
	}

	// The next load repairs the rows and says so.
	stdout, stderr, code = run("-p", "Hello again", "--resume", sid)
	if code != 0 || !strings.Contains(stdout, `"subtype":"success"`) {
		t.Fatalf("resume after the failure: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, id := range active {
		if !strings.Contains(stderr, "repaired task "+id) {
			t.Errorf("the resume did not say it repaired task %s:\n%s", id, stderr)
		}
	}
	if left := activeRows(t, sess); len(left) > 0 {
		t.Errorf("rows still active on disk after the next load: %v", left)
	}
}

// A home that is read-only, or full, from the start: exit 1 and an error result naming
// the file that could not be written, with its errno (on a full home, the lock file is
// created but its pid cannot be written).
func TestUnwritableHomeAtStart(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, opts, errno string
		fill              bool
		file              string // what could not be written, in the session directory
	}{
		{"read-only", "size=1m,ro", "read-only file system (EROFS)", false, ""},        // the directory itself
		{"full", "size=64k", "no space left on device (ENOSPC)", true, "session.lock"}, // its pid
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			home := mountTmpfs(t, filepath.Join(t.TempDir(), "home"), c.opts) // outside the working directory, as stoke requires
			if c.fill {
				fillUp(t, filepath.Join(home, "fill"))
			}
			scenario := filepath.Join(dir, "nospace.yaml")
			if err := os.WriteFile(scenario, []byte(noSpaceScenario), 0o600); err != nil {
				t.Fatal(err)
			}
			const sid = "5a1e0000-0000-4000-8000-00000000f222"
			cmd := exec.Command(filepath.Join(h.binDir, "stoke"), "-p", "Fill the home", "--session-id", sid, "--scenario", scenario, "--output-format", "stream-json")
			cmd.Dir = dir
			cmd.Env = append(slices.Clip(os.Environ()), "GOCOVERDIR="+h.coverDir, "STOKE_HOME="+home)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			_ = cmd.Run()
			checkNotStored(t, c.name, out.String(), errOut.String(), cmd.ProcessState.ExitCode(), filepath.Join(store.New(home, dir, sid).String(), c.file)+": ", c.errno)
		})
	}
}

// checkNotStored checks a run that could not store its session: exit 1, one error
// result and no success, its error naming a file under prefix and the errno, and stderr
// saying the same.
func checkNotStored(t *testing.T, what, stdout, stderr string, code int, prefix, errno string) {
	t.Helper()
	if code != 1 {
		t.Errorf("%s: exit %d, want 1\nstderr:\n%s", what, code, stderr)
	}
	var results []gjson.Result
	for line := range strings.Lines(stdout) {
		if ev := gjson.Parse(line); ev.Get("type").String() == "result" {
			results = append(results, ev)
		}
	}
	if len(results) != 1 || results[0].Get("subtype").String() != "error_during_execution" || !results[0].Get("is_error").Bool() {
		t.Fatalf("%s: results %v, want one error result\nstdout:\n%s\nstderr:\n%s", what, results, stdout, stderr)
	}
	msg := results[0].Get("errors.0").String()
	if !strings.Contains(msg, "cannot write session file "+prefix) || !strings.HasSuffix(msg, errno) {
		t.Errorf("%s: error result %q, want it to name a file under %s and end with %q", what, msg, prefix, errno)
	}
	if !strings.Contains(stderr, msg) {
		t.Errorf("%s: stderr does not say %q:\n%s", what, msg, stderr)
	}
}

// activeRows returns the ids of the session's rows stored running or queued.
func activeRows(t *testing.T, sess *store.Session) []string {
	t.Helper()
	scs, warnings := agents.ReadSidecars(sess)
	if len(warnings) > 0 {
		t.Errorf("sidecars: %v", warnings)
	}
	var ids []string
	for _, sc := range scs {
		if sc.Status.Active() {
			ids = append(ids, string(sc.TaskID))
		}
	}
	return ids
}

// mountTmpfs mounts a tmpfs with opts at dir (created), unmounted when t ends, or skips
// t where it cannot.
func mountTmpfs(t *testing.T, dir, opts string) string {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		t.Skipf("cannot mount a tmpfs for STOKE_HOME (needs root or CAP_SYS_ADMIN): %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillUp writes zeros to path until its file system is full.
func fillUp(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// The run's success is reported only once its state is stored: when the last write of
// session.json fails (the parent's shell put a directory in its place), the run ends
// with exit 1 and an error result naming session.json, not with success. Needs no mount.
func TestUnstoredEndIsNoSuccess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	home, cwd := filepath.Join(dir, "home"), filepath.Join(dir, "work")
	if err := os.Mkdir(cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	const sid = "5a1e0000-0000-4000-8000-00000000f333"
	info := filepath.Join(store.New(home, cwd, sid).String(), "session.json")
	scenario := filepath.Join(dir, "block.yaml")
	if err := os.WriteFile(scenario, []byte(`
name: block
rules:
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - name: shell
          input: {command: 'rm -f `+info+` && mkdir -p `+info+`/blocked && echo blocked'}
  - agent: parent
    reply: {text: "done"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	// --sandbox off: the parent's shell stands for another process breaking session.json;
	// the sandbox would refuse its writes in STOKE_HOME.
	cmd := exec.Command(filepath.Join(h.binDir, "stoke"), "-p", "Block it", "--session-id", sid, "--scenario", scenario, "--output-format", "stream-json", "--approval-mode", "yolo", "--sandbox", "off")
	cmd.Dir = cwd
	cmd.Env = append(slices.Clip(os.Environ()), "GOCOVERDIR="+h.coverDir, "STOKE_HOME="+home)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	_ = cmd.Run()
	if !strings.Contains(out.String(), `"type":"tool_result"`) || !strings.Contains(out.String(), "blocked") {
		t.Fatalf("the shell did not run:\n%s\n%s", out.String(), errOut.String())
	}
	checkNotStored(t, "session.json blocked", out.String(), errOut.String(), cmd.ProcessState.ExitCode(), info, ")")
}
