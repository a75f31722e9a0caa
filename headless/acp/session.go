package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/mcp"
	"github.com/stoke-cli/stoke/headless"
	"github.com/stoke-cli/stoke/streamjson"
)

// session is one ACP session: a headless session's parts, served by headless.Serve on
// the session's own goroutine, fed one prompt at a time.
type session struct {
	id        sdk.SessionId
	cwd       string // the directory the session works in, as the client gave it
	srv       *server
	parts     *headless.Parts
	updates   *updates
	approvals *approvals
	models    *models // nil without a model
	policy    headless.BackgroundPolicy
	// stop ends the session's context (session/close, the end of the connection on a
	// signal); done is closed once Serve has returned (the parts closed), err is then
	// what it returned.
	stop context.CancelCauseFunc
	done chan struct{}
	err  error

	// sendMu guards in: a prompt sends on it, end closes it, never both at once.
	sendMu sync.Mutex
	in     chan headless.Input
	ended  bool // in is closed

	mu   sync.Mutex
	turn *turn // the running prompt (nil: none)
}

// turn is one prompt's parent turn, from its input to its result.
type turn struct {
	cancel   chan struct{} // closed to cancel it (the Input's Cancel)
	once     sync.Once
	result   chan *streamjson.Result // the turn's result (buffered: the sink never waits)
	canceled bool                    // the client cancelled it (under session.mu)
}

func (t *turn) stop() { t.once.Do(func() { close(t.cancel) }) }

// sessionSpec is what the server decided of a session before it is opened.
type sessionSpec struct {
	id     sdk.SessionId
	cwd    string
	resume bool // id is a stored session's
	mcp    map[string]mcp.ServerConfig
}

// startSession assembles the session's parts from opts and starts serving them.
func startSession(srv *server, opts headless.Options, spec sessionSpec) (*session, error) {
	s := &session{id: spec.id, cwd: spec.cwd, srv: srv, policy: opts.BackgroundOnExit,
		done: make(chan struct{}), in: make(chan headless.Input)}
	if s.policy == "" {
		s.policy = headless.BackgroundWait
	}
	s.updates = newUpdates(srv.peer(), spec.id, spec.cwd, s.finished)
	s.approvals = newApprovals(srv.peer(), spec.id, spec.cwd, opts.ApprovalMode)
	opts.CWD = spec.cwd
	if opts.Model != nil {
		name := opts.ModelName
		if name == "" {
			name = opts.Model.Name()
		}
		s.models = newModels(opts.Model, name, opts.ModelAliases)
		opts.Model, opts.ModelName = s.models, name
	}
	opts.SessionID, opts.Resume, opts.Continue, opts.ForkSession = string(spec.id), "", false, false
	if spec.resume {
		opts.SessionID, opts.Resume = "", string(spec.id)
	}
	opts.Prompt, opts.Stdin, opts.Stdout = "", nil, io.Discard
	opts.InputFormat, opts.OutputFormat = headless.InputText, headless.OutputStreamJSON
	opts.Interactive, opts.Sink, opts.Approvals, opts.Lifecycle = true, s.updates, s.approvals, s.updates
	caps := srv.clientCaps()
	if f := newFiles(srv.peer(), spec.id, caps); f != nil {
		opts.Files = f
	}
	if caps.Terminal {
		opts.Terminal = &terminals{conn: srv.peer(), updates: s.updates, id: spec.id}
	}
	if len(spec.mcp) > 0 {
		servers := maps.Clone(opts.MCP.Servers)
		if servers == nil {
			servers = map[string]mcp.ServerConfig{}
		}
		maps.Copy(servers, spec.mcp) // the client's: the person's choice, over the project's
		opts.MCP.Servers = servers
	}
	ctx, stop := context.WithCancelCause(srv.ctx)
	parts, err := headless.Assemble(ctx, opts, nil)
	if err != nil {
		stop(err)
		return nil, err
	}
	s.parts, s.stop = parts, stop
	go func() {
		defer close(s.done)
		s.err = headless.Serve(ctx, parts, s.in)
		stop(nil)
	}()
	return s, nil
}

