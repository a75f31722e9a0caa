package llmtest

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

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
		if lb.FailNow() {
			http.Error(w, "injected", http.StatusServiceUnavailable)
			return
		}
		if string(body) == "block" {
			close(started)
			<-r.Context().Done() // released by Close
			return
		}
		io.WriteString(w, "ok")
	}), 1)
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
