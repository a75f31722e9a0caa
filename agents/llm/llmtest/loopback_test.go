package llmtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"go.uber.org/goleak"

	"github.com/stoke-cli/stoke/agents/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestAgentOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		system string
		tools  []string
		want   string
	}{
		{"task tool means parent", "Agent type: Explore", []string{"read_file", "task"}, "parent"},
		{"agent type line", "You are a subagent.\nAgent type: code-reviewer\nBe brief.", []string{"read_file"}, "code-reviewer"},
		{"agent type line with a period", "You help.\nAgent type: code-reviewer.\nBe brief.", nil, "code-reviewer"},
		{"default", "You are a helper.", nil, "general-purpose"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req := &llm.Request{System: tt.system}
			for _, n := range tt.tools {
				req.Tools = append(req.Tools, llm.ToolSpec{Name: n})
			}
			if got := AgentOf(req); got != tt.want {
				t.Errorf("AgentOf = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLoopbackRecordsFailsAndCancels(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	var lb *Loopback
	lb = NewLoopback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := lb.Record(r)
		if lb.FailNow("parent") {
			http.Error(w, "injected", lb.FailStatus())
			return
		}
		if string(body) == "block" {
			close(started)
			<-r.Context().Done() // released by Close
			return
		}
		io.WriteString(w, "ok")
	}), Faults{FailFirst: 1, FailStatus: http.StatusServiceUnavailable})
	lb.Start()
	post := func(body string) int {
		resp, err := lb.Client().Post(lb.BaseURL(), "text/plain", strings.NewReader(body))
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("one"); got != http.StatusServiceUnavailable {
		t.Errorf("first request = %d, want the injected 503", got)
	}
	if got := post("two"); got != http.StatusOK {
		t.Errorf("second request = %d, want 200", got)
	}
	done := make(chan struct{})
	go func() { post("block"); close(done) }()
	<-started
	lb.Close() // must not wait for the blocked handler's caller
	<-done
	lb.Close()
	reqs := lb.Requests()
	if len(reqs) != 3 || !bytes.Equal(reqs[0], []byte("one")) || !bytes.Equal(reqs[2], []byte("block")) {
		t.Errorf("requests = %q", reqs)
	}
	reqs[0][0] = 'X'
	if lb.Requests()[0][0] != 'o' {
		t.Error("Requests does not return copies")
	}
}

func TestSplitHalf(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"", "a", "ab", `{"k":"é"}`, "ééé", "日本語"} {
		a, b := SplitHalf(s)
		if a+b != s || !utf8.ValidString(a) || !utf8.ValidString(b) {
			t.Errorf("SplitHalf(%q) = %q, %q", s, a, b)
		}
		if len(s) >= 2 && (a == "" || b == "") {
			t.Errorf("SplitHalf(%q) = %q, %q: want two non-empty halves", s, a, b)
		}
	}
}

// streamOf serves every request with a stream of five events "data: N" (N from 1),
// cut as f says, then "data: [END]"; the request body names its agent.
func streamOf(t *testing.T, f Faults) *Loopback {
	t.Helper()
	var lb *Loopback
	lb = NewLoopback(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := lb.Record(r)
		out := lb.Stream(w, string(body))
		for i := range 5 {
			if err := out.Event(fmt.Sprintf("data: %d\n\n", i+1)); err != nil {
				return
			}
		}
		_ = out.Write("data: [END]\n\n")
	}), f)
	lb.Start()
	t.Cleanup(lb.Close)
	return lb
}

// read posts agent to lb and returns the events read and the error that ended the body.
func read(t *testing.T, lb *Loopback, agent string) ([]string, error) {
	t.Helper()
	resp, err := lb.Client().Post(lb.BaseURL(), "text/plain", strings.NewReader(agent))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			events = append(events, strings.TrimPrefix(line, "data: "))
		}
	}
	return events, sc.Err()
}

func TestStreamCuts(t *testing.T) {
	t.Parallel()
	all := []string{"1", "2", "3", "4", "5", "[END]"}
	tests := []struct {
		name    string
		faults  Faults
		agent   string
		want    []string
		wantErr error
	}{
		{name: "no faults", want: all},
		{name: "close", faults: Faults{CutAfter: 2}, want: []string{"1", "2"}, wantErr: io.ErrUnexpectedEOF},
		{name: "reset", faults: Faults{CutAfter: 3, Cut: CutReset}, want: []string{"1", "2", "3"}, wantErr: syscall.ECONNRESET},
		{name: "end", faults: Faults{CutAfter: 2, Cut: CutEnd}, want: []string{"1", "2"}},
		{name: "other agent", faults: Faults{CutAfter: 2, Agent: "explorer"}, agent: "parent", want: all},
		{name: "that agent", faults: Faults{CutAfter: 2, Agent: "explorer"}, agent: "explorer", want: []string{"1", "2"}, wantErr: io.ErrUnexpectedEOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lb := streamOf(t, tt.faults)
			for range 2 { // every stream is cut, and the server keeps serving
				got, err := read(t, lb, tt.agent)
				if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
					t.Errorf("read error = %v, want %v", err, tt.wantErr)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("events = %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestStreamCutTimes(t *testing.T) {
	t.Parallel()
	lb := streamOf(t, Faults{CutAfter: 1, CutTimes: 2, Cut: CutEnd, Agent: "explorer"})
	for i, want := range []int{1, 6, 1, 6, 6} {
		agent := "explorer"
		if i == 1 {
			agent = "parent" // not counted
		}
		if got, _ := read(t, lb, agent); len(got) != want {
			t.Errorf("stream %d (%s): %d events, want %d", i+1, agent, len(got), want)
		}
	}
}

func TestHeadersAreRecorded(t *testing.T) {
	t.Parallel()
	lb := streamOf(t, Faults{})
	req, _ := http.NewRequest(http.MethodPost, lb.BaseURL(), strings.NewReader("parent"))
	req.Header.Set("X-Probe", "one")
	resp, err := lb.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	h := lb.Headers()
	if len(h) != 1 || h[0].Get("X-Probe") != "one" {
		t.Errorf("headers = %v, want the probe header", h)
	}
}

func TestErrorStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want int
	}{
		{&llm.ProviderError{StatusCode: 429}, 429},
		{fmt.Errorf("wrapped: %w", &llm.ProviderError{StatusCode: 529}), 529},
		{&llm.ProviderError{StatusCode: 200}, 500},
		{errors.New("plain"), 500},
	}
	for _, tt := range tests {
		if got := ErrorStatus(tt.err); got != tt.want {
			t.Errorf("ErrorStatus(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}