// prompt runs msg as the session's next parent turn and answers how it ended. ctx is the
// request's: when it ends (the client's $/cancel_request, the connection) the turn is
// cancelled and still answered.
func (s *session) prompt(ctx context.Context, msg llm.Message) (sdk.PromptResponse, error) {
	t := &turn{cancel: make(chan struct{}), result: make(chan *streamjson.Result, 1)}
	s.mu.Lock()
	if s.turn != nil {
		s.mu.Unlock()
		return sdk.PromptResponse{}, sdk.NewInvalidRequest(map[string]any{"error": fmt.Sprintf("session %s is running a prompt already", s.id)})
	}
	s.turn = t
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.turn == t {
			s.turn = nil
		}
		s.mu.Unlock()
	}()
	s.updates.turnStarts()
	if err := s.send(headless.Input{Msg: msg, Cancel: t.cancel}); err != nil {
		return sdk.PromptResponse{}, err
	}
	done := ctx.Done()
	for {
		select {
		case r := <-t.result:
			return s.updates.stopReason(r, s.wasCancelled(t))
		case <-s.done:
			return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
		case <-done:
			s.cancelTurn(t)
			done = nil // the turn's result still answers the prompt
		}
	}
}

// send hands in to the loop, which takes it at once: no turn runs between prompts.
func (s *session) send(in headless.Input) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.ended {
		return sdk.NewInvalidRequest(map[string]any{"error": fmt.Sprintf("session %s has ended", s.id)})
	}
	select {
	case s.in <- in:
		return nil
	case <-s.done:
		return sdk.NewInternalError(map[string]any{"error": fmt.Sprintf("session %s has ended: %v", s.id, s.err)})
	}
}

// finished is the sink's call for every result event: the running prompt's turn ended.
// A result with no prompt running (the loop's own, as it ends) is dropped.
func (s *session) finished(r *streamjson.Result) {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t == nil {
		return
	}
	select {
	case t.result <- r:
	default: // one result per input; never a second
	}
}

// cancel cancels the running prompt's turn (session/cancel); under --background-on-exit
// cancel, the background agents too.
func (s *session) cancel() {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		s.cancelTurn(t)
	}
	if s.policy == headless.BackgroundCancel {
		s.parts.CancelAgents(errCancelled)
	}
}

func (s *session) cancelTurn(t *turn) {
	s.mu.Lock()
	t.canceled = true
	s.mu.Unlock()
	t.stop()
}

func (s *session) wasCancelled(t *turn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return t.canceled
}

// errCancelled is the cause of the background agents session/cancel cancels.
var errCancelled = errors.New("cancelled by the client (session/cancel, --background-on-exit cancel)")

// close ends the session at once: its context ends with cause, so that the running
// turn and the background agents are cancelled; it returns once the parts are closed.
func (s *session) close(cause error) {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		s.cancelTurn(t) // the prompt is answered cancelled
	}
	s.stop(cause)
	<-s.done
}

// end ends the session as the end of a run's input does (the connection ended): the
// loop finishes, the background agents follow --background-on-exit; it returns once the
// parts are closed.
func (s *session) end() {
	s.sendMu.Lock()
	if !s.ended {
		s.ended = true
		close(s.in)
	}
	s.sendMu.Unlock()
	<-s.done
}

// configOptions are the session's configuration options (the model selector).
func (s *session) configOptions() []sdk.SessionConfigOption {
	if s.models == nil {
		return nil
	}
	return s.models.options()
}

// modelState is the session's models for the unstable models field (nil without a model).
func (s *session) modelState() *sdk.SessionModelState {
	if s.models == nil {
		return nil
	}
	return s.models.state()
}

// replay sends the session's history as session/update notifications (session/load).
// No prompt may run meanwhile.
func (s *session) replay() error {
	s.mu.Lock()
	busy := s.turn != nil
	s.mu.Unlock()
	if busy {
		return sdk.NewInvalidRequest(map[string]any{"error": fmt.Sprintf("session %s is running a prompt: load it once the prompt has ended", s.id)})
	}
	s.updates.replay(s.parts.History())
	return nil
}
