package scripted

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/stoke-cli/stoke/agents/llm"
)

// textChunk is the largest text delta Generate emits, in bytes.
const textChunk = 64

// Model answers requests from a Scenario. It is safe for concurrent use.
type Model struct {
	name    string
	media   []string // the media types it takes (Scenario.Media)
	rules   []*rule
	err     error          // set when a hand-built Scenario does not compile
	hits    []atomic.Int64 // per rule: times chosen
	claimed []atomic.Bool  // per rule: a Once rule has fired
	calls   atomic.Int64   // tool-call id counter
	msgs    atomic.Int64   // message id counter

	mu       sync.Mutex
	requests []llm.Request
	discard  bool                     // DiscardRequests was called
	signals  map[string]chan struct{} // Reply.Signal: closed once posted
}

var _ llm.Model = (*Model)(nil)

// New returns a Model playing s, which should come from Load or Parse. A hand-built
// Scenario is compiled here; if it is invalid every Generate fails with an error
// wrapping llm.ErrBadConfig.
func New(s *Scenario) *Model {
	rules, err := s.compile()
	name := s.Model
	if name == "" {
		name = DefaultModel
	}
	return &Model{
		name:    name,
		media:   s.Media,
		rules:   rules,
		err:     err,
		hits:    make([]atomic.Int64, len(rules)),
		claimed: make([]atomic.Bool, len(rules)),
	}
}

// Open loads the scenario at path and returns a Model playing it.
func Open(path string) (*Model, error) {
	s, err := Load(path)
	if err != nil {
		return nil, err
	}
	return New(s), nil
}

// Name is the scenario's model name.
func (m *Model) Name() string { return m.name }

// CheckInput implements llm.InputChecker: the scenario's media list says which images and
// documents the model takes (by media type; a URL source by "url"); none without one.
func (m *Model) CheckInput(b llm.Block) error {
	if err := llm.CheckMedia(m.name, b, llm.SourceBase64, llm.SourceURL, llm.SourceText); err != nil {
		return err
	}
	mt := b.Source.MediaType
	switch {
	case b.Source.Type == llm.SourceURL:
		mt = "url"
	case b.Source.Type == llm.SourceText && mt == "":
		mt = "text/plain"
	}
	if slices.Contains(m.media, "*") || slices.Contains(m.media, mt) {
		return nil
	}
	reason := "the scenario takes text only (its media key lists what it takes)"
	if len(m.media) > 0 {
		reason = fmt.Sprintf("the scenario takes %s only", strings.Join(m.media, ", "))
	}
	return &llm.InputError{Model: m.name, Type: b.Type, Source: b.Source.Describe(), Reason: reason}
}

// Generate answers req with the first matching rule: text deltas, one EventToolCall per
// tool call, then EventDone. The request is recorded before anything else. With no
// matching rule the sequence yields an error wrapping ErrNoRule.
func (m *Model) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if err := m.generate(ctx, req, yield); err != nil {
			yield(llm.Event{}, err)
		}
	}
}

func (m *Model) generate(ctx context.Context, req *llm.Request, yield func(llm.Event, error) bool) error {
	m.record(req)
	if m.err != nil {
		return m.err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("scripted: %w", context.Cause(ctx))
	}
	v := newView(req)
	i, r := m.pick(v)
	if r == nil {
		return fmt.Errorf("%w: agent %q at step %d, last user text %q", ErrNoRule, req.Agent, v.step, truncate(v.lastUser, 80))
	}
	if name := r.reply.WaitFor; name != "" {
		select {
		case <-m.signal(name):
		case <-ctx.Done():
			return fmt.Errorf("scripted: wait_for %s: %w", name, context.Cause(ctx))
		}
	}
	if err := wait(ctx, r.reply.Delay); err != nil {
		return err
	}
	if r.reply.Error != "" {
		return &llm.ProviderError{Provider: "scripted", StatusCode: r.reply.ErrorStatus, Message: r.reply.Error}
	}
	if r.reply.Partial != "" {
		return m.cutShort(ctx, r, v, yield)
	}
	text, calls, err := m.render(r, v)
	if err != nil {
		return fmt.Errorf("scripted: rules[%d]: %w", i, err)
	}
	if r.reply.Signal != "" {
		defer m.post(r.reply.Signal)
	}
	for chunk := range chunks(text, textChunk) {
		if !yield(llm.Event{Kind: llm.EventTextDelta, Text: chunk}, nil) {
			return nil
		}
	}
	for _, c := range calls {
		if !yield(llm.Event{Kind: llm.EventToolCall, ToolCall: c}, nil) {
			return nil
		}
	}
	stop := llm.StopEndTurn
	if len(calls) > 0 {
		stop = llm.StopToolUse
	}
	if r.reply.StopReason != "" {
		stop = r.reply.StopReason
	}
	model := m.name
	if req.Model != "" {
		model = req.Model
	}
	yield(llm.Event{
		Kind:       llm.EventDone,
		StopReason: stop,
		Usage:      usage(req, text, calls, r.reply.Usage),
		MessageID:  "msg_scripted_" + strconv.FormatInt(m.msgs.Add(1), 10),
		Model:      model,
	}, nil)
	return nil
}

// cutShort streams the Partial text of r, posts its Signal, and holds until ctx ends:
// the call fails with the cancellation, as a stream cut short by it does.
func (m *Model) cutShort(ctx context.Context, r *rule, v *view, yield func(llm.Event, error) bool) error {
	text, err := r.partial.render(v, r.reply.Partial)
	if err != nil {
		return fmt.Errorf("scripted: reply.partial: %w", err)
	}
	for chunk := range chunks(text, textChunk) {
		if !yield(llm.Event{Kind: llm.EventTextDelta, Text: chunk}, nil) {
			return nil
		}
	}
	if r.reply.Signal != "" {
		m.post(r.reply.Signal)
	}
	<-ctx.Done()
	return fmt.Errorf("scripted: partial answer cut short: %w", context.Cause(ctx))
}

