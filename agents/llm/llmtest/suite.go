package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/retry"
)

// Provider is one provider under the conformance suite: how to start its mock server,
// and how to build the Model under test.
type Provider struct {
	// Name is the provider's name in its errors (ProviderError.Provider and the rest).
	Name string
	// Serve starts the provider's mock server on loopback for the rest of the test. It
	// answers from backend, reporting the backend's usage as is; it requires the API
	// key key; it injects faults.
	Serve func(t *testing.T, backend llm.Model, key string, faults Faults) Mock
	// New returns the provider's Model for c.
	New func(c Client) (llm.Model, error)
	// Misroute returns a base URL on the same server where the API is not found (404).
	Misroute func(baseURL string) string
	// NotFoundHint is what the message of that 404 says besides the URL ("" if nothing).
	NotFoundHint string
}

// Mock is a running mock server.
type Mock interface {
	// URL is the base URL a Model of the provider is configured with.
	URL() string
	// Client is an HTTP client for the server.
	Client() *http.Client
	// Requests are the request bodies received so far, in order.
	Requests() [][]byte
}

// Client configures the Model under test.
type Client struct {
	BaseURL    string
	HTTPClient *http.Client
	APIKey     string
	// KeyName is where the key came from, for 401 messages.
	KeyName string
	Model   string
	// MaxRetries are the provider SDK's own retries (before a stream starts).
	MaxRetries     int
	RequestTimeout time.Duration
	// TimeoutName is where RequestTimeout is set, for timeout messages.
	TimeoutName string
	// MaxAnswerBytes caps one answer (0: the provider's default); MaxAnswerName is
	// where it is set, for the message.
	MaxAnswerBytes int64
	MaxAnswerName  string
}

const (
	suiteModel   = "suite-model"
	suiteKey     = "sk-suite-key-0123456789"
	suiteKeyName = "SUITE_API_KEY"
	// patience bounds a wait for something that must happen; it only ends a broken test.
	patience = 10 * time.Second
)

// RunSuite checks that p's Model behaves as the runtime needs, over p's mock server:
// streamed text, tool calls accumulated from pieces, the request as sent, usage and
// cached tokens, early stop and cancellation releasing the stream, cut streams and
// their retry, error answers mapped to *llm.ProviderError, and errors a user can act
// on (connection refused, timeout, 404, 401).
func RunSuite(t *testing.T, p Provider) {
	s := &suite{p: p}
	t.Run("Text", s.text)
	t.Run("ToolCalls", s.toolCalls)
	t.Run("Request", s.request)
	t.Run("UsageAndCachedTokens", s.usage)
	t.Run("ConcurrentCalls", s.concurrent)
	t.Run("EarlyBreakReleasesTheStream", s.earlyBreak)
	t.Run("Cancel", s.cancel)
	t.Run("CutStream", s.cutStream)
	t.Run("CutStreamRetried", s.cutStreamRetried)
	t.Run("ErrorAnswers", s.errorAnswers)
	t.Run("SDKRetriesBeforeTheStream", s.sdkRetries)
	t.Run("ErrorInsideTheStream", s.errorInStream)
	t.Run("ConnectionRefused", s.refused)
	t.Run("Timeout", s.timeout)
	t.Run("TimeoutRetried", s.timeoutRetried)
	t.Run("AnswerTooLarge", s.answerTooLarge)
	t.Run("NotFound", s.notFound)
	t.Run("Unauthorized", s.unauthorized)
	t.Run("New", s.newErrors)
}

type suite struct{ p Provider }

// await fails the test unless c gets a value within patience.
func await(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(patience):
		t.Fatalf("%s did not happen within %v", what, patience)
	}
}

