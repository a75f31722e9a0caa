package acp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/stoke-cli/stoke/agents/llm"
	"github.com/stoke-cli/stoke/agents/store"
	"github.com/stoke-cli/stoke/headless"
)

// Config configures the ACP server of one process.
type Config struct {
	// In carries the client's messages (stdin); Out stoke's (stdout): one JSON-RPC message
	// a line each way.
	In  io.Reader
	Out io.Writer
	// Logger writes diagnostics (stderr).
	Logger *slog.Logger
	// Version is stoke's version (agentInfo).
	Version string
	// Options returns the options of a session that works in cwd (absolute, a directory):
	// the launch's configuration with cwd's project settings layered on it as for a run
	// started there (a project may only narrow what it is not trusted with). The server
	// sets the fields that are its own (the session's id, the resume, the sink, the
	// approvals, the files, the MCP servers the client names). Safe for concurrent use.
	Options func(cwd string) (headless.Options, error)
	// NewSessionID names each new session.
	NewSessionID func() string
	// Home is $STOKE_HOME: session/list and session/load read the sessions stored there
	// ("": none is stored).
	Home string
	// Model is the launch's model, asked which media it takes (promptCapabilities).
	Model llm.Model
}

// Serve serves ACP over cfg.In and cfg.Out until the client closes the connection (or ctx
// ends: a signal). Then every session ends as a run's input would: the background agents
// still at work follow --background-on-exit, the resident runtimes are released, each
// session's state is saved. It returns nil once the connection has ended, or ctx's cause
// (an *headless.InterruptedError for a signal).
func Serve(ctx context.Context, cfg Config) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, stopSignals := headless.WithSignals(ctx)
	defer stopSignals()
	// A client that closes its end of stdout must not kill the process (SIGPIPE) before
	// its sessions have saved their state: a write there fails instead.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	srv := &server{cfg: cfg, sessions: map[sdk.SessionId]*session{}, ready: make(chan struct{})}
	srv.ctx, srv.stop = context.WithCancelCause(ctx)
	defer srv.stop(nil)
	// The connection's reader starts at once, and logs what it reads with the logger set
	// next: it reads nothing until the logger is in place (gatedReader), so the two do
	// not race.
	srv.conn = sdk.NewAgentSideConnection(srv, cfg.Out, gatedReader{r: cfg.In, open: srv.ready})
	srv.conn.SetLogger(cfg.Logger)
	close(srv.ready)
	select {
	case <-srv.conn.Done():
		srv.endAll()
	case <-ctx.Done():
		srv.stop(context.Cause(ctx))
		srv.endAll()
		return context.Cause(ctx)
	}
	return nil
}

// server is the agent side of one connection: the sessions it serves, by id.
type server struct {
	cfg Config
	// conn is the connection, set once ready is closed (peer waits for it).
	conn  *sdk.AgentSideConnection
	ready chan struct{}
	// ctx is the connection's: every session's context derives from it.
	ctx  context.Context
	stop context.CancelCauseFunc

	mu       sync.Mutex
	client   sdk.ClientCapabilities // what initialize said the client offers
	sessions map[sdk.SessionId]*session
	ended    bool // the connection ended: no new session
}

// Initialize implements sdk.Agent: ACP v1; sessions can be loaded, listed, resumed and
// closed; prompts take images when the model does, and embedded context; MCP servers over
// stdio, HTTP and SSE.
func (srv *server) Initialize(_ context.Context, req sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	srv.mu.Lock()
	srv.client = req.ClientCapabilities
	srv.mu.Unlock()
	name := "stoke"
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: sdk.PromptCapabilities{Image: takesImages(srv.cfg.Model), EmbeddedContext: true},
			McpCapabilities:    sdk.McpCapabilities{Http: true, Sse: true},
			SessionCapabilities: sdk.SessionCapabilities{
				List: &sdk.SessionListCapabilities{}, Close: &sdk.SessionCloseCapabilities{}, Resume: &sdk.SessionResumeCapabilities{},
			},
		},
		AgentInfo:   &sdk.Implementation{Name: name, Title: &name, Version: srv.cfg.Version},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

// Authenticate implements sdk.Agent: there is nothing to do (stoke offers no method; keys
// come from the environment and the settings).
func (srv *server) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

// NewSession implements sdk.Agent: a new session in req.Cwd with the MCP servers the
// client names.
func (srv *server) NewSession(_ context.Context, req sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	s, err := srv.open(req.Cwd, req.McpServers, "")
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	return sdk.NewSessionResponse{SessionId: s.id, Modes: s.approvals.state(), ConfigOptions: s.configOptions(), Models: s.modelState()}, nil
}

