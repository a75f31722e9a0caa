package headless

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sdkmcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stoke-cli/stoke/agents"
	"github.com/stoke-cli/stoke/agents/mcp"
	"github.com/stoke-cli/stoke/agents/permission"
	"github.com/stoke-cli/stoke/agents/secrets"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless/sdkhost"
)

// MCPOptions configure the run's MCP servers (docs/mcp.md).
type MCPOptions struct {
	// Servers are the run's configured servers (--mcp-config, settings, .mcp.json): the
	// parent gets their tools, and so does every subagent that names no tools list.
	Servers map[string]mcp.ServerConfig
	// Strict (--strict-mcp-config): the inline servers of agent files are ignored too.
	Strict bool
	// TrustProject: the project is trusted, so the inline servers of its agent files may
	// start (those of the user's own agent files always may).
	TrustProject bool
	// StartTimeout bounds each server's start (default mcp.DefaultStartTimeout).
	StartTimeout time.Duration
	// CallTimeout bounds each tool call (MCP_TOOL_TIMEOUT; default mcp.DefaultCallTimeout).
	CallTimeout time.Duration
}

// mcpState is the session's MCP side: the servers, and which of them each agent names.
type mcpState struct {
	m *mcp.Manager
	// ctx is the run's: subagents start their servers under it (SubagentTools has none).
	ctx context.Context
	// parent are the configured servers' names, sorted.
	parent []string
	// own are the servers each subagent type names in mcpServers that can start.
	own map[string][]string
}

// mcpServerStatus is one entry of system/init's mcp_servers (the SDKs' McpServerStatus).
type mcpServerStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"`
}

// mcpEnv is the environment stdio MCP servers start with: the process's, without what the
// secrets policy keeps from child processes (the provider keys, the variable the run's key
// came from, env-deny). A server's own env entries may set them again, explicitly.
func mcpEnv(p *secrets.Policy) []string { return p.Environ(os.Environ()) }

// newMCP registers the configured servers, the SDK host's (its in-process servers and
// those its initialize request delivered) and the agents' own. Nothing starts yet (start).
func (s *session) newMCP(ctx context.Context, cat agents.Catalog) *mcpState {
	st := &mcpState{ctx: ctx, own: map[string][]string{}}
	servers := s.opts.MCP.Servers
	var sdkTransport func(string) (sdkmcp.Transport, error)
	if h, ok := s.host.(*sdkhost.Host); ok {
		if hs := h.MCPServers(); len(hs) > 0 {
			servers = maps.Clone(servers)
			if servers == nil {
				servers = map[string]mcp.ServerConfig{}
			}
			maps.Copy(servers, hs) // the SDK app's servers win over same-named --mcp-config ones
		}
		sdkTransport = h.MCPTransport
	}
	st.m = mcp.NewManager(mcp.Options{
		Servers:       servers,
		SDK:           sdkTransport,
		Env:           mcpEnv(s.opts.Secrets),
		Dir:           s.opts.CWD,
		StartTimeout:  s.opts.MCP.StartTimeout,
		CallTimeout:   s.opts.MCP.CallTimeout,
		Logger:        s.opts.Logger,
		ClientName:    "stoke",
		ClientVersion: s.opts.Version,
	})
	for name := range servers {
		st.parent = append(st.parent, name)
	}
	slices.Sort(st.parent)
	for _, typ := range cat.Names() {
		st.own[typ] = s.agentServers(st.m, cat[typ])
	}
	return st
}

// start starts the configured servers (the parent's tools) in parallel and waits until
// each has connected or failed. A server that fails is reported on stderr and in
// system/init; the run goes on. The servers agents name only for themselves start when
// such an agent first runs. An SDK host's in-process servers start through the control
// plane, which must be attached.
func (st *mcpState) start() {
	st.m.Start(st.ctx, st.parent...)
}