// start serves b with faults and returns the mock and a Model for it, without SDK
// retries, adjusted by adjust.
func (s *suite) start(t *testing.T, b llm.Model, faults Faults, adjust func(*Client)) (Mock, llm.Model) {
	t.Helper()
	mock := s.p.Serve(t, b, suiteKey, faults)
	c := Client{BaseURL: mock.URL(), HTTPClient: mock.Client(), APIKey: suiteKey, KeyName: suiteKeyName, Model: suiteModel}
	if adjust != nil {
		adjust(&c)
	}
	m, err := s.p.New(c)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return mock, m
}

func hello() *llm.Request {
	return &llm.Request{Agent: "parent", Messages: []llm.Message{llm.UserText("hello")}}
}

func done(stop string, u llm.Usage) llm.Event {
	return llm.Event{Kind: llm.EventDone, StopReason: stop, Usage: u, Model: suiteModel}
}

// jsonEqual compares raw JSON by value.
func jsonEqual() cmp.Option {
	return cmp.FilterValues(func(a, b json.RawMessage) bool { return len(a) > 0 && len(b) > 0 },
		cmp.Transformer("json", func(r json.RawMessage) any {
			var v any
			if err := json.Unmarshal(r, &v); err != nil {
				return string(r)
			}
			return v
		}))
}

