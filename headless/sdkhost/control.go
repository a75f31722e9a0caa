package sdkhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/streamjson"
)

// errHostClosed: stdin reached EOF, so the host can no longer answer a control request.
var errHostClosed = errors.New("the host closed stdin: no control response can arrive")

// errHostCancelled: the host withdrew one of stoke's control requests (control_cancel_request).
var errHostCancelled = errors.New("the host cancelled the request")

// ControlHandler answers the control requests the host sends (*Host is one).
// HandleControl is called on the stdin reader's goroutine, one request at a time, in stdin
// order; it must not wait for anything that needs the reader (a control response, another
// stdin line). A nil response is written as {}. An error is written as an error reply,
// whose error_code is a *ControlError's Code (codeFailed for any other error).
type ControlHandler interface {
	HandleControl(in streamjson.Input) (response any, err error)
}

// ControlPlane is the stream-json stdin of a session and the control protocol spoken on it.
// One goroutine (read) reads stdin and routes each line by type: a user message to the turn
// queue, a control_request to the handler (answered at once with a control_response), a
// control_response to the pending request it answers, a control_cancel_request to the
// pending request it cancels. The reader never waits for a turn, so an interrupt is read
// while a turn runs.
//
// The first line is read before the session exists and handed to Start, so that an
// initialize request is known before anything is built; the reader then waits for Attach
// before routing anything, line 1 included.
type ControlPlane struct {
	log *slog.Logger
	dec *streamjson.Decoder
	// answer: control requests are answered (stream-json output). Otherwise they are
	// ignored, since a reply would corrupt a text or json output.
	answer bool

	first chan firstLine // the first line (or EOF/error), buffered
	ready chan struct{}  // closed by Attach
	stop  chan struct{}  // closed by Close: the run is over
	done  chan struct{}  // closed when read returns
	queue *turnQueue     // user turns, in stdin order
	fwd   sync.WaitGroup // the forwarder of prompts
	once  sync.Once      // closes stop
	rmu   sync.Mutex     // held while a line is routed, and by close
	hmu   sync.Mutex     // guards h and enc (set once by Attach)
	h     ControlHandler // set by Attach
	enc   *streamjson.Encoder

	// initLine is the line of the initialize request Start read (0: none); initErr says
	// why it cannot be applied, init what it asks for. Set before Attach, read-only
	// afterwards.
	initLine int
	initErr  error
	init     initialize
	// initAnswered: Attach answered the initialize request; the reader skips it.
	initAnswered bool

	mu      sync.Mutex
	pending map[string]chan controlReply // stoke's requests awaiting a control_response
	closed  error                        // set at stdin EOF or read error: no reply can come
}

// firstLine is what the reader found first on stdin.
type firstLine struct {
	in  streamjson.Input
	err error // io.EOF for an empty stdin
}

// controlReply is the host's answer to one of stoke's control requests.
type controlReply struct {
	response json.RawMessage // the response object of a success reply
	err      error
}

// newControlPlane starts the stdin reader. Callers must call Close when the run is over.
func newControlPlane(stdin io.Reader, answer bool, log *slog.Logger) *ControlPlane {
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	c := &ControlPlane{
		log:     log,
		dec:     streamjson.NewDecoder(stdin),
		answer:  answer,
		first:   make(chan firstLine, 1),
		ready:   make(chan struct{}),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		queue:   newTurnQueue(),
		pending: make(map[string]chan controlReply),
	}
	go c.read()
	return c
}

// peek waits for the first stdin line, which the reader still routes after Attach. It
// returns io.EOF for an empty stdin, a decode or read error as it came, or ctx's cause.
func (c *ControlPlane) peek(ctx context.Context) (streamjson.Input, error) {
	select {
	case f := <-c.first:
		c.first <- f // keep it for the reader
		return f.in, f.err
	case <-ctx.Done():
		return streamjson.Input{}, context.Cause(ctx)
	}
}

