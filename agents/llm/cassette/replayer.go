package cassette

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
)

// Replay modes (--replay-mode) and timings (--replay-timing).
const (
	// ModeStrict fails the run at the first request that differs from its recording.
	ModeStrict = "strict"
	// ModeLenient answers such a request anyway, warns, and answers every call as soon as
	// it is made (not in the recorded order).
	ModeLenient = "lenient"
	// TimingZero answers at once.
	TimingZero = "zero"
	// TimingReal takes as long as the recorded answer took.
	TimingReal = "real"
)

// ErrMismatch is wrapped by the error of a strict replay whose request differs from the
// recorded one; the message names the agent, the call and the first differing field.
var ErrMismatch = errors.New("the request differs from the recording")

// ErrNotRecorded is wrapped by the error of a call the cassette does not hold.
var ErrNotRecorded = errors.New("not in the cassette")

// ReplayConfig configures a Replayer.
type ReplayConfig struct {
	// Mode is ModeStrict (default) or ModeLenient; Timing TimingZero (default) or TimingReal.
	Mode   string
	Timing string
	// Model, when set, is the model name requests are expected to carry (--model);
	// default the cassette's.
	Model string
	// CWD is the workspace root, masked in fingerprints like the recording's.
	CWD string
	// Secrets are masked in fingerprints like the recording's (which were redacted).
	Secrets []string
	// Logger receives the warnings of a lenient replay; nil discards them.
	Logger *slog.Logger
	// OnFail, when set, is called once with the error that ended a strict replay, so
	// that the caller can end the run with it whichever agent made the call.
	OnFail func(error)
}

// Replayer is an llm.Model that answers every call from a cassette, by the agent's
// identity and the call's index, with no network. It is safe for concurrent use.
//
// A strict replay checks each request against the recorded fingerprint and answers in
// the recorded order: an answer waits until the requests and the ends of turns that came
// before it in the recording have come in the replay too. That is what keeps parallel
// agents deterministic: a background agent's answer is held back until the parent has
// sent the request it sent in the recording before that agent finished, so the parent's
// history holds the same notifications at the same places.
type Replayer struct {
	f      *File
	cfg    ReplayConfig
	norm   *normaliser
	l      *launches
	index  map[identity]map[int]int // identity -> call index -> position in f.Rules
	caller map[int]identity         // recorded Seq -> who made the call
	inputs [][]json.RawMessage      // per entry, per tool call

	mu       sync.Mutex
	wake     chan struct{} // closed and replaced at every change
	done     []bool        // per entry: answered, or given up
	prefix   int           // entries [0, prefix) are all done
	arrived  map[int]bool  // requests (by Seq) that came in
	requests int           // requests [1, requests] have all come in
	ended    map[int]bool  // calls (by Seq) whose turns ended
	stops    []func() bool
	agents   *agentTable
	failed   error
}

// CheckInput implements llm.InputChecker: a replay answers from its recording whatever
// the messages hold, as the recorded model took them.
func (p *Replayer) CheckInput(llm.Block) error { return nil }

// Open loads the cassette at path for replay. A partial cassette (a recording whose
// process died) is replayed as far as it goes, with a warning.
func Open(path string, cfg ReplayConfig) (*Replayer, error) {
	f, partial, err := Load(path)
	if err != nil {
		return nil, err
	}
	p, err := NewReplayer(f, cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: cassette %s: %w", llm.ErrBadConfig, path, err)
	}
	if partial {
		p.cfg.Logger.Warn("the cassette is a partial recording (its process died): replaying the calls it holds",
			"cassette", path, "calls", len(f.Rules))
	}
	return p, nil
}

// NewReplayer returns a Replayer of f, which should come from Load or Parse.
func NewReplayer(f *File, cfg ReplayConfig) (*Replayer, error) {
	var err error
	if cfg.Mode, err = oneOf("replay mode", cfg.Mode, ModeStrict, ModeLenient); err != nil {
		return nil, err
	}
	if cfg.Timing, err = oneOf("replay timing", cfg.Timing, TimingZero, TimingReal); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	norm, err := newNormaliser(f.Cassette.Volatile, cfg.CWD, cfg.Secrets)
	if err != nil {
		return nil, err
	}
	seed, err := hex.DecodeString(f.Cassette.Seed)
	if err != nil {
		return nil, fmt.Errorf("cassette.seed: %w", err)
	}
	p := &Replayer{
		f: f, cfg: cfg, norm: norm, l: newLaunches(seed),
		index: make(map[identity]map[int]int), caller: make(map[int]identity), inputs: make([][]json.RawMessage, len(f.Rules)),
		wake: make(chan struct{}), done: make([]bool, len(f.Rules)),
		arrived: make(map[int]bool), ended: make(map[int]bool), agents: newAgentTable(norm),
	}
	for i := range f.Rules {
		e := &f.Rules[i]
		id := e.identity()
		if p.index[id] == nil {
			p.index[id] = make(map[int]int)
		}
		p.index[id][e.Call.Index] = i
		p.caller[e.Call.Seq] = id
		for j := range e.Reply.ToolCalls {
			in, err := nodeToJSON(&e.Reply.ToolCalls[j].Input)
			if err != nil {
				return nil, fmt.Errorf("rules[%d].reply.tool_calls[%d].input: %w", i, j, err)
			}
			p.inputs[i] = append(p.inputs[i], in)
		}
	}
	return p, nil
}

