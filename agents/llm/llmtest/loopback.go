// Package llmtest is what the mock model servers and the provider tests share.
//
// The loopback core (Loopback, SSE, Faults): an HTTP server on loopback that records
// every request, injects failures (error answers, streams cut by a clean close, a TCP
// reset or an early end), and cancels in-flight model calls when closed; the rule by
// which a mock tells the parent agent from a subagent (AgentOf). Each provider's mock
// server sits beside its provider (agents/llm/openai/openaitest,
// agents/llm/anthropic/anthropictest) and speaks its wire format over this core.
//
// The conformance suite (RunSuite): the behaviour every provider owes the runtime,
// checked over the provider's own mock server, so that a new provider needs one small
// test file.
package llmtest

import (
	"context"
	"io"
	"iter"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Faults are the failures a mock server injects. The zero value injects none.
type Faults struct {
	// FailFirst answers the first FailFirst requests with HTTP FailStatus and the
	// API's error body.
	FailFirst, FailStatus int
	// CutAfter cuts a streamed answer after that many events, the way Cut says;
	// 0 never cuts. Non-streamed answers are not cut.
	CutAfter int
	// CutTimes cuts only the first CutTimes streams; 0 cuts every one.
	CutTimes int
	Cut      CutMode
	// Agent limits the faults to the requests of that agent (see AgentOf); "" means any.
	Agent string
}

// CutMode is how a stream is cut.
type CutMode int

const (
	// CutClose closes the connection mid-body: the client reads an unexpected EOF.
	CutClose CutMode = iota
	// CutReset resets the connection (TCP RST): the client reads "connection reset by peer".
	CutReset
	// CutEnd ends the answer cleanly, without its terminal event.
	CutEnd
)

// Loopback is a running httptest server. Its handlers' requests derive from a context
// that Close cancels, so Close does not wait for slow model calls. Safe for concurrent use.
type Loopback struct {
	srv    *httptest.Server
	cancel context.CancelFunc
	close  sync.Once
	faults Faults

	mu       sync.Mutex
	requests []recorded
	failed   int // requests answered with FailStatus
	cut      int // streams cut
	// open and active count the client connections open and those serving a request
	// now; peakOpen and peakActive the most at once.
	open, active, peakOpen, peakActive int
	states                             map[net.Conn]http.ConnState
	// streams counts the requests being answered now, from their arrival until just before
	// their terminal event (SSE.End) or the handler's return; peakStreams the most at once.
	streams, peakStreams int
	flights              map[http.ResponseWriter]*flight
}

type recorded struct {
	header http.Header
	body   []byte
}

// NewLoopback prepares h on a loopback port with the given faults; Start starts it
// (store the Loopback where h finds it first).
func NewLoopback(h http.Handler, f Faults) *Loopback {
	ctx, cancel := context.WithCancel(context.Background())
	l := &Loopback{cancel: cancel, faults: f, states: map[net.Conn]http.ConnState{}, flights: map[http.ResponseWriter]*flight{}}
	l.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := l.arrive(w)
		defer l.leave(w, f)
		h.ServeHTTP(w, r)
	}))
	l.srv.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	l.srv.Config.ConnState = l.connState
	return l
}

// connState counts the connections open and active (serving a request).
func (l *Loopback) connState(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev, known := l.states[c]
	if prev == http.StateActive {
		l.active--
	}
	switch s {
	case http.StateNew:
		l.open++
	case http.StateActive:
		l.active++
	case http.StateClosed, http.StateHijacked:
		if known {
			l.open--
		}
		delete(l.states, c)
		return
	}
	l.states[c] = s
	l.peakOpen, l.peakActive = max(l.peakOpen, l.open), max(l.peakActive, l.active)
}

// Connections returns the most client connections that were open at once, and the most
// that were serving a request at once (a connection kept idle between requests is open,
// not active).
func (l *Loopback) Connections() (peakOpen, peakActive int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peakOpen, l.peakActive
}

