package sdkhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/mcp"
)

// sourceInitialize names the initialize request as where MCP servers were configured.
const sourceInitialize = "the SDK host's initialize request"

// MCPServers are the MCP servers the host's initialize request names: its in-process
// servers (sdkMcpServers: type "sdk", reached through MCPTransport) and the servers it
// delivered instead of --mcp-config (mcpServers; mcpServersDelivery: 'initialize' in the
// Claude Agent SDK, always in Qwen Code's). Like --mcp-config, they count in any project.
func (h *Host) MCPServers() map[string]mcp.ServerConfig {
	if h.cfg.Control == nil {
		return nil
	}
	return h.cfg.Control.init.mcpServers
}

// parseMCPServers reads initialize's sdkMcpServers (a list of names in the Claude Agent
// SDK, an object of {type: "sdk", name} in Qwen Code's) and mcpServers (Claude Code's
// server configurations, or Qwen Code's, where url is an SSE endpoint and httpUrl a
// streamable HTTP one). An entry that cannot be used is skipped with a warning, as an
// invalid --mcp-config entry is in Claude Code; applied reports whether mcpServers was
// there at all (the reply's mcp_servers_applied).
func parseMCPServers(req gjson.Result, warn func(msg string, args ...any)) (servers map[string]mcp.ServerConfig, applied bool) {
	servers = map[string]mcp.ServerConfig{}
	sdkServers := req.Get("sdkMcpServers")
	switch {
	case sdkServers.IsArray():
		for _, n := range sdkServers.Array() {
			if name := n.String(); name != "" {
				servers[name] = mcp.ServerConfig{Type: mcp.TransportSDK, Source: sourceInitialize}
			}
		}
	case sdkServers.IsObject():
		sdkServers.ForEach(func(k, v gjson.Result) bool {
			name := v.Get("name").String()
			if name == "" {
				name = k.String()
			}
			servers[name] = mcp.ServerConfig{Type: mcp.TransportSDK, Source: sourceInitialize}
			return true
		})
	}
	delivered := req.Get("mcpServers")
	if !delivered.IsObject() {
		return servers, false
	}
	raw := map[string]any{}
	delivered.ForEach(func(k, v gjson.Result) bool {
		raw[k.String()] = qwenServer(v)
		return true
	})
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		parsed, err := mcp.ParseMap(map[string]any{name: raw[name]}, sourceInitialize)
		var c mcp.ServerConfig
		if err == nil {
			c, err = parsed[name].Resolve(os.LookupEnv)
		}
		if err != nil {
			warn("initialize: MCP server skipped", "server", name, "err", err)
			continue
		}
		if _, dup := servers[name]; dup {
			warn("initialize: MCP server named twice: the in-process one is used", "server", name)
			continue
		}
		servers[name] = c
	}
	return servers, true
}

// qwenServer maps Qwen Code's server keys to Claude Code's: httpUrl is a streamable HTTP
// endpoint, and url without a type an SSE one. Claude Code's entries are kept.
func qwenServer(v gjson.Result) any {
	m, ok := v.Value().(map[string]any)
	if !ok {
		return v.Value()
	}
	if _, typed := m["type"]; typed {
		return m
	}
	if u, ok := m["httpUrl"]; ok {
		m["type"], m["url"] = mcp.TransportHTTP, u
		delete(m, "httpUrl")
	} else if _, ok := m["url"]; ok {
		m["type"] = mcp.TransportSSE
	}
	return m
}

// MCPTransport returns the transport of the host's in-process server named server: each
// JSON-RPC message stoke's MCP client sends is an mcp_message control request, and the
// reply's mcp_response is the server's answer (mcp.Options.SDK).
func (h *Host) MCPTransport(server string) (mcpsdk.Transport, error) {
	if h.cfg.Control == nil || !h.cfg.SDKMode {
		return nil, errors.New("no SDK host: the server runs in it")
	}
	return &mcpTransport{cp: h.cfg.Control, server: server}, nil
}

// mcpTransport reaches one in-process server of the host.
type mcpTransport struct {
	cp     *ControlPlane
	server string
}

func (t *mcpTransport) Connect(ctx context.Context) (mcpsdk.Connection, error) {
	cctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	return &mcpConn{t: t, ctx: cctx, cancel: cancel, in: make(chan jsonrpc.Message), closed: make(chan struct{})}, nil
}

// mcpConn is the connection to an in-process server. Every message written is sent as its
// own control request, from its own goroutine, so that calls run concurrently; a call's
// answer (or its failure, as a JSON-RPC error) is handed to Read. Close cancels the
// requests still waiting (the host gets control_cancel_request) and waits for them.
type mcpConn struct {
	t      *mcpTransport
	ctx    context.Context // the connection's life; cancelled by Close
	cancel context.CancelFunc
	in     chan jsonrpc.Message
	closed chan struct{}

	mu   sync.Mutex
	done bool           // Close has begun: no request starts
	wg   sync.WaitGroup // the requests in flight
}

func (c *mcpConn) SessionID() string { return "" }

// Read returns the next answer of the server.
func (c *mcpConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Write sends msg to the server. A request's answer arrives through Read; a notification
// or a response has none.
func (c *mcpConn) Write(_ context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encode MCP message: %w", err)
	}
	req, _ := msg.(*jsonrpc.Request)
	call := req != nil && req.ID.IsValid()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return io.ErrClosedPipe
	}
	// Sent here, under the lock, so that the server gets the messages in the client's
	// order (initialize, notifications/initialized, tools/list, ...); answered
	// concurrently.
	wait, err := c.t.cp.send("mcp_message", map[string]any{"server_name": c.t.server, "message": json.RawMessage(data)})
	if err != nil {
		return err
	}
	c.wg.Go(func() {
		raw, err := wait(c.ctx)
		if !call {
			return
		}
		c.deliver(answer(req.ID, raw, err))
	})
	return nil
}

// answer is the response to call id: the reply's mcp_response, or a JSON-RPC error that
// says why none came.
func answer(id jsonrpc.ID, raw json.RawMessage, err error) jsonrpc.Message {
	fail := func(err error) jsonrpc.Message {
		return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}}
	}
	if err != nil {
		return fail(err)
	}
	resp := gjson.GetBytes(raw, "mcp_response")
	if !resp.IsObject() {
		return fail(errors.New("the host's reply has no mcp_response"))
	}
	m, err := jsonrpc.DecodeMessage([]byte(resp.Raw))
	if err != nil {
		return fail(fmt.Errorf("the host's mcp_response: %w", err))
	}
	if r, ok := m.(*jsonrpc.Response); !ok || r.ID != id {
		return fail(errors.New("the host's mcp_response does not answer the request"))
	}
	return m
}

func (c *mcpConn) deliver(m jsonrpc.Message) {
	select {
	case c.in <- m:
	case <-c.closed:
	}
}

// Close ends the connection; it may be called more than once.
func (c *mcpConn) Close() error {
	c.mu.Lock()
	if !c.done {
		c.done = true
		close(c.closed)
		c.cancel()
	}
	c.mu.Unlock()
	c.wg.Wait()
	return nil
}
