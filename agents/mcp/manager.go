// Package mcp is stoke's MCP client, on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): the servers of a run in Claude Code's
// configuration format (config.go), started on first use and shared by every agent that
// names them (Manager), and their tools offered to the model as mcp__<server>__<tool>
// (Tool). Approval is not decided here: the caller gates the tools like any other command.
package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stoke-cli/stoke/agents/secrets"
)

// The statuses of a server, as system/init reports them.
const (
	StatusPending   = "pending"   // configured, not started yet (or starting)
	StatusConnected = "connected" // started; its tools are offered
	StatusFailed    = "failed"    // it did not start, or its connection was lost
)

// DefaultStartTimeout bounds a server's start when Options.StartTimeout is zero.
const DefaultStartTimeout = 30 * time.Second

// DefaultCallTimeout bounds one tool call when Options.CallTimeout is zero: the longest
// a shell command may run (tools.MaxShellTimeout).
const DefaultCallTimeout = 10 * time.Minute

// Options configure a Manager.
type Options struct {
	// Servers are the configured servers, by name. More can be added with Add.
	Servers map[string]ServerConfig
	// Env is the environment stdio servers start with, before their own env entries
	// (which win). The caller keeps credentials out of it.
	Env []string
	// Dir is the working directory of stdio servers.
	Dir string
	// StartTimeout bounds one server's start: the process or the HTTP connection, the
	// handshake and the tool list (default DefaultStartTimeout).
	StartTimeout time.Duration
	// CallTimeout bounds one tool call: a server that does not answer within it gives
	// the model an error result, and the agent goes on (default DefaultCallTimeout).
	CallTimeout time.Duration
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
	// ClientName and ClientVersion identify stoke to the servers.
	ClientName, ClientVersion string
	// SDK returns the transport of an SDK host's in-process server (type "sdk"); without
	// it such a server fails to start.
	SDK func(server string) (sdk.Transport, error)
	// Dial, when set, replaces the transports this package builds from a ServerConfig
	// (tests connect in-process servers with it). Stop, when not nil, is called at Close
	// after the session is closed.
	Dial func(ctx context.Context, name string, c ServerConfig) (t sdk.Transport, stop func(), err error)
}

// Status is one server's state.
type Status struct {
	Name   string
	Status string
	// Error says why it failed (credentials from the configuration cut out).
	Error string
	// Tools are a connected server's tools, as the server names them.
	Tools []string
}

// Manager owns the MCP servers of one run. A server starts the first time Start or
// Tools names it, once, however many agents ask at once; its session is shared by all of
// them. Close stops them all. A Manager is safe for concurrent use.
type Manager struct {
	opts   Options
	ctx    context.Context // the servers' lifetime: cancelled by Close
	cancel context.CancelFunc
	client *sdk.Client

	mu      sync.Mutex
	servers map[string]*server
	closed  bool
	starts  sync.WaitGroup
}

// server is one configured server and its session.
type server struct {
	name string
	conf ServerConfig
	// creds cuts the configuration's credentials (ServerConfig.credentials) out of what
	// the server hands back: a server that echoes its token must not put it in a
	// transcript, an event or a trace.
	creds *secrets.Policy
	// callTimeout bounds each call of its tools (Options.CallTimeout).
	callTimeout time.Duration
	// started is set (under Manager.mu) when its start begins; done is closed when the
	// start has finished, after which session, tools, stop and err do not change.
	started bool
	done    chan struct{}
	session *sdk.ClientSession
	tools   []*Tool
	stop    func()
	err     error
	// lost is set when a call fails in the transport (the server is gone).
	lostMu sync.Mutex
	lost   error
}

// NewManager returns a Manager of opts.Servers. Nothing starts until asked for.
func NewManager(opts Options) *Manager {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ClientName == "" {
		opts.ClientName = "stoke"
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Manager{
		opts:    opts,
		ctx:     ctx,
		cancel:  cancel,
		servers: make(map[string]*server, len(opts.Servers)),
		// No capabilities: stoke lists no roots and answers no sampling or elicitation.
		// No logger: the SDK's messages may hold a URL's credentials; what fails is
		// reported here, redacted.
		client: sdk.NewClient(&sdk.Implementation{Name: opts.ClientName, Version: opts.ClientVersion},
			&sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}),
	}
	for name, c := range opts.Servers {
		m.servers[name] = newServer(name, c, opts.CallTimeout)
	}
	return m
}