// agentServers registers the inline servers of def that may start and returns the names
// of the servers def names that exist, warning about the others.
func (s *session) agentServers(m *mcp.Manager, def agents.Definition) []string {
	var names []string
	warn := func(server, why string) {
		s.opts.Logger.Warn("agent MCP server ignored", "subagent_type", def.Name, "file", def.Source, "server", server, "reason", why)
	}
	for _, srv := range def.MCPServers {
		if srv.Config == nil {
			if !m.Has(srv.Name) {
				warn(srv.Name, "no MCP server of that name is configured")
				continue
			}
			names = append(names, srv.Name)
			continue
		}
		switch {
		case s.opts.MCP.Strict:
			warn(srv.Name, "--strict-mcp-config: only --mcp-config servers run")
			continue
		case !s.opts.MCP.TrustProject && s.projectDefinition(def):
			warn(srv.Name, "the project is not trusted (--trust-project starts its agents' servers)")
			continue
		}
		parsed, err := mcp.ParseMap(map[string]any{srv.Name: srv.Config}, def.Source)
		if err == nil {
			var c mcp.ServerConfig
			if c, err = parsed[srv.Name].Resolve(os.LookupEnv); err == nil {
				err = m.Add(srv.Name, c)
			}
		}
		if errors.Is(err, mcp.ErrConflict) {
			warn(srv.Name, err.Error()+"; the configured server is used")
			names = append(names, srv.Name)
			continue
		}
		if err != nil {
			warn(srv.Name, err.Error())
			continue
		}
		names = append(names, srv.Name)
	}
	return names
}

// projectDefinition reports whether def was read from the project's agent directories.
func (s *session) projectDefinition(def agents.Definition) bool {
	dir := filepath.Dir(def.Source)
	for _, d := range (agents.LoadOptions{ProjectDir: s.opts.CWD}).Dirs() {
		if d == dir {
			return true
		}
	}
	return false
}

// mcpTools returns the MCP tools of an agent, gated as commands under w (an MCP tool
// runs only where the approval mode, a permission rule or the host allows a command).
// The parent (the zero Definition), and a subagent without a tools list, get the tools
// of every configured server; a subagent with a tools list gets the MCP tools it lists
// (mcp__server__tool, mcp__server or mcp__server__*); every subagent gets the tools of
// the servers its mcpServers names. Servers not started yet start now. disallowedTools
// takes tools away by the same names.
func (s *session) mcpTools(def agents.Definition, w *tools.Workspace) []tools.Tool {
	st := s.mcp
	own := st.own[def.Name]
	servers := slices.Clone(own)
	if len(def.Tools) == 0 {
		servers = append(servers, st.parent...)
	} else {
		for _, srv := range st.parent {
			if slices.ContainsFunc(def.Tools, func(r string) bool { return strings.HasPrefix(r+"__", mcp.ServerPrefix(srv)) }) {
				servers = append(servers, srv)
			}
		}
	}
	var out []tools.Tool
	for _, t := range st.m.Tools(st.ctx, servers...) {
		name := t.Spec().Name
		listed := len(def.Tools) == 0 || slices.Contains(own, t.Server()) ||
			slices.ContainsFunc(def.Tools, func(r string) bool { return mcpRuleMatches(r, name) })
		denied := slices.ContainsFunc(def.DisallowedTools, func(r string) bool { return mcpRuleMatches(r, name) })
		if listed && !denied {
			out = append(out, w.Gate(t, tools.KindExec))
		}
	}
	return out
}

// parentMCPTools are the parent's MCP tools, less those --disallowedTools names bare.
func (s *session) parentMCPTools(ws *tools.Workspace) []tools.Tool {
	var denied []string
	for _, r := range s.opts.SDK.DisallowedTools {
		if rule := permission.ParseRule(r); rule.Whole() {
			denied = append(denied, rule.Tool)
		}
	}
	return s.mcpTools(agents.Definition{DisallowedTools: denied}, ws)
}

// close stops the servers.
func (st *mcpState) close() {
	if st != nil {
		st.m.Close()
	}
}

// mcpStatuses is system/init's mcp_servers: every server with its status.
func (s *session) mcpStatuses() []any {
	out := []any{}
	for _, st := range s.mcp.m.Statuses() {
		out = append(out, mcpServerStatus{Name: st.Name, Status: st.Status})
	}
	return out
}

// mcpServerStatuses are the servers for an SDK host's mcp_status.
func (s *session) mcpServerStatuses() []mcp.Status { return s.mcp.m.Statuses() }

// mcpRuleMatches reports whether a tool name or permission rule covers an MCP tool:
// its own name, mcp__server (every tool of that server) or mcp__server__*.
func mcpRuleMatches(rule, name string) bool {
	if rule == name {
		return true
	}
	if !strings.HasPrefix(rule, mcp.Prefix) || !strings.HasPrefix(name, mcp.Prefix) {
		return false
	}
	if server, ok := strings.CutSuffix(rule, "__*"); ok {
		rule = server
	}
	return strings.HasPrefix(name, rule+"__")
}