// checkEvents compares events, ignoring the provider's message ids (which must be set
// on EventDone).
func checkEvents(t *testing.T, got, want []llm.Event) {
	t.Helper()
	for _, ev := range got {
		if ev.Kind == llm.EventDone && ev.MessageID == "" {
			t.Errorf("EventDone without a MessageID")
		}
	}
	if diff := cmp.Diff(want, got, jsonEqual(), cmpopts.IgnoreFields(llm.Event{}, "MessageID"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// noKey fails the test if err's message holds the API key.
func noKey(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "sk-suite") {
		t.Errorf("error %q holds the API key", err)
	}
}

func (s *suite) text(t *testing.T) {
	t.Parallel()
	want := []llm.Event{Text("Hel"), Text("lo"), done(llm.StopEndTurn, llm.Usage{InputTokens: 12, OutputTokens: 3})}
	_, m := s.start(t, NewBackend(false, want...), Faults{}, nil)
	got, err := Collect(t.Context(), m, hello())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	checkEvents(t, got, want)
	if m.Name() != suiteModel {
		t.Errorf("Name() = %q, want %q", m.Name(), suiteModel)
	}
}

func (s *suite) toolCalls(t *testing.T) {
	t.Parallel()
	// The mocks send each call's arguments in two pieces: the provider must join them.
	want := []llm.Event{
		Text("Reading."),
		ToolCall("call_a", "read_file", `{"file_path":"a.go","note":"naïve – ünïcode"}`),
		ToolCall("call_b", "glob", `{"pattern":"*.go"}`),
		ToolCall("call_c", "list_agents", `{}`),
		done(llm.StopToolUse, llm.Usage{InputTokens: 40, OutputTokens: 20}),
	}
	_, m := s.start(t, NewBackend(false, want...), Faults{}, nil)
	got, err := Collect(t.Context(), m, hello())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	checkEvents(t, got, want)
}

// richRequest is a history with a system prompt, text, a tool round and tools.
func richRequest() *llm.Request {
	return &llm.Request{
		Agent:  "parent",
		Model:  suiteModel,
		System: "You are the suite.",
		Messages: []llm.Message{
			llm.UserText("Read a.go"),
			{Role: llm.RoleAssistant, Content: []llm.Block{
				llm.TextBlock("Looking."),
				{Type: llm.BlockToolUse, ID: "call_1", Name: "read_file", Input: json.RawMessage(`{"file_path":"a.go"}`)},
				{Type: llm.BlockToolUse, ID: "call_2", Name: "glob", Input: json.RawMessage(`{"pattern":"*"}`)},
			}},
			{Role: llm.RoleUser, Content: []llm.Block{
				{Type: llm.BlockToolResult, ToolUseID: "call_1", Content: "package a"},
				{Type: llm.BlockToolResult, ToolUseID: "call_2", Content: "a.go"},
			}},
			{Role: llm.RoleAssistant, Content: []llm.Block{llm.TextBlock("It is package a.")}},
			llm.UserText("Thanks"),
		},
		Tools: []llm.ToolSpec{
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(
				`{"type":"object","properties":{"file_path":{"type":"string"},"limit":{"type":"integer","maximum":12345678901234567890}},"required":["file_path"]}`)},
			{Name: "glob", Description: "Match paths.", Parameters: json.RawMessage(`{"type":"object","properties":{"pattern":{"type":"string"}}}`)},
		},
	}
}

func (s *suite) request(t *testing.T) {
	t.Parallel()
	b := NewBackend(false, Text("ok"), done(llm.StopEndTurn, llm.Usage{InputTokens: 1, OutputTokens: 1}))
	mock, m := s.start(t, b, Faults{}, nil)
	sent := richRequest()
	for range 2 {
		if _, err := Collect(t.Context(), m, sent); err != nil {
			t.Fatalf("Generate: %v", err)
		}
	}
	reqs := b.Requests()
	if len(reqs) != 2 {
		t.Fatalf("backend saw %d requests, want 2", len(reqs))
	}
	// What the mock decoded from the wire is what was sent (the agent is the mock's guess).
	if diff := cmp.Diff(sent, reqs[0], jsonEqual(), cmpopts.IgnoreFields(llm.Request{}, "Agent")); diff != "" {
		t.Errorf("request as the server read it (-sent +read):\n%s", diff)
	}
	if bodies := mock.Requests(); len(bodies) != 2 || string(bodies[0]) != string(bodies[1]) {
		t.Errorf("the same request serialised differently (prompt caches need the same bytes)")
	}
	if !strings.Contains(string(mock.Requests()[0]), "12345678901234567890") {
		t.Errorf("a schema number lost its digits on the way")
	}
}

func (s *suite) usage(t *testing.T) {
	t.Parallel()
	u := llm.Usage{InputTokens: 200, CacheReadInputTokens: 800, OutputTokens: 5}
	want := []llm.Event{Text("ok"), done(llm.StopEndTurn, u)}
	_, m := s.start(t, NewBackend(false, want...), Faults{}, nil)
	got, err := Collect(t.Context(), m, hello())
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	checkEvents(t, got, want)
}

func (s *suite) concurrent(t *testing.T) {
	t.Parallel()
	b := NewBackend(false)
	b.Reply = func(req *llm.Request) ([]llm.Event, error) {
		last := req.Messages[len(req.Messages)-1].Text()
		return []llm.Event{Text("echo: "), Text(last), done(llm.StopEndTurn, llm.Usage{InputTokens: 1, OutputTokens: 1})}, nil
	}
	_, m := s.start(t, b, Faults{}, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			msg := fmt.Sprintf("message %d", i)
			evs, err := Collect(t.Context(), m, &llm.Request{Messages: []llm.Message{llm.UserText(msg)}})
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			if len(evs) != 3 || evs[0].Text+evs[1].Text != "echo: "+msg {
				t.Errorf("call %d: events %+v, want its own echo", i, evs)
			}
		})
	}
	wg.Wait()
}

func (s *suite) earlyBreak(t *testing.T) {
	t.Parallel()
	b := NewBackend(true, Text("first"))
	_, m := s.start(t, b, Faults{}, nil)
	for ev, err := range m.Generate(t.Context(), hello()) {
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if ev.Kind == llm.EventTextDelta {
			break
		}
	}
	await(t, b.Released(), "the server seeing the client go after it stopped ranging")
}