// Attach lets the reader route lines: control requests to h (nil when they are not
// answered), replies written with enc. The initialize request Start read is answered
// before Attach returns, so its reply is the first line of the session's output, and
// stoke's own requests to the host (an in-process MCP server's mcp_message) may follow.
func (c *ControlPlane) Attach(h ControlHandler, enc *streamjson.Encoder) {
	c.hmu.Lock()
	c.h, c.enc = h, enc
	c.hmu.Unlock()
	if c.initLine != 0 {
		in, _ := c.peek(context.Background())
		c.rmu.Lock()
		c.answerRequest(in)
		c.rmu.Unlock()
		c.initAnswered = true
	}
	close(c.ready)
}

// InitError says why the host's initialize request cannot be applied; nil when it can, or
// when there was none. The session must not start without what it asked for: the caller
// answers it with RefuseInitialize and ends the run.
func (c *ControlPlane) InitError() error { return c.initErr }

// RefuseInitialize answers the initialize request with an error reply
// (initialize_failed) naming InitError, on w: the SDK rejects the session with that
// message (Qwen Code's SDK throws it from the query; the Claude Agent SDK reports the
// exit and stoke's stderr).
func (c *ControlPlane) RefuseInitialize(w io.Writer, sessionID string) {
	if c.initErr == nil {
		return
	}
	in, _ := c.peek(context.Background())
	enc := streamjson.NewEncoder(w, sessionID, nil)
	reply := streamjson.NewControlError(in.RequestID, "initialize: "+c.initErr.Error(), codeInitialize)
	if err := enc.Encode(reply); err != nil {
		c.log.Debug("write initialize reply", "err", err)
	}
}

// Close ends the control plane: pending requests fail, the forwarder stops, and a line
// being routed is finished; after Close returns the reader writes and routes nothing.
// The reader goroutine itself returns at stdin EOF, or, if it is blocked in a Read when
// Close is called, as soon as that Read returns (at the latest when the process exits):
// stdin cannot be unblocked portably, so Close does not wait for it (Done tells).
func (c *ControlPlane) Close() {
	c.once.Do(func() { close(c.stop) })
	c.failPending(errHostClosed)
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.fwd.Wait()
}

// read is the stdin reader goroutine.
func (c *ControlPlane) read() {
	defer close(c.done)
	in, err := c.dec.Next()
	c.first <- firstLine{in: in, err: err}
	select {
	case <-c.ready:
	case <-c.stop:
		return
	}
	<-c.first // peek has put it back (or was never called)
	if c.initAnswered {
		in, err = c.dec.Next()
	}
	for {
		if !c.handle(in, err) {
			return
		}
		in, err = c.dec.Next()
	}
}

// handle routes one line, or records the end of stdin; false when reading is over. It runs
// under rmu, so that once Close has returned nothing more is written.
func (c *ControlPlane) handle(in streamjson.Input, err error) bool {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	select {
	case <-c.stop:
		return false
	default:
	}
	if err != nil {
		c.end(err)
		return false
	}
	c.route(in)
	return true
}

// end records the end of stdin: EOF closes the turn queue; another error is queued after
// the user turns read before it (the run ends with it once they have run).
func (c *ControlPlane) end(err error) {
	if errors.Is(err, io.EOF) {
		c.queue.close(nil)
		c.failPending(errHostClosed)
		return
	}
	c.queue.close(err)
	c.failPending(fmt.Errorf("%w: %w", errHostClosed, err))
}

func (c *ControlPlane) route(in streamjson.Input) {
	switch in.Kind {
	case streamjson.InputUser:
		c.queue.push(userTurn{msg: in.Message, line: in.Line})
	case streamjson.InputControlRequest:
		if !c.answer {
			c.log.Debug("control request ignored: it is answered only with --output-format stream-json", "line", in.Line, "subtype", in.Subtype)
			return
		}
		c.answerRequest(in)
	case streamjson.InputControlResponse:
		c.resolve(in)
	case streamjson.InputControlCancel:
		c.cancel(in.RequestID)
	default:
		c.log.Debug("ignoring stdin line", "line", in.Line, "type", in.Type)
	}
}