// ErrConflict: Add was given a name that is configured differently.
var ErrConflict = errors.New("a different server of that name is configured")

// Add registers one more server (an agent file's inline server). A name already
// registered with the same configuration is no change; with another it is ErrConflict,
// and the first stays.
func (m *Manager) Add(name string, c ServerConfig) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.servers[name]; ok {
		if s.conf.Equal(c) {
			return nil
		}
		return fmt.Errorf("server %q (%s): %w (%s)", name, c.Source, ErrConflict, s.conf.Source)
	}
	m.servers[name] = newServer(name, c, m.opts.CallTimeout)
	return nil
}

func newServer(name string, c ServerConfig, callTimeout time.Duration) *server {
	return &server{name: name, conf: c, creds: secrets.New(secrets.Config{Values: c.credentials()}),
		callTimeout: callTimeout, done: make(chan struct{})}
}

// Has reports whether name is registered.
func (m *Manager) Has(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.servers[name]
	return ok
}

// Start starts the named servers not yet started, in parallel, and waits until each has
// connected or failed (each within the start timeout), or until ctx ends. Names that are
// not registered are ignored. A start goes on when ctx ends: another agent may be waiting
// for the same server.
func (m *Manager) Start(ctx context.Context, names ...string) {
	var wait []*server
	m.mu.Lock()
	for _, name := range names {
		s, ok := m.servers[name]
		if !ok {
			continue
		}
		if !s.started && !m.closed {
			s.started = true
			m.starts.Add(1)
			go m.start(s)
		}
		if s.started {
			wait = append(wait, s)
		}
	}
	m.mu.Unlock()
	for _, s := range wait {
		select {
		case <-s.done:
		case <-ctx.Done():
			return
		}
	}
}

// Tools starts the named servers (see Start) and returns the tools of those that are
// connected, by server name and then in the server's order.
func (m *Manager) Tools(ctx context.Context, names ...string) []*Tool {
	m.Start(ctx, names...)
	names = slices.Clone(names)
	slices.Sort(names)
	var out []*Tool
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, name := range slices.Compact(names) {
		s, ok := m.servers[name]
		if !ok || !s.finished() || s.err != nil {
			continue
		}
		out = append(out, s.tools...)
	}
	return out
}

// Statuses returns the state of every registered server, sorted by name.
func (m *Manager) Statuses() []Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Status, 0, len(m.servers))
	for _, name := range slices.Sorted(maps.Keys(m.servers)) {
		s := m.servers[name]
		st := Status{Name: name, Status: StatusPending}
		if s.finished() {
			st.Status = StatusConnected
			if err := errors.Join(s.err, s.lostErr()); err != nil {
				st.Status, st.Error = StatusFailed, err.Error()
			}
			for _, t := range s.tools {
				st.Tools = append(st.Tools, t.name)
			}
		}
		out = append(out, st)
	}
	return out
}

// Close stops every server: starts in progress are cancelled, sessions closed, and the
// stdio servers' process groups ended (stdin closed, then SIGTERM, then SIGKILL). It
// returns when they are all gone. Idempotent.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	m.starts.Wait()
	var wg sync.WaitGroup
	m.mu.Lock()
	for _, s := range m.servers {
		if !s.started {
			continue
		}
		wg.Go(func() {
			if s.session != nil {
				_ = s.session.Close()
			}
			if s.stop != nil {
				s.stop()
			}
		})
	}
	m.mu.Unlock()
	wg.Wait()
}

// finished reports whether the server's start has finished.
func (s *server) finished() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *server) lostErr() error {
	s.lostMu.Lock()
	defer s.lostMu.Unlock()
	return s.lost
}