// LoadSession implements sdk.AgentLoader: the stored session, its history replayed as
// session/update notifications before the answer, its agent roster restored as --resume
// restores it (the reminder comes once, with the next prompt). A session this process
// serves already is replayed as it stands; loaded under another working directory, its
// resident agents are released (the working-directory trigger): their rows stay, and
// the next send_message revives them. The session stays bound to the directory it was
// made in.
func (srv *server) LoadSession(_ context.Context, req sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	s, err := srv.resume(req.SessionId, req.Cwd, req.McpServers)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	if err := s.replay(); err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	return sdk.LoadSessionResponse{Modes: s.approvals.state(), ConfigOptions: s.configOptions(), Models: s.modelState()}, nil
}

// ResumeSession implements sdk.Agent: session/load without the replay.
func (srv *server) ResumeSession(_ context.Context, req sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	s, err := srv.resume(req.SessionId, req.Cwd, req.McpServers)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	return sdk.ResumeSessionResponse{Modes: s.approvals.state(), ConfigOptions: s.configOptions(), Models: s.modelState()}, nil
}

// resume returns the session id: the one this process serves (released when cwd is not
// its own), or the stored one, opened.
func (srv *server) resume(id sdk.SessionId, cwd string, servers []sdk.McpServer) (*session, error) {
	if _, err := store.ParseSessionID(string(id)); err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	if s := srv.session(id); s != nil {
		if filepath.Clean(cwd) != filepath.Clean(s.cwd) {
			n := s.parts.ReleaseResidents("the session was loaded under another working directory")
			srv.cfg.Logger.Info("session loaded under another working directory: resident agents released; the session stays bound to its own",
				"session_id", id, "cwd", cwd, "bound_to", s.cwd, "released", n)
		}
		return s, nil
	}
	return srv.open(cwd, servers, string(id))
}

// ListSessions implements sdk.Agent: the sessions stored under $STOKE_HOME (of req.Cwd
// when given), the most recently updated first; every one at once (no cursor).
func (srv *server) ListSessions(_ context.Context, req sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	if srv.cfg.Home == "" {
		return out, nil
	}
	all, err := store.List(srv.cfg.Home)
	if err != nil {
		return out, sdk.NewInternalError(map[string]any{"error": err.Error()})
	}
	slices.SortStableFunc(all, func(a, b store.Stored) int { return b.Info.UpdatedAt.Compare(a.Info.UpdatedAt) })
	for _, st := range all {
		if req.Cwd != nil && !st.In(*req.Cwd) {
			continue
		}
		info := sdk.SessionInfo{SessionId: sdk.SessionId(st.Info.SessionID), Cwd: st.Info.CWD}
		if t := cmp.Or(st.Info.UpdatedAt, st.Info.CreatedAt); !t.IsZero() {
			at := t.UTC().Format(time.RFC3339)
			info.UpdatedAt = &at
		}
		if info.Cwd == "" {
			continue // rebuilt from an old transcript that did not say
		}
		out.Sessions = append(out.Sessions, info)
	}
	return out, nil
}

// CloseSession implements sdk.Agent: the running prompt and the session's background
// agents are cancelled (their partial findings kept), the resident runtimes released,
// the session's state saved and its lock released. It answers once all of that is done.
func (srv *server) CloseSession(_ context.Context, req sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	s, err := srv.lookup(req.SessionId)
	if err != nil {
		return sdk.CloseSessionResponse{}, err
	}
	s.close(errClosed)
	srv.forget(s)
	return sdk.CloseSessionResponse{}, nil
}

// SetSessionMode implements sdk.Agent: the approval mode in force from the next tool call on.
func (srv *server) SetSessionMode(_ context.Context, req sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	s, err := srv.lookup(req.SessionId)
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	if err := s.approvals.set(req.ModeId); err != nil {
		return sdk.SetSessionModeResponse{}, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	s.updates.mode(req.ModeId)
	return sdk.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption implements sdk.Agent: the one option is the model (the approval
// mode is a session mode); the pick holds from the next model call on.
func (srv *server) SetSessionConfigOption(_ context.Context, req sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	v := req.ValueId
	if v == nil || v.ConfigId != modelConfigID {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("stoke's one configuration option is %q, a select", modelConfigID)})
	}
	s, err := srv.lookup(v.SessionId)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	if s.models == nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "the session has no model"})
	}
	if err := s.models.pick(string(v.Value)); err != nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: s.configOptions()}, nil
}

