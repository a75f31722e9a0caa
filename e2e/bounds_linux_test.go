//go:build linux

package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/tidwall/gjson"
)

// runMeasured runs stoke in dir with args and env added, and returns its stdout,
// stderr, exit code and peak resident set size in bytes, as the kernel accounts it for
// the child (wait4's ru_maxrss): measured from outside, whatever stoke does.
func runMeasured(t *testing.T, dir string, env []string, args ...string) (stdout, stderr string, code int, peakRSS int64) {
	t.Helper()
	cmd := exec.Command(filepath.Join(h.binDir, "stoke"+exeSuffix()), args...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clip(append(os.Environ(), "GOCOVERDIR="+h.coverDir, "STOKE_HOME="+filepath.Join(t.TempDir(), ".stoke"))), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run stoke: %v", err)
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage for the child")
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode(), ru.Maxrss * 1024 // KiB on Linux
}

// rssBound is a bound on stoke's peak RSS for the tests below; the race detector's
// shadow memory takes its share on top of the heap.
func rssBound(plain int64) int64 {
	if raceEnabled {
		return plain * 2
	}
	return plain
}

// A model that streams a 200 MB answer: the call fails at the cap on one answer (16
// MiB by default) with the cap's error, exit 1, and is not retried; the provider stops
// reading there (the server sees the client go away long before 200 MB), and stoke's
// peak RSS stays under 200 MB (a bound doubled under -race).
func TestAnswerPastTheCapFailsInBoundedMemory(t *testing.T) {
	t.Parallel()
	const answer, piece = 200 << 20, 64 << 10
	text := strings.Repeat("x", piece)
	var requests, sent atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		chunk, _ := json.Marshal(map[string]any{"id": "chatcmpl-big", "object": "chat.completion.chunk", "created": 1, "model": "big",
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{"content": text}, "finish_reason": nil}}})
		line := []byte("data: " + string(chunk) + "\n\n")
		for n := 0; n < answer; n += piece {
			if _, err := w.Write(line); err != nil {
				return // the client went away
			}
			sent.Add(piece)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()
	dir := t.TempDir()
	stdout, stderr, code, rss := runMeasured(t, dir, []string{"OPENAI_API_KEY=sk-test"},
		"-p", "write a lot", "--provider", "openai", "-m", "big", "--base-url", srv.URL+"/v1", "--output-format", "stream-json")
	t.Logf("peak RSS %.1f MB, %d MB streamed", float64(rss)/1e6, sent.Load()>>20)
	if code != 1 || !strings.Contains(stderr, "the model's answer is larger than the cap of 16 MiB on one answer; the call was stopped (--max-answer-bytes)") {
		t.Fatalf("exit %d, stderr %q; want exit 1 with the cap's error", code, stderr)
	}
	if res := gjson.Get(lastLine(stdout), "subtype").Str; res != "error_during_execution" {
		t.Errorf("last line %q, want an error result", lastLine(stdout))
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests: the call was retried", n)
	}
	if n := sent.Load(); n >= answer/2 {
		t.Errorf("the server streamed %d MB before stoke stopped reading", n>>20)
	}
	if bound := rssBound(200e6); rss >= bound {
		t.Errorf("peak RSS %.1f MB, want under %.0f MB", float64(rss)/1e6, float64(bound)/1e6)
	}
}

// edit of a 200 MB file is refused at once, with the file's size, and stoke's peak RSS
// stays under 100 MB (doubled under -race): the file is never read.
func TestEditOfAHugeFileIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big, err := os.Create(filepath.Join(dir, "big.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(200 << 20); err != nil { // sparse: no 200 MB written to the test's disk
		t.Fatal(err)
	}
	big.Close()
	scenario := `rules:
  - agent: parent
    when: {step: 1}
    reply:
      tool_calls:
        - {name: edit, input: {file_path: big.txt, old_string: "a", new_string: "b"}}
  - agent: parent
    reply: {text: "done"}
`
	if err := os.WriteFile(filepath.Join(dir, "s.yaml"), []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code, rss := runMeasured(t, dir, nil, "-p", "edit it", "--scenario", "s.yaml", "--approval-mode", "yolo", "--output-format", "stream-json")
	t.Logf("peak RSS %.1f MB", float64(rss)/1e6)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var result gjson.Result
	for l := range strings.Lines(stdout) {
		if r := gjson.Get(l, `message.content.#(type=="tool_result")`); r.Exists() {
			result = r
		}
	}
	if !result.Get("is_error").Bool() || !strings.HasPrefix(result.Get("content").String(), "edit: big.txt is 200 MiB, larger than the 16 MiB edit changes") {
		t.Errorf("tool result = %s, want the refusal", result.Raw)
	}
	if bound := rssBound(100e6); rss >= bound {
		t.Errorf("peak RSS %.1f MB, want under %.0f MB", float64(rss)/1e6, float64(bound)/1e6)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