// OnFail sets ReplayConfig.OnFail. Call it before the first call.
func (p *Replayer) OnFail(f func(error)) {
	p.mu.Lock()
	p.cfg.OnFail = f
	p.mu.Unlock()
}

// Name is the model name of the recording (or ReplayConfig.Model).
func (p *Replayer) Name() string {
	switch {
	case p.cfg.Model != "":
		return p.cfg.Model
	case p.f.Model != "":
		return p.f.Model
	}
	return "scripted"
}

// NewTaskID names the task launched by the tool call toolUseID, as the recording did.
func (p *Replayer) NewTaskID(toolUseID string) string { return p.l.newTaskID(toolUseID) }

// Generate answers req from the cassette.
func (p *Replayer) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		if err := p.generate(ctx, req, yield); err != nil {
			yield(llm.Event{}, err)
		}
	}
}

func (p *Replayer) generate(ctx context.Context, req *llm.Request, yield func(llm.Event, error) bool) error {
	arrival := time.Now()
	b := p.agents.begin(ctx, p.l, req)
	defer b.end()
	who, call := b.who, b.index
	pos, ok := p.index[who][call]
	if !ok {
		return p.fail(fmt.Errorf("replay: agent %s, call %d: %w (%s)", who, call, ErrNotRecorded, p.recordedCalls(who)))
	}
	e := &p.f.Rules[pos]
	strict := p.cfg.Mode == ModeStrict
	if err := p.arrive(ctx, e.Call.Seq); err != nil {
		return err
	}
	if b.fp != e.Call.Fingerprint {
		field := firstDifference(p.recordedOutline(who, call), b.a.h.outline(req.Model))
		if field == "" {
			field = "fingerprint (the outline agrees: was the cassette edited?)"
		}
		if strict {
			return p.fail(fmt.Errorf("replay: agent %s, call %d: %w at %s (re-record the cassette, or replay with --replay-mode lenient)",
				who, call, ErrMismatch, field))
		}
		p.cfg.Logger.Warn("replay: the request differs from the recording; answering as recorded",
			"agent", who.String(), "call", call, "field", field)
	}
	if strict {
		if err := p.awaitTurn(ctx, pos); err != nil {
			return err
		}
	} else {
		p.finish(pos)
	}
	if p.cfg.Timing == TimingReal {
		if err := sleepUntil(ctx, arrival.Add(e.Call.Duration)); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	return p.answer(ctx, who, call, pos, yield)
}

// answer streams the recorded reply of entry pos.
func (p *Replayer) answer(ctx context.Context, who identity, call, pos int, yield func(llm.Event, error) bool) error {
	e := &p.f.Rules[pos]
	r := &e.Reply
	if r.Text != "" && !yield(llm.Event{Kind: llm.EventTextDelta, Text: r.Text}, nil) {
		return nil
	}
	if e.Call.Cancelled {
		<-ctx.Done() // the recorded call ended with its context: so does this one
		return fmt.Errorf("replay: %w", context.Cause(ctx))
	}
	if r.Error != "" {
		if e.Call.ErrorProvider != "" {
			return &llm.ProviderError{Provider: e.Call.ErrorProvider, StatusCode: r.ErrorStatus, Message: r.Error}
		}
		return errors.New(r.Error)
	}
	for j, tc := range r.ToolCalls {
		p.l.sawToolCall(who, call, j+1, tc.ID)
	}
	for j, tc := range r.ToolCalls {
		b := llm.Block{Type: llm.BlockToolUse, ID: tc.ID, Name: tc.Name, Input: p.inputs[pos][j]}
		if !yield(llm.Event{Kind: llm.EventToolCall, ToolCall: b}, nil) {
			return nil
		}
	}
	var u llm.Usage
	if r.Usage != nil {
		u = llm.Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
			CacheCreationInputTokens: r.Usage.CacheCreationInputTokens, CacheReadInputTokens: r.Usage.CacheReadInputTokens}
	}
	yield(llm.Event{Kind: llm.EventDone, StopReason: r.StopReason, Usage: u, MessageID: e.Call.MessageID, Model: e.Call.ResponseModel}, nil)
	return nil
}