// flight is one request being answered.
type flight struct{ ended bool }

// arrive counts a request from its arrival.
func (l *Loopback) arrive(w http.ResponseWriter) *flight {
	f := &flight{}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flights[w] = f
	l.streams++
	l.peakStreams = max(l.peakStreams, l.streams)
	return f
}

// end stops counting f; only the first call counts.
func (l *Loopback) end(f *flight) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f != nil && !f.ended {
		f.ended = true
		l.streams--
	}
}

// leave ends f, if the handler did not, when its handler returns.
func (l *Loopback) leave(w http.ResponseWriter, f *flight) {
	l.end(f)
	l.mu.Lock()
	delete(l.flights, w)
	l.mu.Unlock()
}

// Streams returns the most requests answered at once, each counted from its arrival until
// just before its answer's terminal event is written (or its handler returns): a client
// cannot have read an answer's end while it still counts, so this is exact where
// Connections lags (a connection turns idle a moment after its client has read the end).
func (l *Loopback) Streams() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.peakStreams
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

// Record reads r's body and keeps a copy of it and of r's headers in the request log.
func (l *Loopback) Record(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.requests = append(l.requests, recorded{header: r.Header.Clone(), body: body})
	l.mu.Unlock()
	return body, nil
}

// Requests returns a copy of every request body received so far, in arrival order,
// including the ones answered with an error.
func (l *Loopback) Requests() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([][]byte, len(l.requests))
	for i, r := range l.requests {
		out[i] = append([]byte(nil), r.body...)
	}
	return out
}

// Headers returns a copy of the headers of every request received so far, in the
// order of Requests.
func (l *Loopback) Headers() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]http.Header, len(l.requests))
	for i, r := range l.requests {
		out[i] = r.header.Clone()
	}
	return out
}

// FailNow reports whether this request of agent is to be answered with the FailStatus
// of the faults (and counts it).
func (l *Loopback) FailNow(agent string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.meets(agent) || l.failed >= l.faults.FailFirst {
		return false
	}
	l.failed++
	return true
}

// FailStatus is the status of the injected failures.
func (l *Loopback) FailStatus() int { return l.faults.FailStatus }

// meets reports whether the faults apply to a request of agent. l.mu is held.
func (l *Loopback) meets(agent string) bool {
	return l.faults.Agent == "" || l.faults.Agent == agent
}

// Stream starts a 200 text/event-stream answer for a request of agent and returns its
// writer, which cuts the stream if the faults say so.
func (l *Loopback) Stream(w http.ResponseWriter, agent string) *SSE {
	l.mu.Lock()
	s := &SSE{w: w, rc: http.NewResponseController(w), lb: l, flight: l.flights[w]}
	if f := l.faults; f.CutAfter > 0 && l.meets(agent) && (f.CutTimes <= 0 || l.cut < f.CutTimes) {
		l.cut++
		s.cutAfter, s.mode = f.CutAfter, f.Cut
	}
	l.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return s
}

// agentTypeLine is the last line of every subagent's system prompt
// (catalog.Definition.SystemPrompt).
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

// Fixed is a model that answers every call with the same events.
type Fixed []llm.Event

// EndTurn is a Fixed answer: text, then the end of the turn.
func EndTurn(text string) Fixed {
	return Fixed{{Kind: llm.EventTextDelta, Text: text},
		{Kind: llm.EventDone, StopReason: llm.StopEndTurn, Usage: llm.Usage{InputTokens: 1, OutputTokens: 1}}}
}

// Name implements llm.Model.
func (Fixed) Name() string { return "fixed" }

// Generate implements llm.Model.
func (f Fixed) Generate(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		for _, ev := range f {
			if !yield(ev, nil) {
				return
			}
		}
	}
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

// TextOf joins the text deltas of a call's events: the reply's text.
func TextOf(evs []llm.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Kind == llm.EventTextDelta {
			b.WriteString(ev.Text)
		}
	}
	return b.String()
}