func (s *suite) cancel(t *testing.T) {
	t.Parallel()
	t.Run("before the answer starts", func(t *testing.T) {
		t.Parallel()
		b := NewBackend(true)
		_, m := s.start(t, b, Faults{}, nil)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() {
			select {
			case <-b.Arrived():
				cancel()
			case <-ctx.Done():
			}
		}()
		_, err := Collect(ctx, m, hello())
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
		await(t, b.Released(), "the server seeing the client go")
	})
	t.Run("mid-stream", func(t *testing.T) {
		t.Parallel()
		b := NewBackend(true, Text("thinking"))
		_, m := s.start(t, b, Faults{}, nil)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var err error
		for ev, e := range m.Generate(ctx, hello()) {
			if e != nil {
				err = e
				break
			}
			if ev.Kind == llm.EventTextDelta {
				cancel()
			}
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("error = %v, want context.Canceled", err)
		}
	})
	t.Run("with a cause", func(t *testing.T) {
		t.Parallel()
		b := NewBackend(true)
		_, m := s.start(t, b, Faults{}, nil)
		stopped := errors.New("task_stop")
		ctx, cancel := context.WithCancelCause(t.Context())
		defer cancel(nil)
		go func() {
			select {
			case <-b.Arrived():
				cancel(stopped)
			case <-ctx.Done():
			}
		}()
		_, err := Collect(ctx, m, hello())
		if !errors.Is(err, context.Canceled) || !errors.Is(err, stopped) {
			t.Fatalf("error = %v, want context.Canceled and the cause", err)
		}
	})
}

// cutCase is one way a stream breaks off.
type cutCase struct {
	name string
	mode CutMode
}

// cutModes are the ways a stream breaks off.
func cutModes() []cutCase {
	return []cutCase{{"closed", CutClose}, {"reset", CutReset}, {"ended early", CutEnd}}
}

// threeParts is an answer long enough to be cut after three events.
func threeParts() []llm.Event {
	return []llm.Event{Text("a"), Text("b"), Text("c"), done(llm.StopEndTurn, llm.Usage{InputTokens: 3, OutputTokens: 3})}
}

func (s *suite) cutStream(t *testing.T) {
	t.Parallel()
	for _, c := range cutModes() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, m := s.start(t, NewBackend(false, threeParts()...), Faults{CutAfter: 3, Cut: c.mode}, nil)
			evs, err := Collect(t.Context(), m, hello())
			if !errors.Is(err, llm.ErrStreamCut) {
				t.Fatalf("error = %v, want llm.ErrStreamCut", err)
			}
			if !strings.HasPrefix(err.Error(), s.p.Name+": ") {
				t.Errorf("error %q does not name the provider", err)
			}
			if len(evs) > 2 {
				t.Errorf("events before the cut = %+v, want at most two text deltas", evs)
			}
			for _, ev := range evs {
				if ev.Kind != llm.EventTextDelta {
					t.Errorf("got a %v event before the cut, want only text deltas", ev.Kind)
				}
			}
			if c.mode == CutReset && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("error %v does not say the connection was reset", err)
			}
		})
	}
}

func (s *suite) cutStreamRetried(t *testing.T) {
	t.Parallel()
	policy := retry.Policy{BaseDelay: time.Millisecond}
	for _, c := range cutModes() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := NewBackend(false, threeParts()...)
			_, m := s.start(t, b, Faults{CutAfter: 3, CutTimes: 1, Cut: c.mode}, nil)
			evs, err := Collect(t.Context(), retry.Wrap(m, policy), hello())
			if err != nil {
				t.Fatalf("Generate after one cut: %v", err)
			}
			retries := 0
			last := 0
			for i, ev := range evs {
				if ev.Kind == llm.EventRetry {
					retries, last = retries+1, i+1
				}
			}
			if retries != 1 {
				t.Errorf("%d EventRetry, want 1", retries)
			}
			checkEvents(t, evs[last:], threeParts())
			reqs := b.Requests()
			if len(reqs) != 2 {
				t.Fatalf("backend saw %d requests, want 2", len(reqs))
			}
			if diff := cmp.Diff(reqs[0], reqs[1], jsonEqual()); diff != "" {
				t.Errorf("the retry sent another request:\n%s", diff)
			}
		})
	}
	t.Run("more cuts than retries", func(t *testing.T) {
		t.Parallel()
		b := NewBackend(false, threeParts()...)
		_, m := s.start(t, b, Faults{CutAfter: 3, Cut: CutReset}, nil)
		_, err := Collect(t.Context(), retry.Wrap(m, policy), hello())
		if !errors.Is(err, llm.ErrStreamCut) || !strings.Contains(err.Error(), "gave up after 3 attempts") {
			t.Fatalf("error = %v, want the cut, after 3 attempts", err)
		}
		if n := len(b.Requests()); n != 3 {
			t.Errorf("backend saw %d requests, want 3", n)
		}
	})
}