// markLost records that the server's connection is gone.
func (s *server) markLost(err error) {
	s.lostMu.Lock()
	defer s.lostMu.Unlock()
	if s.lost == nil {
		s.lost = fmt.Errorf("connection lost: %w", err)
	}
}

// start connects one server and lists its tools; it runs on its own goroutine.
func (m *Manager) start(s *server) {
	defer m.starts.Done()
	defer close(s.done)
	ctx, cancel := context.WithTimeout(m.ctx, m.opts.StartTimeout)
	defer cancel()
	begin := time.Now()
	session, stop, tools, err := m.connect(ctx, s)
	if err != nil {
		if ctx.Err() != nil && m.ctx.Err() == nil {
			err = fmt.Errorf("did not start within %s: %w", m.opts.StartTimeout, err)
		}
		err = redactError(err, s.conf.secrets())
		m.opts.Logger.Warn("MCP server failed to start; the run goes on without it", "server", s.name, "source", s.conf.Source, "err", err)
		s.err = err
		return
	}
	s.session, s.stop, s.tools = session, stop, tools
	m.opts.Logger.Debug("MCP server connected", "server", s.name, "config", s.conf, "tools", len(tools), "duration", time.Since(begin))
}

// connect opens the transport, performs the handshake and lists the tools. On an error
// everything it started is stopped, and a stdio server's last stderr lines are added.
func (m *Manager) connect(ctx context.Context, s *server) (*sdk.ClientSession, func(), []*Tool, error) {
	var c conn
	var err error
	if m.opts.Dial != nil {
		c.t, c.stop, err = m.opts.Dial(ctx, s.name, s.conf)
	} else {
		c, err = m.transport(s.name, s.conf)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	// The connection lives as long as the server (an SSE stream is a request that stays
	// open): its context is the Manager's, cancelled at Close or when the start fails.
	live, endLive := context.WithCancel(m.ctx)
	c.t = lifetimeTransport{Transport: c.t, ctx: live}
	if stop := c.stop; stop != nil {
		c.stop = func() { endLive(); stop() }
	} else {
		c.stop = endLive
	}
	fail := func(session *sdk.ClientSession, err error) (*sdk.ClientSession, func(), []*Tool, error) {
		if session != nil {
			_ = session.Close()
		}
		c.stop()
		if c.stderr != nil {
			if tail := strings.Join(strings.Fields(c.stderr()), " "); tail != "" {
				err = fmt.Errorf("%w; stderr: %s", err, tail)
			}
		}
		return nil, nil, nil, err
	}
	session, err := m.client.Connect(ctx, c.t, nil)
	if err != nil {
		return fail(nil, err)
	}
	var tools []*Tool
	names := map[string]bool{}
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			return fail(session, fmt.Errorf("list tools: %w", err))
		}
		name := ToolName(s.name, tool.Name)
		if names[name] { // another tool's name once sanitized: the model APIs refuse a repeat
			name = distinctName(s.name, tool.Name)
		}
		names[name] = true
		tools = append(tools, newTool(s, session, tool, name))
	}
	return session, c.stop, tools, nil
}

// redactError replaces the configuration's secret values in err's message.
func redactError(err error, secrets []string) error {
	msg := redact(err.Error(), secrets)
	if msg == err.Error() {
		return err
	}
	return errors.New(msg)
}

// redact cuts the secret values (those of 4 characters or more) out of s.
func redact(s string, secrets []string) string {
	for _, v := range secrets {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "<redacted>")
		}
	}
	return s
}

// lifetimeTransport connects its transport with a context of its own (the server's
// lifetime) in place of the start's, which ends once the server has started; a start that
// times out while connecting still cancels the connection.
type lifetimeTransport struct {
	sdk.Transport
	ctx context.Context
}

func (t lifetimeTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	ctx2, cancel := context.WithCancel(t.ctx)
	stop := context.AfterFunc(ctx, cancel)
	c, err := t.Transport.Connect(ctx2)
	if !stop() || err != nil {
		cancel()
		if err == nil {
			_ = c.Close()
			err = context.Cause(ctx)
		}
		return nil, err
	}
	// ctx2 now lives until t.ctx ends.
	return c, nil
}
