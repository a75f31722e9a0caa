package mcp

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stoke-cli/stoke/agents/tools"
)

// inproc is an in-process go-sdk server the Manager dials through Options.Dial. It counts
// the connections made to it and keeps their server sessions.
type inproc struct {
	srv *sdk.Server
	// beforeConnect, when set, runs in Dial before the connection is made.
	beforeConnect func(ctx context.Context, name string) error

	mu       sync.Mutex
	dials    map[string]int
	sessions []*sdk.ServerSession
}

func newInproc() *inproc {
	s := sdk.NewServer(&sdk.Implementation{Name: "stoke-test"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "Echoes the message.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
			return text("echo: " + in.Message), nil, nil
		})
	sdk.AddTool(s, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("it broke on purpose")
		})
	sdk.AddTool(s, &sdk.Tool{Name: "block", Description: "Waits until cancelled."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	return &inproc{srv: s, dials: map[string]int{}}
}

func (p *inproc) dial(ctx context.Context, name string, _ ServerConfig) (sdk.Transport, func(), error) {
	p.mu.Lock()
	p.dials[name]++
	p.mu.Unlock()
	if p.beforeConnect != nil {
		if err := p.beforeConnect(ctx, name); err != nil {
			return nil, nil, err
		}
	}
	ct, st := sdk.NewInMemoryTransports()
	ss, err := p.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	p.sessions = append(p.sessions, ss)
	p.mu.Unlock()
	return ct, func() { _ = ss.Wait() }, nil
}

func (p *inproc) dialCount(name string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dials[name]
}

func stdio(cmd string) ServerConfig { return ServerConfig{Command: cmd, Source: "test"} }

func newTestManager(t *testing.T, p *inproc, names ...string) *Manager {
	t.Helper()
	servers := map[string]ServerConfig{}
	for _, n := range names {
		servers[n] = stdio("srv-" + n)
	}
	m := NewManager(Options{Servers: servers, Dial: p.dial, StartTimeout: 10 * time.Second})
	t.Cleanup(m.Close)
	return m
}

func statusOf(m *Manager, name string) Status {
	for _, s := range m.Statuses() {
		if s.Name == name {
			return s
		}
	}
	return Status{}
}

func toolNames(ts []*Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Spec().Name)
	}
	return out
}

func run(t *testing.T, ctx context.Context, ts []*Tool, name, input string) tools.Result {
	t.Helper()
	var list []tools.Tool
	for _, x := range ts {
		list = append(list, x)
	}
	return tools.NewSet(list...).Run(ctx, tools.Call{ID: "call-1", Name: name, Input: []byte(input)})
}

func TestManagerStartsServersOnFirstUse(t *testing.T) {
	p := newInproc()
	m := newTestManager(t, p, "a", "b")
	for _, name := range []string{"a", "b"} {
		if st := statusOf(m, name); st.Status != StatusPending {
			t.Fatalf("before use: %s is %q, want pending", name, st.Status)
		}
	}
	if n := p.dialCount("a") + p.dialCount("b"); n != 0 {
		t.Fatalf("%d connections before any use, want 0", n)
	}

	ts := m.Tools(t.Context(), "a")
	want := []string{"mcp__a__block", "mcp__a__echo", "mcp__a__fail"}
	if got := toolNames(ts); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("tools = %v, want %v", got, want)
	}
	if st := statusOf(m, "a"); st.Status != StatusConnected {
		t.Errorf("a is %+v, want connected", st)
	}
	if st := statusOf(m, "b"); st.Status != StatusPending {
		t.Errorf("b is %+v, want pending: nobody asked for it", st)
	}
	if p.dialCount("b") != 0 {
		t.Errorf("b was connected without being asked for")
	}
	res := run(t, t.Context(), ts, "mcp__a__echo", `{"message":"hello"}`)
	if res.IsError || res.Content != "echo: hello" {
		t.Errorf("echo = %+v", res)
	}
}

func TestManagerSharesOneSessionPerServer(t *testing.T) {
	p := newInproc()
	release := make(chan struct{})
	p.beforeConnect = func(ctx context.Context, _ string) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m := newTestManager(t, p, "shared")
	const agents = 16
	results := make([][]*Tool, agents)
	var wg sync.WaitGroup
	for i := range agents {
		wg.Go(func() { results[i] = m.Tools(t.Context(), "shared") })
	}
	close(release)
	wg.Wait()
	if n := p.dialCount("shared"); n != 1 {
		t.Fatalf("%d agents asking for one server made %d connections, want 1", agents, n)
	}
	for i, ts := range results {
		if len(ts) != 3 {
			t.Fatalf("agent %d got %d tools, want 3", i, len(ts))
		}
		res := run(t, t.Context(), ts, "mcp__shared__echo", `{"message":"from agent"}`)
		if res.IsError || res.Content != "echo: from agent" {
			t.Errorf("agent %d: echo = %+v", i, res)
		}
	}
}