func (s *suite) errorAnswers(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 403, 429, 500, 502, 503, 529} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			t.Parallel()
			b := NewBackend(false, threeParts()...)
			mock, m := s.start(t, b, Faults{FailFirst: 1, FailStatus: status}, nil)
			_, err := Collect(t.Context(), m, hello())
			var pe *llm.ProviderError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v (%T) is not a *llm.ProviderError", err, err)
			}
			if pe.Provider != s.p.Name || pe.StatusCode != status || !strings.Contains(pe.Message, "injected failure") {
				t.Errorf("ProviderError = %+v, want provider %s, status %d and the server's message", *pe, s.p.Name, status)
			}
			if want := status == 429 || status >= 500; pe.Retryable() != want {
				t.Errorf("Retryable() = %v, want %v", pe.Retryable(), want)
			}
			if pe.InStream {
				t.Error("InStream is set on an error answer")
			}
			if pe.Err == nil {
				t.Error("ProviderError.Err is nil, want the SDK error")
			}
			noKey(t, err)
			if n := len(mock.Requests()); n != 1 {
				t.Errorf("server saw %d requests without SDK retries, want 1", n)
			}
		})
	}
}

func (s *suite) sdkRetries(t *testing.T) {
	t.Parallel()
	b := NewBackend(false, threeParts()...)
	mock, m := s.start(t, b, Faults{FailFirst: 1, FailStatus: http.StatusInternalServerError}, func(c *Client) { c.MaxRetries = 1 })
	evs, err := Collect(t.Context(), m, hello())
	if err != nil {
		t.Fatalf("Generate with MaxRetries 1 after one 500: %v", err)
	}
	checkEvents(t, evs, threeParts())
	if bodies := mock.Requests(); len(bodies) != 2 || string(bodies[0]) != string(bodies[1]) {
		t.Errorf("server saw %d requests, want the same body twice", len(bodies))
	}
}

func (s *suite) errorInStream(t *testing.T) {
	t.Parallel()
	b := NewBackend(false, Text("par"))
	b.Reply = func(*llm.Request) ([]llm.Event, error) {
		return []llm.Event{Text("par")}, &llm.ProviderError{StatusCode: 529, Message: "upstream overloaded"}
	}
	_, m := s.start(t, b, Faults{}, nil)
	evs, err := Collect(t.Context(), m, hello())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *llm.ProviderError", err, err)
	}
	if !pe.InStream || !strings.Contains(pe.Message, "upstream overloaded") || pe.Provider != s.p.Name {
		t.Errorf("ProviderError = %+v, want InStream with the server's message", *pe)
	}
	checkEvents(t, evs, []llm.Event{Text("par")})
}