// answerRequest runs the handler of one control request and writes its reply.
func (c *ControlPlane) answerRequest(in streamjson.Input) {
	c.hmu.Lock()
	h, enc := c.h, c.enc
	c.hmu.Unlock()
	var resp any
	err := unsupported(in.Subtype, "")
	if h != nil {
		resp, err = h.HandleControl(in)
	}
	var reply *streamjson.ControlResponse
	var ce *ControlError
	switch {
	case errors.As(err, &ce):
		reply = streamjson.NewControlError(in.RequestID, err.Error(), ce.Code)
	case err != nil:
		reply = streamjson.NewControlError(in.RequestID, err.Error(), codeFailed)
	default:
		reply = streamjson.NewControlSuccess(in.RequestID, resp)
	}
	if err != nil {
		c.log.Debug("control request refused", "subtype", in.Subtype, "request_id", in.RequestID, "err", err)
	}
	if werr := enc.Encode(reply); werr != nil {
		c.log.Warn("write control response", "subtype", in.Subtype, "err", werr)
	}
}

// controlRequest is a control_request line stoke sends to the host.
type controlRequest struct {
	streamjson.Envelope
	RequestID string         `json:"request_id"`
	Request   map[string]any `json:"request"`
}

// controlCancel is a control_cancel_request line: stoke no longer needs the answer.
type controlCancel struct {
	streamjson.Envelope
	RequestID string `json:"request_id"`
}

// request sends a control request of the given subtype to the host and waits for its
// reply. It returns the response object of a success reply; an error reply, stdin EOF, a
// control_cancel_request from the host and ctx's end are errors. When ctx ends first, the
// host is told with a control_cancel_request. Safe for concurrent use.
func (c *ControlPlane) request(ctx context.Context, subtype string, fields map[string]any) (json.RawMessage, error) {
	wait, err := c.send(subtype, fields)
	if err != nil {
		return nil, err
	}
	return wait(ctx)
}

// send writes a control request and returns the func that waits for its reply (see
// request); requests sent one after the other reach the host in that order. The returned
// func must be called.
func (c *ControlPlane) send(subtype string, fields map[string]any) (wait func(context.Context) (json.RawMessage, error), err error) {
	if c == nil {
		return nil, fmt.Errorf("%s: no host to ask: stdin is not --input-format stream-json", subtype)
	}
	c.hmu.Lock()
	enc := c.enc
	c.hmu.Unlock()
	if enc == nil || !c.answer {
		return nil, fmt.Errorf("%s: no host to ask", subtype)
	}
	id := "stoke-" + uuid.NewString()
	ch := make(chan controlReply, 1)
	c.mu.Lock()
	if c.closed != nil {
		err := c.closed
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", subtype, err)
	}
	c.pending[id] = ch
	c.mu.Unlock()

	body := map[string]any{"subtype": subtype}
	for k, v := range fields {
		body[k] = v
	}
	if err := enc.Encode(&controlRequest{Envelope: streamjson.Envelope{Type: "control_request"}, RequestID: id, Request: body}); err != nil {
		c.forget(id)
		return nil, fmt.Errorf("write %s request: %w", subtype, err)
	}
	return func(ctx context.Context) (json.RawMessage, error) { return c.await(ctx, id, subtype, ch, enc) }, nil
}

// await waits for the reply to request id.
func (c *ControlPlane) await(ctx context.Context, id, subtype string, ch chan controlReply, enc *streamjson.Encoder) (json.RawMessage, error) {
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, fmt.Errorf("%s: %w", subtype, r.err)
		}
		return r.response, nil
	case <-ctx.Done():
		if c.forget(id) {
			if err := enc.Encode(&controlCancel{Envelope: streamjson.Envelope{Type: "control_cancel_request"}, RequestID: id}); err != nil {
				c.log.Debug("write control cancel", "err", err)
			}
		}
		return nil, fmt.Errorf("%s: %w", subtype, context.Cause(ctx))
	}
}

// forget drops a pending request; it reports whether it was still pending.
func (c *ControlPlane) forget(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	delete(c.pending, id)
	return ok
}

// take removes and returns the waiter of a pending request.
func (c *ControlPlane) take(id string) (chan controlReply, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	return ch, ok
}

