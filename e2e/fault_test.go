package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/store"
)

// A run with enough steps (and small model delays) that a kill can land anywhere: in a
// model call, between tool rounds, while a subagent's turn completes, while notifications
// are written.
const faultScenario = `
name: fault
rules:
  - agent: parent
    when: {last_user_contains: "<turn>2</turn>"}
    reply: {delay: 3ms, text: 'done {{ lastMatch "<result>(NONCE-[A-Z0-9]+)" }}'}
  - agent: parent
    when: {last_user_contains: "<turn>1</turn>"}
    reply:
      delay: 3ms
      tool_calls:
        - name: send_message
          input: {task_id: '{{ lastMatch "<task-id>([^<]+)</task-id>" }}', message: "What was the nonce?"}
  - agent: parent
    when: {last_user_matches: "continued on|revived from|running in the background"}
    reply: {delay: 3ms, text: "waiting"}
  - agent: parent
    when: {last_user_contains: "Keep NONCE"}
    reply:
      delay: 3ms
      tool_calls:
        - name: task
          input: {description: one, prompt: 'Remember {{ match "NONCE-[A-Z0-9]+" }}', run_in_background: true}
        - name: task
          input: {description: two, prompt: 'Remember {{ match "NONCE-[A-Z0-9]+" }} too', run_in_background: true}
  - agent: parent
    reply: {text: "resumed fine"}
  - agent: general-purpose
    when: {last_user_contains: "What was the nonce"}
    reply: {delay: 4ms, text: '{{ match "NONCE-[A-Z0-9]+" }}'}
  - agent: general-purpose
    reply: {delay: 4ms, text: "Stored."}
`

// TestKillAndResume kills a run with SIGKILL at random points and resumes each session:
// every resume succeeds, and every turn whose task_notification was written before the kill
// is on disk (sidecar and transcript). The killed run held the session's lock (its pid is
// in the lock file), and the resume, which does not wait for a lock, is never blocked by it.
func TestKillAndResume(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scenario := filepath.Join(dir, "fault.yaml")
	if err := os.WriteFile(scenario, []byte(faultScenario), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(h.binDir, "stoke"+exeSuffix())
	env := slices.Clip(append(os.Environ(), "GOCOVERDIR="+h.coverDir)) // each run appends its own STOKE_HOME

	// One whole run tells how long a run lasts, so kills spread over all of it.
	full := time.Now()
	homes := t.TempDir() // outside the working directory, as stoke requires
	out, err := runStoke(bin, env, dir, filepath.Join(homes, "home-full"), "-p", "Keep NONCE-F00D1 safe", "--scenario", scenario, "--output-format", "stream-json")
	if err != nil {
		t.Fatalf("full run: %v\n%s", err, out)
	}
	span := time.Since(full)

	const runs = 20
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var wg sync.WaitGroup
	var total atomic.Int64
	slots := make(chan struct{}, 2) // few at a time, so each run's timing stays close to span
	for i := range runs {
		delay := time.Duration(rng.Int64N(int64(span)))
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			home := filepath.Join(homes, fmt.Sprintf("home-%02d", i))
			sid := fmt.Sprintf("0fa17000-0000-4000-8000-%012d", i)
			nonce := fmt.Sprintf("NONCE-%04X", i+1)
			events, pid, err := killAfter(bin, env, dir, home, delay, "-p", "Keep "+nonce+" safe", "--scenario", scenario,
				"--output-format", "stream-json", "--session-id", sid)
			if err != nil {
				t.Errorf("run %d: %v", i, err)
				return
			}
			if len(events) == 0 {
				return // killed before the session existed: nothing to resume
			}
			// The first event comes after the lock is taken: the killed run held it.
			lock, err := os.ReadFile(filepath.Join(store.New(home, dir, sid).String(), "session.lock"))
			if err != nil || strings.TrimSpace(string(lock)) != strconv.Itoa(pid) {
				t.Errorf("run %d: the session's lock file holds %q (%v), want the killed run's pid %d", i, lock, err, pid)
			}
			out, err := runStoke(bin, env, dir, home, "-p", "status?", "--scenario", scenario, "--resume", sid, "--output-format", "stream-json")
			if err != nil {
				var files []string
				_ = filepath.WalkDir(home, func(p string, _ os.DirEntry, _ error) error { files = append(files, p); return nil })
				t.Errorf("run %d (killed after %v, %d events): resume failed: %v\n%s\nfiles: %v\nevents: %v", i, delay, len(events), err, out, files, events)
				return
			}
			n := checkNotifiedTurnsKept(t, i, home, dir, sid, events)
			total.Add(int64(n))
			t.Logf("run %d: killed after %v, %d events, %d notified turns checked on disk", i, delay, len(events), n)
		})
	}
	wg.Wait()
	if total.Load() == 0 {
		t.Errorf("no run was killed after a notification: the test checked nothing")
	}
}

// killAfter starts stoke, waits for its first event line (the session exists), then kills
// it with SIGKILL after delay. It returns the complete event lines written before the kill,
// and the process's pid.
func killAfter(bin string, env []string, cwd, home string, delay time.Duration, args ...string) ([]string, int, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = cwd, append(env, "STOKE_HOME="+home)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	var lines []string
	var mu sync.Mutex
	first := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		once := sync.OnceFunc(func() { close(first) })
		defer once()
		for sc.Scan() {
			mu.Lock()
			lines = append(lines, sc.Text())
			mu.Unlock()
			once()
		}
	}()
	<-first
	timer := time.NewTimer(delay)
	select {
	case <-timer.C:
		_ = cmd.Process.Signal(syscall.SIGKILL)
	case <-readDone:
		timer.Stop()
	}
	<-readDone
	_ = cmd.Wait()
	mu.Lock()
	defer mu.Unlock()
	return lines, cmd.Process.Pid, nil
}

func runStoke(bin string, env []string, cwd, home string, args ...string) ([]byte, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = cwd, append(env, "STOKE_HOME="+home)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// checkNotifiedTurnsKept: for every task_notification the killed run wrote, the task's
// sidecar has reached that turn and its transcript holds that turn's end and summary.
func checkNotifiedTurnsKept(t *testing.T, run int, home, cwd, sid string, events []string) (checked int) {
	t.Helper()
	sess := store.New(home, cwd, sid)
	for _, line := range events {
		ev := gjson.Parse(line)
		if ev.Get("subtype").String() != "task_notification" {
			continue
		}
		checked++
		id, turn, summary := ev.Get("task_id").String(), int(ev.Get("turn").Int()), ev.Get("summary").String()
		sc, err := agents.ReadSidecar(sess, id)
		if err != nil {
			t.Errorf("run %d: task %s turn %d was notified, but its sidecar: %v", run, id, turn, err)
			continue
		}
		if sc.Turn < turn {
			t.Errorf("run %d: task %s turn %d was notified, but the sidecar is at turn %d", run, id, turn, sc.Turn)
		}
		data, err := os.ReadFile(sc.Transcript)
		if err != nil {
			t.Errorf("run %d: task %s: transcript: %v", run, id, err)
			continue
		}
		if !strings.Contains(string(data), `"type":"turn","ts":`) || !strings.Contains(string(data), `"summary":"`+summary+`"`) {
			t.Errorf("run %d: task %s turn %d (%q) was notified, but its transcript lacks that turn", run, id, turn, summary)
		}
	}
	return checked
}
