package cassette

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
)

// RecordConfig configures a Recorder.
type RecordConfig struct {
	// Path is the cassette to write. It is written as Path+".partial", one entry per
	// answered call, and renamed to Path by Close.
	Path string
	// Provider and Version (stoke's) go into the header.
	Provider string
	Version  string
	// CWD is the workspace root: masked in fingerprints, so that a replay in another
	// checkout matches.
	CWD string
	// Secrets are values that must never reach the cassette (the API key): they are
	// replaced by [REDACTED] wherever they appear.
	Secrets []string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// PartialSuffix is added to the cassette's name while it is being recorded.
const PartialSuffix = ".partial"

// Recorder is an llm.Model that passes every call to another model and writes it to a
// cassette: the agent, the call's index, the request's fingerprint and outline, and the
// full answer. It is safe for concurrent use.
//
// Each answered call is appended to Path+".partial" and synced before the answer's last
// event reaches the caller's next step, so a process that dies mid-run leaves a cassette
// of every call answered until then; Close renames the file to Path.
type Recorder struct {
	inner  llm.Model
	cfg    RecordConfig
	norm   *normaliser
	redact *strings.Replacer // nil: no secrets
	l      *launches

	mu       sync.Mutex
	f        *os.File
	err      error // the first write error; later calls fail with it
	requests int   // requests sent so far (the last Seq given)
	ended    []int // calls whose turns ended since the last entry was written
	stops    map[int]func() bool
	agents   *agentTable
	entries  int
	closed   bool
}

// Unwrap returns the recorded model (llm.Wrapper: it decides which media it takes).
func (r *Recorder) Unwrap() llm.Model { return r.inner }

// Record starts a recording of inner's calls into cfg.Path.
func Record(inner llm.Model, cfg RecordConfig) (*Recorder, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	norm, err := newNormaliser(DefaultVolatile(), cfg.CWD, cfg.Secrets)
	if err != nil {
		return nil, err
	}
	seed := make([]byte, 16)
	_, _ = rand.Read(seed) // crypto/rand.Read never fails (Go 1.24+)
	r := &Recorder{
		inner: inner, cfg: cfg, norm: norm, l: newLaunches(seed),
		stops: make(map[int]func() bool), agents: newAgentTable(norm),
	}
	var pairs []string
	for _, s := range cfg.Secrets {
		if len(s) >= minSecret {
			pairs = append(pairs, s, Redacted)
		}
	}
	if len(pairs) > 0 {
		r.redact = strings.NewReplacer(pairs...)
	}
	// A new file, never one already there: a FILE.partial a checkout holds may be a
	// symbolic link to a file elsewhere, which the recording would overwrite and Close
	// would rename into FILE.
	partial := cfg.Path + PartialSuffix
	if err := os.Remove(partial); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: record: %w", llm.ErrBadConfig, err)
	}
	f, err := os.OpenFile(partial, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: record: %w", llm.ErrBadConfig, err)
	}
	r.f = f
	name := strings.TrimSuffix(filepath.Base(cfg.Path), filepath.Ext(cfg.Path))
	head, err := encodeYAML(struct {
		Name     string `yaml:"name"`
		Model    string `yaml:"model"`
		Cassette Header `yaml:"cassette"`
	}{name, inner.Name(), Header{
		Version: Version, Provider: cfg.Provider, Stoke: cfg.Version,
		RecordedAt: cfg.Now().UTC().Format(time.RFC3339),
		Seed:       hex.EncodeToString(seed), Volatile: DefaultVolatile(),
	}})
	if err == nil {
		err = r.write(append([]byte(fileComment), append(head, "rules:\n"...)...))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("record: %w", err)
	}
	return r, nil
}

// fileComment opens every cassette.
const fileComment = "# A stoke cassette: the model calls of one run, recorded with --record.\n" +
	"# Replay it with `stoke --replay FILE`; docs/record-replay.md explains the format.\n"

// Name is the recorded model's name.
func (r *Recorder) Name() string { return r.inner.Name() }

// NewTaskID names the task launched by the tool call toolUseID (agents.RegistryConfig.NewID).
func (r *Recorder) NewTaskID(toolUseID string) string { return r.l.newTaskID(toolUseID) }

// Generate passes the call to the recorded model and writes it to the cassette once its
// answer has ended. A call whose entry cannot be written fails with the write error.
func (r *Recorder) Generate(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		b := r.agents.begin(ctx, r.l, req)
		defer b.end()
		who := b.who
		r.mu.Lock()
		if r.err != nil {
			err := r.err
			r.mu.Unlock()
			yield(llm.Event{}, err)
			return
		}
		r.requests++
		seq := r.requests
		r.stops[seq] = context.AfterFunc(ctx, func() { r.turnEnded(seq) })
		r.mu.Unlock()

		e := &Entry{Agent: who.agent, Once: true}
		e.When.Step = step(req)
		e.Call = Call{Task: who.task, Index: b.index, Seq: seq, Fingerprint: b.fp}
		b.a.outline(&e.Call, req.Model, b.keep)
		start := r.cfg.Now()
		var (
			text    strings.Builder
			calls   []llm.Block
			done    llm.Event
			callErr error
			stopped bool
		)
		for ev, err := range r.inner.Generate(ctx, req) {
			if err != nil {
				callErr = err
				break
			}
			switch ev.Kind {
			case llm.EventTextDelta:
				text.WriteString(ev.Text)
			case llm.EventToolCall:
				calls = append(calls, ev.ToolCall)
				r.l.sawToolCall(who, b.index, len(calls), ev.ToolCall.ID)
			case llm.EventDone:
				done = ev
			case llm.EventRetry:
				// The call starts over (a retrying provider): what it streamed so far is
				// void, for the runtime as here.
				text.Reset()
				calls = calls[:0]
			}
			if !yield(ev, nil) {
				stopped = true
				break
			}
		}
		e.Call.Duration = r.cfg.Now().Sub(start).Round(time.Millisecond)
		e.Reply = r.reply(text.String(), calls, done, &e.Call)
		if callErr != nil || stopped {
			e.Call.Cancelled = ctx.Err() != nil
			msg := "the caller stopped reading the answer"
			if callErr != nil {
				msg = callErr.Error()
			}
			var pe *llm.ProviderError
			if errors.As(callErr, &pe) {
				msg, e.Reply.ErrorStatus, e.Call.ErrorProvider = pe.Message, pe.StatusCode, pe.Provider
			}
			e.Reply.Error = r.scrub(msg)
			if e.Reply.Error == "" {
				e.Reply.Error = "error"
			}
		}
		werr := r.append(e)
		switch {
		case callErr != nil:
			yield(llm.Event{}, callErr)
		case werr != nil && !stopped:
			// The answer was streamed; its entry could not be kept. Fail the run rather
			// than leave a cassette that silently misses calls.
			yield(llm.Event{}, werr)
		}
	}
}

