package headless

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

// hostWait bounds every wait of the fake host for a line from stoke: a broken test fails
// with the lines seen so far instead of hanging.
const hostWait = 20 * time.Second

// fakeHost plays the Claude Agent SDK: it writes stdin lines to a running session and
// reads its stdout line by line, as the SDK does.
type fakeHost struct {
	t     *testing.T
	stdin *io.PipeWriter
	lines chan gjson.Result
	done  chan error // Run's result

	// unclaimed are lines next has read and passed over (used by the test goroutine only).
	unclaimed []gjson.Result

	mu   sync.Mutex
	seen []string
}

// startHost runs a stream-json session (input and output) on o, with pipes for stdin and
// stdout. The test must end it with closeStdin and wait.
func startHost(t *testing.T, o Options) *fakeHost {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	o.Stdin, o.Stdout = inR, outW
	o.InputFormat, o.OutputFormat = InputStreamJSON, OutputStreamJSON
	h := &fakeHost{t: t, stdin: inW, lines: make(chan gjson.Result, 4096), done: make(chan error, 1)}
	go func() {
		err := Run(context.WithoutCancel(t.Context()), o)
		outW.Close()
		inR.Close()
		h.done <- err
	}()
	go h.readLines(outR)
	t.Cleanup(func() { inW.Close() })
	return h
}

// readLines reads stoke's stdout until EOF; every line goes to h.lines.
func (h *fakeHost) readLines(r io.Reader) {
	defer close(h.lines)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		h.mu.Lock()
		h.seen = append(h.seen, line)
		h.mu.Unlock()
		if !gjson.Valid(line) {
			h.t.Errorf("stdout line is not JSON: %q", line)
			continue
		}
		h.lines <- gjson.Parse(line)
	}
}

// send writes one stdin line; JSON written over several lines in a test is compacted.
func (h *fakeHost) send(line string) {
	h.t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(line)); err == nil {
		line = buf.String()
	}
	if _, err := io.WriteString(h.stdin, strings.TrimSpace(line)+"\n"); err != nil {
		h.t.Fatalf("write stdin: %v", err)
	}
}

// user sends a user message.
func (h *fakeHost) user(text string) {
	h.t.Helper()
	h.send(`{"type":"user","session_id":"","message":{"role":"user","content":` + quote(text) + `},"parent_tool_use_id":null}`)
}

// request sends a control request.
func (h *fakeHost) request(id, body string) {
	h.t.Helper()
	h.send(`{"type":"control_request","request_id":"` + id + `","request":` + body + `}`)
}

// next returns the first stdout line, not returned by next before, for which match is
// true, waiting for it; lines it passes over stay available to later calls, so that the
// test does not depend on the order of lines that may come in either order.
func (h *fakeHost) next(what string, match func(gjson.Result) bool) gjson.Result {
	h.t.Helper()
	for i, l := range h.unclaimed {
		if match(l) {
			h.unclaimed = append(h.unclaimed[:i:i], h.unclaimed[i+1:]...)
			return l
		}
	}
	timer := time.NewTimer(hostWait)
	defer timer.Stop()
	for {
		select {
		case l, ok := <-h.lines:
			if !ok {
				h.t.Fatalf("stdout ended before %s; lines:\n%s", what, h.output())
			}
			if match(l) {
				return l
			}
			h.unclaimed = append(h.unclaimed, l)
		case <-timer.C:
			h.t.Fatalf("no %s within %v; lines:\n%s", what, hostWait, h.output())
		}
	}
}

// closeStdin closes stdin (EOF) and returns Run's error once it has returned, with every
// stdout line.
func (h *fakeHost) closeStdin() ([]gjson.Result, error) {
	h.t.Helper()
	h.stdin.Close()
	return h.wait()
}

// wait returns Run's error once it has returned, and every stdout line.
func (h *fakeHost) wait() ([]gjson.Result, error) {
	h.t.Helper()
	select {
	case err := <-h.done:
		for range h.lines { // drain: the reader goroutine ends at EOF
		}
		var all []gjson.Result
		h.mu.Lock()
		for _, l := range h.seen {
			all = append(all, gjson.Parse(l))
		}
		h.mu.Unlock()
		return all, err
	case <-time.After(hostWait):
		h.t.Fatalf("Run did not return within %v; lines:\n%s", hostWait, h.output())
		return nil, nil
	}
}

func (h *fakeHost) output() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.seen, "\n")
}

func isType(typ string) func(gjson.Result) bool {
	return func(l gjson.Result) bool { return l.Get("type").Str == typ }
}

func isSystem(subtype string) func(gjson.Result) bool {
	return func(l gjson.Result) bool { return l.Get("type").Str == "system" && l.Get("subtype").Str == subtype }
}

func isReply(id string) func(gjson.Result) bool {
	return func(l gjson.Result) bool {
		return l.Get("type").Str == "control_response" && l.Get("response.request_id").Str == id
	}
}

func isState(state string) func(gjson.Result) bool {
	return func(l gjson.Result) bool {
		return isSystem("session_state_changed")(l) && l.Get("state").Str == state
	}
}

func isRequest(subtype string) func(gjson.Result) bool {
	return func(l gjson.Result) bool {
		return l.Get("type").Str == "control_request" && l.Get("request.subtype").Str == subtype
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// sdkOpts returns options of an SDK session on a scenario.
func sdkOpts(t *testing.T, m *scripted.Model) Options {
	t.Helper()
	return Options{
		Model: m, CWD: t.TempDir(), Home: t.TempDir(), SessionID: "11111111-2222-3333-4444-555555555555",
		Version: "test", BackgroundAgents: true,
	}
}

// filter returns the lines for which match is true.
func filter(ls []gjson.Result, match func(gjson.Result) bool) []gjson.Result {
	var out []gjson.Result
	for _, l := range ls {
		if match(l) {
			out = append(out, l)
		}
	}
	return out
}