// closedPort returns a loopback address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func (s *suite) refused(t *testing.T) {
	t.Parallel()
	addr := closedPort(t)
	m, err := s.p.New(Client{BaseURL: "http://" + addr + "/v1", HTTPClient: &http.Client{}, APIKey: suiteKey, Model: suiteModel})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, err = Collect(t.Context(), m, hello())
	var ce *llm.ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *llm.ConnectError", err, err)
	}
	if !ce.Refused() || ce.Provider != s.p.Name {
		t.Errorf("ConnectError = %+v, want a refusal by %s", *ce, s.p.Name)
	}
	if msg := err.Error(); !strings.Contains(msg, "cannot connect to http://"+addr) || !strings.Contains(msg, "connection refused") {
		t.Errorf("message %q does not say it cannot connect to %s, refused", msg, addr)
	}
	if errors.Is(err, llm.ErrStreamCut) {
		t.Errorf("a refused connection reads as a cut stream: %v", err)
	}
	noKey(t, err)
}

func (s *suite) timeout(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		events []llm.Event
	}{
		{"before the answer", nil},
		{"mid-stream", []llm.Event{Text("slow")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := NewBackend(true, tt.events...)
			_, m := s.start(t, b, Faults{}, func(c *Client) {
				c.RequestTimeout, c.TimeoutName = 300*time.Millisecond, "--request-timeout"
			})
			_, err := Collect(t.Context(), m, hello())
			var te *llm.TimeoutError
			if !errors.As(err, &te) {
				t.Fatalf("error %v (%T) is not a *llm.TimeoutError", err, err)
			}
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, llm.ErrStreamCut) {
				t.Errorf("error %v: want a deadline, not a cut stream", err)
			}
			if msg := err.Error(); !strings.Contains(msg, "timed out") || !strings.Contains(msg, "300ms") || !strings.Contains(msg, "--request-timeout") {
				t.Errorf("message %q does not name the timeout and its setting", msg)
			}
			if !retry.Retryable(err) {
				t.Errorf("a timeout is not retried: %v", err)
			}
		})
	}
}

// stallFirst answers like its backend, except that its first call never answers: it
// waits until the client gives up (its request timeout).
type stallFirst struct {
	*Backend
	calls sync.Mutex
	n     int
}

func (m *stallFirst) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	m.calls.Lock()
	m.n++
	first := m.n == 1
	m.calls.Unlock()
	if !first {
		return m.Backend.Generate(ctx, req)
	}
	return func(yield func(llm.Event, error) bool) {
		<-ctx.Done()
	}
}

// A request that hits the request timeout is made again, as a cut stream is, and the
// retry is announced (EventRetry) with the timeout as its cause.
func (s *suite) timeoutRetried(t *testing.T) {
	t.Parallel()
	b := &stallFirst{Backend: NewBackend(false, threeParts()...)}
	mock, m := s.start(t, b, Faults{}, func(c *Client) {
		c.RequestTimeout, c.TimeoutName = 300*time.Millisecond, "--request-timeout"
	})
	evs, err := Collect(t.Context(), retry.Wrap(m, retry.Policy{BaseDelay: time.Millisecond}), hello())
	if err != nil {
		t.Fatalf("Generate after one timeout: %v", err)
	}
	var te *llm.TimeoutError
	if len(evs) == 0 || evs[0].Kind != llm.EventRetry || evs[0].Retry == nil || !errors.As(evs[0].Retry.Err, &te) {
		t.Fatalf("first event = %+v, want an EventRetry caused by the timeout", evs[0])
	}
	checkEvents(t, evs[1:], threeParts())
	if n := len(mock.Requests()); n != 2 {
		t.Errorf("the mock saw %d requests, want 2", n)
	}
}