// resolve hands a control_response to the request it answers.
func (c *ControlPlane) resolve(in streamjson.Input) {
	ch, ok := c.take(in.RequestID)
	if !ok {
		c.log.Debug("control response matches no pending request", "request_id", in.RequestID)
		return
	}
	resp := gjson.GetBytes(in.Raw, "response")
	if in.Subtype != streamjson.ControlSuccess {
		msg := resp.Get("error").String()
		if msg == "" {
			msg = "the host answered with an error"
		}
		ch <- controlReply{err: errors.New(msg)}
		return
	}
	raw := json.RawMessage(`{}`)
	if r := resp.Get("response"); r.IsObject() {
		raw = json.RawMessage(r.Raw)
	}
	ch <- controlReply{response: raw}
}

// cancel fails a pending request the host withdrew.
func (c *ControlPlane) cancel(id string) {
	if ch, ok := c.take(id); ok {
		ch <- controlReply{err: errHostCancelled}
		return
	}
	c.log.Debug("control cancel matches no pending request", "request_id", id)
}

// failPending fails every pending request and every later one with err.
func (c *ControlPlane) failPending(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed == nil {
		c.closed = err
	}
	for id, ch := range c.pending {
		ch <- controlReply{err: err}
		delete(c.pending, id)
	}
}

// userTurn is one user turn read from stdin, or the error that ended the input (a
// malformed line).
type userTurn struct {
	msg  llm.Message
	err  error
	line int // the stdin line the message came on (1-based)
}

// Prompts returns the user turns of c, in stdin order, each as the consumer's type (as
// makes it from the message, the stdin line it came on and the error that ended the
// input), and closes the channel after the last one: at EOF, after a malformed line
// (delivered with its error), or when ctx ends. It is called once per control plane; the
// goroutine that feeds the channel ends with it, or with Close.
func Prompts[T any](ctx context.Context, c *ControlPlane, as func(msg llm.Message, line int, err error) T) <-chan T {
	ch := make(chan T)
	c.fwd.Add(1)
	go func() {
		defer c.fwd.Done()
		defer close(ch)
		for {
			p, ok := c.queue.next(ctx, c.stop)
			if !ok {
				return
			}
			select {
			case ch <- as(p.msg, p.line, p.err):
				c.queue.delivered()
			case <-ctx.Done():
				return
			case <-c.stop:
				return
			}
			if p.err != nil {
				return
			}
		}
	}()
	return ch
}

// Done is closed when the stdin reader has returned (EOF, a read error, or after Close).
func (c *ControlPlane) Done() <-chan struct{} { return c.done }

// waiting reports whether user turns were read that no turn has started yet.
func (c *ControlPlane) waiting() bool {
	if c == nil {
		return false
	}
	return c.queue.waiting()
}

// turnQueue holds the user turns read from stdin until the run loop takes them. push
// never blocks, so the reader keeps reading (and answering control requests) while a
// turn runs.
type turnQueue struct {
	mu     sync.Mutex
	items  []userTurn
	taken  int  // items handed to the forwarder and not yet delivered
	closed bool // no more items will come
	ready  chan struct{}
}

func newTurnQueue() *turnQueue { return &turnQueue{ready: make(chan struct{}, 1)} }

func (q *turnQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *turnQueue) push(p userTurn) {
	q.mu.Lock()
	q.items = append(q.items, p)
	q.mu.Unlock()
	q.signal()
}

// close marks the end of the turns; a non-nil err is queued last.
func (q *turnQueue) close(err error) {
	q.mu.Lock()
	if err != nil {
		q.items = append(q.items, userTurn{err: err})
	}
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

// next waits for the next turn; false when the queue is closed and empty, or on ctx or stop.
func (q *turnQueue) next(ctx context.Context, stop <-chan struct{}) (userTurn, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			p := q.items[0]
			q.items[0] = userTurn{}
			q.items = q.items[1:]
			q.taken++
			q.mu.Unlock()
			return p, true
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return userTurn{}, false
		}
		select {
		case <-q.ready:
		case <-ctx.Done():
			return userTurn{}, false
		case <-stop:
			return userTurn{}, false
		}
	}
}

func (q *turnQueue) delivered() {
	q.mu.Lock()
	q.taken--
	q.mu.Unlock()
}

func (q *turnQueue) waiting() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.items) > 0 || q.taken > 0
}
