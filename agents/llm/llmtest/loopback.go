// Package llmtest holds what the mock model servers share: a loopback HTTP server that
// records every request body, injects failures, and cancels in-flight model calls when
// closed; and the rule by which a mock tells the parent agent from a subagent.
package llmtest

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Loopback is a running httptest server. Its handlers' requests derive from a context
// that Close cancels, so Close does not wait for slow model calls. Safe for concurrent use.
type Loopback struct {
	srv       *httptest.Server
	cancel    context.CancelFunc
	close     sync.Once
	failFirst int

	mu       sync.Mutex
	requests [][]byte
	failed   int
}

// NewLoopback prepares h on a loopback port; Start starts it (store the Loopback where
// h finds it first). The first failFirst calls of FailNow say yes.
func NewLoopback(h http.Handler, failFirst int) *Loopback {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loopback{cancel: cancel, failFirst: failFirst}
	l.srv = httptest.NewUnstartedServer(h)
	l.srv.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	return l
}

// Start starts serving.
func (l *Loopback) Start() { l.srv.Start() }

// BaseURL is the server's root URL (no path).
func (l *Loopback) BaseURL() string { return l.srv.URL }

// Client returns an HTTP client for the server; its idle connections are closed by Close.
func (l *Loopback) Client() *http.Client { return l.srv.Client() }

// Close cancels in-flight model calls, then shuts the server down and waits for its
// handlers to return. Calling it again does nothing.
func (l *Loopback) Close() {
	l.close.Do(func() {
		l.cancel()
		l.srv.Close()
	})
}

// Record reads r's body and keeps a copy in the request log.
func (l *Loopback) Record(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.requests = append(l.requests, body)
	l.mu.Unlock()
	return body, nil
}

// Requests returns a copy of every request body received so far, in arrival order,
// including the ones answered with an error.
func (l *Loopback) Requests() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([][]byte, len(l.requests))
	for i, b := range l.requests {
		out[i] = append([]byte(nil), b...)
	}
	return out
}

// FailNow reports whether this request is one of the first failFirst (and counts it).
func (l *Loopback) FailNow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed >= l.failFirst {
		return false
	}
	l.failed++
	return true
}

// agentTypeLine is the last line of every subagent's system prompt
// (agents.Definition.SystemPrompt).
var agentTypeLine = regexp.MustCompile(`Agent type: ([A-Za-z0-9_-]+)`)

// AgentOf names who sent req, for the scripted provider's rules: "parent" when the task
// tool is declared (only the parent has it), else the subagent type its system prompt
// names, else "general-purpose".
func AgentOf(req *llm.Request) string {
	for _, t := range req.Tools {
		if t.Name == "task" {
			return "parent"
		}
	}
	if m := agentTypeLine.FindStringSubmatch(req.System); m != nil {
		return m[1]
	}
	return "general-purpose"
}

// Collect runs one model call and returns its events, up to the first error.
func Collect(ctx context.Context, m llm.Model, req *llm.Request) ([]llm.Event, error) {
	var evs []llm.Event
	for ev, err := range m.Generate(ctx, req) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}