// outline fills c's request outline: what changed since the agent's previous entry.
func (a *agentState) outline(c *Call, model string, keep int) {
	o := a.h.outline(model)
	c.Model = o.Model
	if a.calls == 1 || o.System != a.system {
		c.System, a.system = o.System, o.System
	}
	if a.calls == 1 || !equalStrings(o.Tools, a.tools) {
		tools := append([]string{}, o.Tools...)
		c.Tools, a.tools = &tools, tools
	}
	c.Keep = keep
	for _, m := range o.Messages[keep:] {
		c.Messages = append(c.Messages, MsgLines(m))
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// reply is the recorded answer, secrets removed.
func (r *Recorder) reply(text string, calls []llm.Block, done llm.Event, c *Call) Reply {
	out := Reply{Literal: true, Text: r.scrub(text), StopReason: done.StopReason}
	if done.Kind == llm.EventDone {
		u := done.Usage
		out.Usage = &scripted.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheCreationInputTokens: u.CacheCreationInputTokens, CacheReadInputTokens: u.CacheReadInputTokens}
		c.MessageID, c.ResponseModel = r.scrub(done.MessageID), r.scrub(done.Model)
	}
	for _, b := range calls {
		tc := ToolCall{ID: r.scrub(b.ID), Name: r.scrub(b.Name)}
		in := []byte(r.scrub(string(bytes.TrimSpace(b.Input))))
		if len(in) == 0 {
			in = []byte("{}")
		}
		n, err := jsonToNode(in)
		if err != nil {
			// Not JSON: the runtime wraps such arguments the same way.
			n, _ = jsonToNode(mustJSON(map[string]string{"_raw_arguments": string(in)}))
		}
		tc.Input = *n
		out.ToolCalls = append(out.ToolCalls, tc)
	}
	return out
}

func (r *Recorder) scrub(s string) string {
	if r.redact == nil {
		return s
	}
	return r.redact.Replace(s)
}

// append writes e as the next entry, with the events that came before its answer.
func (r *Recorder) append(e *Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if r.closed {
		return errors.New("record: the cassette is closed")
	}
	e.Call.After = r.requests
	e.Call.Ended, r.ended = r.ended, nil
	data, err := encodeEntry(e)
	if err == nil {
		data = r.scrubBytes(data)
		err = r.write(data)
	}
	if err != nil {
		r.err = fmt.Errorf("record: write %s: %w", r.f.Name(), err)
		return r.err
	}
	r.entries++
	return nil
}

// scrubBytes is the last guard: a secret that survived in some field (it cannot, but a
// cassette is committed to a repository) is replaced in the encoded entry.
func (r *Recorder) scrubBytes(data []byte) []byte {
	for _, s := range r.cfg.Secrets {
		if len(s) >= minSecret && bytes.Contains(data, []byte(s)) {
			data = bytes.ReplaceAll(data, []byte(s), []byte("REDACTED"))
		}
	}
	return data
}

// write appends data and syncs it. Call with r.mu held (or before r is shared).
func (r *Recorder) write(data []byte) error {
	if _, err := r.f.Write(data); err != nil {
		return err
	}
	return r.f.Sync()
}

// turnEnded records that the turn of call seq ended (its context is done).
func (r *Recorder) turnEnded(seq int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.stops, seq)
	if !r.closed {
		r.ended = append(r.ended, seq)
	}
}

// Calls reports how many calls were written.
func (r *Recorder) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.entries
}

// Close ends the recording: the end marker is written, the file synced and renamed to
// Path. Call it once no call is running. It returns the first write error, if any.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return r.err
	}
	r.closed = true
	for seq, stop := range r.stops {
		stop()
		delete(r.stops, seq)
	}
	err := r.err
	if err == nil {
		err = r.write(fmt.Appendf(nil, "%s: %d calls\n", endMarker, r.entries))
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(r.f.Name(), r.cfg.Path)
	}
	if err == nil {
		err = syncDir(filepath.Dir(r.cfg.Path))
	}
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("record: %w", err)
	}
	return r.err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// step is the scripted provider's step of req: 1 + its assistant messages.
func step(req *llm.Request) int {
	n := 1
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			n++
		}
	}
	return n
}

func mustJSON(v any) []byte {
	out, _ := json.Marshal(v) // a map of strings always marshals
	return out
}