func TestManagerStartsServersInParallel(t *testing.T) {
	// Each server's connection waits until the other's has begun: started one after the
	// other, the first would time out.
	p := newInproc()
	begun := map[string]chan struct{}{"x": make(chan struct{}), "y": make(chan struct{})}
	other := map[string]string{"x": "y", "y": "x"}
	p.beforeConnect = func(ctx context.Context, name string) error {
		close(begun[name])
		select {
		case <-begun[other[name]]:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	m := NewManager(Options{Servers: map[string]ServerConfig{"x": stdio("x"), "y": stdio("y")}, Dial: p.dial, StartTimeout: 5 * time.Second})
	defer m.Close()
	m.Start(t.Context(), "x", "y")
	for _, st := range m.Statuses() {
		if st.Status != StatusConnected {
			t.Errorf("%s: %+v, want connected", st.Name, st)
		}
	}
}

func TestManagerToolErrorsAreResults(t *testing.T) {
	p := newInproc()
	m := newTestManager(t, p, "a")
	ts := m.Tools(t.Context(), "a")

	t.Run("the tool reports an error", func(t *testing.T) {
		res := run(t, t.Context(), ts, "mcp__a__fail", `{}`)
		if !res.IsError || !strings.Contains(res.Content, "it broke on purpose") {
			t.Errorf("fail = %+v, want an error result with the tool's message", res)
		}
	})
	t.Run("the call is cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		done := make(chan tools.Result)
		go func() { done <- run(t, ctx, ts, "mcp__a__block", `{}`) }()
		cancel(errors.New("the turn was interrupted"))
		res := <-done
		if !res.IsError || !strings.Contains(res.Content, "the turn was interrupted") {
			t.Errorf("block = %+v, want an error result naming the cause", res)
		}
	})
	t.Run("the server does not answer", func(t *testing.T) {
		m := NewManager(Options{Servers: map[string]ServerConfig{"slow": stdio("srv-slow")}, Dial: p.dial,
			StartTimeout: 10 * time.Second, CallTimeout: 20 * time.Millisecond})
		t.Cleanup(m.Close)
		ts := m.Tools(t.Context(), "slow")
		// The caller's context outlives the call's bound by far: what ends the call is
		// CallTimeout, not the caller.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		res := run(t, ctx, ts, "mcp__slow__block", `{}`)
		if !res.IsError || !strings.Contains(res.Content, `MCP server "slow": block did not answer within 20ms`) {
			t.Errorf("block = %+v, want an error result saying the call timed out", res)
		}
		if st := statusOf(m, "slow"); st.Status != StatusConnected {
			t.Errorf("status after a timed-out call: %+v, want still connected", st)
		}
		if res := run(t, ctx, ts, "mcp__slow__echo", `{"message":"x"}`); res.IsError || res.Content != "echo: x" {
			t.Errorf("echo after a timed-out call = %+v", res)
		}
	})
	t.Run("the server no longer has the tool", func(t *testing.T) {
		p.srv.RemoveTools("echo")
		res := run(t, t.Context(), ts, "mcp__a__echo", `{"message":"x"}`)
		if !res.IsError || !strings.Contains(res.Content, `MCP server "a": echo failed`) {
			t.Errorf("echo = %+v, want an error result naming the server", res)
		}
		if st := statusOf(m, "a"); st.Status != StatusConnected {
			t.Errorf("status after a protocol error: %+v, want still connected", st)
		}
	})
	t.Run("the server went away", func(t *testing.T) {
		p.mu.Lock()
		ss := p.sessions[0]
		p.mu.Unlock()
		_ = ss.Close()
		res := run(t, t.Context(), ts, "mcp__a__fail", `{}`)
		if !res.IsError || !strings.Contains(res.Content, `MCP server "a"`) {
			t.Errorf("call after the server closed = %+v, want an error result", res)
		}
		if st := statusOf(m, "a"); st.Status != StatusFailed || !strings.Contains(st.Error, "connection lost") {
			t.Errorf("status = %+v after %q, want failed: connection lost", st, res.Content)
		}
	})
}

func TestManagerFailedStartIsReportedAndTheRestGoOn(t *testing.T) {
	p := newInproc()
	p.beforeConnect = func(ctx context.Context, name string) error {
		switch name {
		case "refused":
			return errors.New("dial: connection refused")
		case "silent":
			<-ctx.Done() // never connects
			return ctx.Err()
		}
		return nil
	}
	m := NewManager(Options{
		Servers:      map[string]ServerConfig{"ok": stdio("ok"), "refused": stdio("r"), "silent": stdio("s")},
		Dial:         p.dial,
		StartTimeout: 200 * time.Millisecond,
	})
	defer m.Close()
	ts := m.Tools(t.Context(), "ok", "refused", "silent")
	if got := toolNames(ts); len(got) != 3 || !strings.HasPrefix(got[0], "mcp__ok__") {
		t.Errorf("tools = %v, want only ok's three", got)
	}
	want := map[string]string{"ok": "", "refused": "connection refused", "silent": "did not start within 200ms"}
	for _, st := range m.Statuses() {
		switch {
		case want[st.Name] == "" && st.Status != StatusConnected:
			t.Errorf("%s: %+v, want connected", st.Name, st)
		case want[st.Name] != "" && (st.Status != StatusFailed || !strings.Contains(st.Error, want[st.Name])):
			t.Errorf("%s: %+v, want failed: %s", st.Name, st, want[st.Name])
		}
	}
}

func TestManagerCloseCancelsStartsAndEndsSessions(t *testing.T) {
	p := newInproc()
	entered := make(chan struct{})
	p.beforeConnect = func(ctx context.Context, name string) error {
		if name != "slow" {
			return nil
		}
		close(entered)
		<-ctx.Done()
		return ctx.Err()
	}
	m := NewManager(Options{Servers: map[string]ServerConfig{"a": stdio("a"), "slow": stdio("slow")}, Dial: p.dial, StartTimeout: time.Minute})
	ts := m.Tools(t.Context(), "a")
	started := make(chan struct{})
	go func() {
		defer close(started)
		m.Start(context.Background(), "slow")
	}()
	<-entered
	m.Close() // returns although "slow" would take a minute; goleak checks nothing is left
	<-started
	if st := statusOf(m, "slow"); st.Status != StatusFailed {
		t.Errorf("slow after Close: %+v, want failed", st)
	}
	res := run(t, t.Context(), ts, "mcp__a__echo", `{"message":"late"}`)
	if !res.IsError {
		t.Errorf("a call after Close = %+v, want an error result", res)
	}
	m.Start(t.Context(), "a") // after Close nothing starts again
	if n := p.dialCount("a"); n != 1 {
		t.Errorf("a was dialled %d times, want 1", n)
	}
	m.Close() // idempotent
}

func TestManagerAdd(t *testing.T) {
	m := NewManager(Options{Servers: map[string]ServerConfig{"a": stdio("one")}})
	defer m.Close()
	if err := m.Add("a", stdio("one")); err != nil {
		t.Errorf("adding the same server again: %v", err)
	}
	if err := m.Add("a", stdio("two")); !errors.Is(err, ErrConflict) {
		t.Errorf("adding another server under a used name: %v, want ErrConflict", err)
	}
	if err := m.Add("b", stdio("two")); err != nil || !m.Has("b") {
		t.Errorf("adding a new server: %v", err)
	}
}

func TestFailedHTTPStartHidesURLCredentials(t *testing.T) {
	m := NewManager(Options{Servers: map[string]ServerConfig{
		"web": {Type: TransportHTTP, URL: "http://user:pw-secret-1@127.0.0.1:1/mcp?key=qk-secret-2"},
	}})
	defer m.Close()
	m.Start(t.Context(), "web")
	st := statusOf(m, "web")
	if st.Status != StatusFailed || st.Error == "" {
		t.Fatalf("status %+v, want failed", st)
	}
	if strings.Contains(st.Error, "pw-secret-1") || strings.Contains(st.Error, "qk-secret-2") {
		t.Errorf("the error shows the URL's credentials: %s", st.Error)
	}
}

func TestResultsHideTheServersCredentials(t *testing.T) {
	// A server that hands back its own credentials (its env, the headers it was sent, a
	// URL's password) must not put them in a tool result: the result goes to the model,
	// the events, the transcripts and the traces.
	const token, password = "Bearer hdr-s3cret-value", "url-passw0rd"
	p := newInproc()
	conf := ServerConfig{Type: TransportHTTP, URL: "https://user:" + password + "@mcp.example/mcp",
		Headers: map[string]string{"Authorization": token, "X-Api-Key": "abc", "Accept": "application/json"}, Source: "test"}
	m := NewManager(Options{Servers: map[string]ServerConfig{"a": conf}, Dial: p.dial, StartTimeout: 10 * time.Second})
	t.Cleanup(m.Close)
	ts := m.Tools(t.Context(), "a")
	res := run(t, t.Context(), ts, "mcp__a__echo", `{"message":"auth=`+token+` bare=hdr-s3cret-value pw=`+password+` short=abc accept=application/json"}`)
	if res.IsError {
		t.Fatalf("echo: %+v", res)
	}
	if strings.Contains(res.Content, "hdr-s3cret") || strings.Contains(res.Content, password) {
		t.Errorf("the result holds a credential of the server's configuration: %q", res.Content)
	}
	// A value shorter than 8 characters is no secret worth the name; a header that names
	// no credential is no secret.
	if want := "echo: auth=[REDACTED] bare=[REDACTED] pw=[REDACTED] short=abc accept=application/json"; res.Content != want {
		t.Errorf("result = %q, want %q", res.Content, want)
	}
}