// signal returns the channel closed once name is posted.
func (m *Model) signal(name string) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.signals == nil {
		m.signals = map[string]chan struct{}{}
	}
	ch, ok := m.signals[name]
	if !ok {
		ch = make(chan struct{})
		m.signals[name] = ch
	}
	return ch
}

// post posts name (Reply.Signal): the calls waiting for it go on. Idempotent.
func (m *Model) post(name string) {
	ch := m.signal(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-ch:
	default:
		close(ch)
	}
}

// pick returns the first rule matching v and claims it (Once rules fire only once).
func (m *Model) pick(v *view) (int, *rule) {
	for i, r := range m.rules {
		if !r.matches(v) {
			continue
		}
		if r.once && !m.claimed[i].CompareAndSwap(false, true) {
			continue
		}
		m.hits[i].Add(1)
		return i, r
	}
	return -1, nil
}

// render produces the reply text and the tool calls with fresh ids.
func (m *Model) render(r *rule, v *view) (string, []llm.Block, error) {
	text, err := r.text.render(v, r.reply.Text)
	if err != nil {
		return "", nil, err
	}
	calls := make([]llm.Block, 0, len(r.inputs))
	for i, in := range r.inputs {
		rendered, err := renderValue(in, v)
		if err != nil {
			return "", nil, err
		}
		raw, err := json.Marshal(rendered)
		if err != nil {
			return "", nil, fmt.Errorf("marshal reply.tool_calls[%d].input: %w", i, err)
		}
		id := r.reply.ToolCalls[i].ID
		if id == "" {
			id = fmt.Sprintf("call_%s_%d_%d", idPart(v.req.Agent), v.step, m.calls.Add(1))
		}
		calls = append(calls, llm.Block{Type: llm.BlockToolUse, ID: id, Name: r.reply.ToolCalls[i].Name, Input: raw})
	}
	return text, calls, nil
}

// Requests returns copies of every request received, in arrival order.
func (m *Model) Requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]llm.Request, len(m.requests))
	for i := range m.requests {
		out[i] = cloneRequest(&m.requests[i])
	}
	return out
}

// Unused returns the indexes of the rules that were never chosen, or nil when every
// rule fired at least once.
func (m *Model) Unused() []int {
	var out []int
	for i := range m.hits {
		if m.hits[i].Load() == 0 {
			out = append(out, i)
		}
	}
	return out
}

func (m *Model) record(req *llm.Request) {
	m.mu.Lock()
	discard := m.discard
	m.mu.Unlock()
	if discard {
		return
	}
	c := cloneRequest(req)
	m.mu.Lock()
	m.requests = append(m.requests, c)
	m.mu.Unlock()
}

// DiscardRequests stops recording requests (and drops those recorded): a run that never
// reads them (the CLI) does not keep a copy of every history it sent.
func (m *Model) DiscardRequests() {
	m.mu.Lock()
	m.discard, m.requests = true, nil
	m.mu.Unlock()
}

// wait sleeps for d or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("scripted: delay: %w", context.Cause(ctx))
	}
}

// usage estimates tokens as bytes/4 (at least 1), unless the reply fixes them.
func usage(req *llm.Request, text string, calls []llm.Block, fixed *Usage) llm.Usage {
	if fixed != nil {
		return fixed.toLLM()
	}
	in, _ := json.Marshal(struct {
		System   string         `json:"system"`
		Messages []llm.Message  `json:"messages"`
		Tools    []llm.ToolSpec `json:"tools"`
	}{req.System, req.Messages, req.Tools})
	out := len(text)
	for _, c := range calls {
		out += len(c.Name) + len(c.Input)
	}
	return llm.Usage{InputTokens: tokens(len(in)), OutputTokens: tokens(out)}
}

func tokens(n int) int64 { return max(1, int64(n)/4) }

// chunks splits s into pieces of at most n bytes on rune boundaries.
func chunks(s string, n int) iter.Seq[string] {
	return func(yield func(string) bool) {
		for len(s) > 0 {
			end := min(n, len(s))
			for end < len(s) && end > 0 && !utf8.RuneStart(s[end]) {
				end--
			}
			if end == 0 {
				end = min(n, len(s))
			}
			if !yield(s[:end]) {
				return
			}
			s = s[end:]
		}
	}
}

// idPart keeps the characters tool-call ids allow ([A-Za-z0-9_-]).
func idPart(agent string) string {
	if agent == "" {
		return "agent"
	}
	return llm.SanitizeName(agent)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func cloneRequest(r *llm.Request) llm.Request {
	c := *r
	if r.Messages != nil {
		c.Messages = make([]llm.Message, len(r.Messages))
		for i, msg := range r.Messages {
			c.Messages[i] = llm.Message{Role: msg.Role}
			if msg.Content != nil {
				c.Messages[i].Content = make([]llm.Block, len(msg.Content))
				for j, b := range msg.Content {
					b.Input = cloneBytes(b.Input)
					c.Messages[i].Content[j] = b
				}
			}
		}
	}
	if r.Tools != nil {
		c.Tools = make([]llm.ToolSpec, len(r.Tools))
		for i, t := range r.Tools {
			t.Parameters = cloneBytes(t.Parameters)
			c.Tools[i] = t
		}
	}
	return c
}

func cloneBytes[T ~[]byte](b T) T {
	if b == nil {
		return nil
	}
	return append(T{}, b...)
}