// UnstableSetSessionModel serves the unstable session/set_model (the library's; the
// current schema picks the model through the "model" configuration option instead).
func (srv *server) UnstableSetSessionModel(_ context.Context, req sdk.UnstableSetSessionModelRequest) (sdk.UnstableSetSessionModelResponse, error) {
	s, err := srv.lookup(req.SessionId)
	if err != nil {
		return sdk.UnstableSetSessionModelResponse{}, err
	}
	if s.models == nil {
		return sdk.UnstableSetSessionModelResponse{}, sdk.NewInvalidParams(map[string]any{"error": "the session has no model"})
	}
	if err := s.models.pick(string(req.ModelId)); err != nil {
		return sdk.UnstableSetSessionModelResponse{}, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return sdk.UnstableSetSessionModelResponse{}, nil
}

// Cancel implements sdk.Agent: the running prompt's turn ends (its partial text kept,
// the prompt answered with cancelled); with --background-on-exit cancel, the session's
// background agents are cancelled too.
func (srv *server) Cancel(_ context.Context, req sdk.CancelNotification) error {
	s := srv.session(req.SessionId)
	if s == nil {
		return nil
	}
	s.cancel()
	return nil
}

// Prompt implements sdk.Agent: one parent turn on the prompt's content, its progress
// streamed as session/update notifications; the answer says how it ended.
func (srv *server) Prompt(ctx context.Context, req sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := srv.lookup(req.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	msg, err := userMessage(req.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return s.prompt(ctx, msg)
}

// errClosed is the cause of a session closed by session/close.
var errClosed = errors.New("the client closed the session (session/close)")

// errUnknownSession is the error of a method naming a session this process does not serve.
func errUnknownSession(id sdk.SessionId) error {
	return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("no session %s in this process: create it (session/new) or load it (session/load)", id)})
}

func (srv *server) session(id sdk.SessionId) *session {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.sessions[id]
}

func (srv *server) lookup(id sdk.SessionId) (*session, error) {
	if s := srv.session(id); s != nil {
		return s, nil
	}
	return nil, errUnknownSession(id)
}

// forget drops s from the sessions served (compared by pointer: a session opened again
// under the same id meanwhile stays).
func (srv *server) forget(s *session) {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.sessions[s.id] == s {
		delete(srv.sessions, s.id)
	}
}

// peer returns the connection, once Serve has made it.
func (srv *server) peer() *sdk.AgentSideConnection {
	<-srv.ready
	return srv.conn
}

// clientCaps returns what the client said it offers.
func (srv *server) clientCaps() sdk.ClientCapabilities {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return srv.client
}

// open makes a session in cwd, a new one (resume "") or the stored session resume, and
// starts serving it.
func (srv *server) open(cwd string, servers []sdk.McpServer, resume string) (*session, error) {
	if !filepath.IsAbs(cwd) {
		return nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not an absolute path", cwd)})
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cwd %q is not a directory", cwd)})
	}
	mcpServers, err := mcpConfigs(servers)
	if err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	opts, err := srv.cfg.Options(cwd)
	if err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	id := resume
	if id == "" {
		id = srv.cfg.NewSessionID()
	}
	s, err := startSession(srv, opts, sessionSpec{id: sdk.SessionId(id), cwd: cwd, resume: resume != "", mcp: mcpServers})
	if err != nil {
		return nil, openError(err)
	}
	srv.mu.Lock()
	won, ended := srv.sessions[s.id], srv.ended
	if !ended && won == nil {
		srv.sessions[s.id] = s
	}
	srv.mu.Unlock()
	switch {
	case ended: // the connection ended meanwhile
		s.close(errClosed)
		return nil, sdk.NewInternalError(map[string]any{"error": "the connection has ended"})
	case won != nil: // a concurrent load of the same session came first
		s.close(errClosed)
		return won, nil
	}
	return s, nil
}

// openError is the ACP error of a session that could not be opened.
func openError(err error) error {
	data := map[string]any{"error": err.Error()}
	switch {
	case errors.Is(err, store.ErrUnknownSession):
		return &sdk.RequestError{Code: -32002, Message: "Resource not found", Data: data}
	case errors.Is(err, headless.ErrUsage), errors.Is(err, headless.ErrSessionBusy):
		return sdk.NewInvalidParams(data)
	}
	return sdk.NewInternalError(data)
}

// endAll ends every session once the connection has ended: its input closes, as a run's
// stdin would, and the session ends as --background-on-exit says; then its parts close.
func (srv *server) endAll() {
	srv.mu.Lock()
	srv.ended = true
	all := make([]*session, 0, len(srv.sessions))
	for _, s := range srv.sessions {
		all = append(all, s)
	}
	srv.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() {
			s.end()
			srv.forget(s)
		})
	}
	wg.Wait()
}

// gatedReader reads from r once open is closed.
type gatedReader struct {
	r    io.Reader
	open <-chan struct{}
}

func (g gatedReader) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}