// An answer past the cap on one answer ends the call with an *llm.AnswerTooLargeError
// naming the cap and its setting, the stream released at once (the server sees the
// client go away while it would stream on); the call is not retried.
func (s *suite) answerTooLarge(t *testing.T) {
	t.Parallel()
	piece := strings.Repeat("x", 400)
	for _, tt := range []struct {
		name   string
		events []llm.Event
	}{
		{"text", []llm.Event{Text(piece), Text(piece), Text(piece), Text(piece)}},
		{"tool call", []llm.Event{ToolCall("call_1", "write_file", `{"content":"`+piece+piece+piece+`"}`)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := NewBackend(true, tt.events...)
			mock, m := s.start(t, b, Faults{}, func(c *Client) {
				c.MaxAnswerBytes, c.MaxAnswerName = 1000, "--max-answer-bytes"
			})
			ctx, cancel := context.WithTimeout(t.Context(), patience) // a provider with no cap waits on the held stream
			defer cancel()
			evs, err := Collect(ctx, retry.Wrap(m, retry.Policy{BaseDelay: time.Millisecond}), hello())
			var tl *llm.AnswerTooLargeError
			if !errors.As(err, &tl) || !errors.Is(err, llm.ErrAnswerTooLarge) || tl.Limit != 1000 || tl.Provider != s.p.Name {
				t.Fatalf("error %v (%T), want an *llm.AnswerTooLargeError of 1000 bytes", err, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "larger than the cap of 1000 bytes") || !strings.Contains(msg, "--max-answer-bytes") {
				t.Errorf("message %q does not name the cap and its setting", msg)
			}
			if retry.Retryable(err) || len(mock.Requests()) != 1 {
				t.Errorf("the call was retried (%d requests)", len(mock.Requests()))
			}
			if n := len(TextOf(evs)); n > 1000 {
				t.Errorf("%d bytes of text came through, past the cap", n)
			}
			await(t, b.Released(), "the server seeing the client go away")
		})
	}
}

func (s *suite) notFound(t *testing.T) {
	t.Parallel()
	mock, _ := s.start(t, NewBackend(false, threeParts()...), Faults{}, nil)
	base := s.p.Misroute(mock.URL())
	m, err := s.p.New(Client{BaseURL: base, HTTPClient: mock.Client(), APIKey: suiteKey, Model: suiteModel})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	_, err = Collect(t.Context(), m, hello())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != http.StatusNotFound {
		t.Fatalf("error %v, want a 404 *llm.ProviderError", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "HTTP 404 from "+strings.TrimSuffix(base, "/")) {
		t.Errorf("message %q does not name the URL under %s", msg, base)
	}
	if !strings.Contains(msg, s.p.NotFoundHint) {
		t.Errorf("message %q does not say %q", msg, s.p.NotFoundHint)
	}
	noKey(t, err)
}

func (s *suite) unauthorized(t *testing.T) {
	t.Parallel()
	_, m := s.start(t, NewBackend(false, threeParts()...), Faults{}, func(c *Client) { c.APIKey = "sk-suite-wrong-key" })
	_, err := Collect(t.Context(), m, hello())
	var pe *llm.ProviderError
	if !errors.As(err, &pe) || pe.StatusCode != http.StatusUnauthorized || pe.Retryable() {
		t.Fatalf("error %v, want a 401 *llm.ProviderError, not retryable", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "HTTP 401") || !strings.Contains(msg, suiteKeyName) {
		t.Errorf("message %q does not say HTTP 401 and where the key came from (%s)", msg, suiteKeyName)
	}
	noKey(t, err)
}

func (s *suite) newErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		c    Client
		want error
	}{
		{"no key", Client{Model: suiteModel}, llm.ErrNoAPIKey},
		{"no model", Client{APIKey: suiteKey}, llm.ErrBadConfig},
		{"base URL without a scheme", Client{APIKey: suiteKey, Model: suiteModel, BaseURL: "localhost:8080/v1"}, llm.ErrBadConfig},
		{"base URL of another scheme", Client{APIKey: suiteKey, Model: suiteModel, BaseURL: "ftp://example.com/v1"}, llm.ErrBadConfig},
	}
	for _, tt := range tests {
		if _, err := s.p.New(tt.c); !errors.Is(err, tt.want) {
			t.Errorf("%s: error = %v, want %v", tt.name, err, tt.want)
		} else {
			noKey(t, err)
		}
	}
	if _, err := s.p.New(Client{APIKey: suiteKey, Model: suiteModel, MaxRetries: -1}); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