// arrive records that the request recorded as seq came in, and watches for the end of its turn.
func (p *Replayer) arrive(ctx context.Context, seq int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed != nil {
		return p.failed
	}
	p.arrived[seq] = true
	for p.arrived[p.requests+1] {
		p.requests++
	}
	p.stops = append(p.stops, context.AfterFunc(ctx, func() {
		p.mu.Lock()
		p.ended[seq] = true
		p.changedLocked()
		p.mu.Unlock()
	}))
	p.changedLocked()
	return nil
}

// awaitTurn waits until entry pos may be answered: every entry before it answered (or
// given up), the requests sent before its answer in the recording sent, and the turns
// that ended before it ended. A call whose context ends while it waits gives up its turn.
func (p *Replayer) awaitTurn(ctx context.Context, pos int) error {
	c := &p.f.Rules[pos].Call
	for {
		p.mu.Lock()
		if p.failed != nil {
			p.mu.Unlock()
			return p.failed
		}
		if p.prefix == pos && p.requests >= c.After && p.endedAll(c.Ended, p.f.Rules[pos].identity()) {
			p.finishLocked(pos)
			p.mu.Unlock()
			return nil
		}
		wake := p.wake
		p.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			if c.Cancelled {
				p.finish(pos) // the recorded call was cancelled too: its turn has come
				return nil
			}
			p.finish(pos)
			return fmt.Errorf("replay: %w", context.Cause(ctx))
		}
	}
}

// endedAll reports whether every call in seqs has ended. The calls of who (the waiting
// call's agent, itself included) are skipped: they were answered before it, one at a
// time, and a turn of who that ended between two of its calls when recorded may go on
// in the replay (an agent whose notifications were already queued as it finished goes
// on with them in the same turn); that turn cannot end before this call is answered.
// The requests are the same either way: the fingerprint says so.
func (p *Replayer) endedAll(seqs []int, who identity) bool {
	for _, s := range seqs {
		if p.caller[s] != who && !p.ended[s] {
			return false
		}
	}
	return true
}

func (p *Replayer) finish(pos int) {
	p.mu.Lock()
	p.finishLocked(pos)
	p.mu.Unlock()
}

func (p *Replayer) finishLocked(pos int) {
	p.done[pos] = true
	for p.prefix < len(p.done) && p.done[p.prefix] {
		p.prefix++
	}
	p.changedLocked()
}

func (p *Replayer) changedLocked() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// fail ends a strict replay with err: every waiting and later call fails with it.
func (p *Replayer) fail(err error) error {
	if p.cfg.Mode != ModeStrict {
		return err
	}
	p.mu.Lock()
	first := p.failed == nil
	if first {
		p.failed = err
		p.changedLocked()
	}
	err, onFail := p.failed, p.cfg.OnFail
	p.mu.Unlock()
	if first && onFail != nil {
		onFail(err)
	}
	return err
}

// recordedCalls says how many calls of who the cassette holds, for errors.
func (p *Replayer) recordedCalls(who identity) string {
	n := len(p.index[who])
	if n == 0 {
		return "the recording has no such agent"
	}
	return fmt.Sprintf("the recording has %d calls of this agent", n)
}

// recordedOutline rebuilds the outline of who's call-th recorded request from the
// entries of its calls.
func (p *Replayer) recordedOutline(who identity, call int) reqOutline {
	var o reqOutline
	for i := 1; i <= call; i++ {
		pos, ok := p.index[who][i]
		if !ok {
			break
		}
		c := &p.f.Rules[pos].Call
		o.Model = c.Model
		if c.System != "" {
			o.System = c.System
		}
		if c.Tools != nil {
			o.Tools = *c.Tools
		}
		keep := min(c.Keep, len(o.Messages))
		msgs := o.Messages[:keep:keep]
		for _, m := range c.Messages {
			msgs = append(msgs, msgOutline(m))
		}
		o.Messages = msgs
	}
	return o
}

// Unplayed lists the recorded calls the replay never made ("agent X, call N"), in
// recorded order.
func (p *Replayer) Unplayed() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for i, d := range p.done {
		if !d {
			e := &p.f.Rules[i]
			out = append(out, fmt.Sprintf("agent %s, call %d", e.identity(), e.Call.Index))
		}
	}
	return out
}

// Close stops watching the contexts of the calls made. Call it once no call is running.
func (p *Replayer) Close() {
	p.mu.Lock()
	stops := p.stops
	p.stops = nil
	p.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// oneOf returns v, or def (the first allowed value) when v is empty.
func oneOf(what, v string, allowed ...string) (string, error) {
	if v == "" {
		return allowed[0], nil
	}
	if !slices.Contains(allowed, v) {
		return "", fmt.Errorf("%s %q: want one of %s", what, v, strings.Join(allowed, ", "))
	}
	return v, nil
}

func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
