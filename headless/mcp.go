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

	"github.com/stoke-cli/stoke/agents/catalog"
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
}

// mcpState is the session's MCP side: the servers, and which of them each agent names.
type mcpState struct {
	opts Options
	m    *mcp.Manager
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
func newMCP(ctx context.Context, o Options, hst host, cat catalog.Catalog) *mcpState {
	st := &mcpState{opts: o, ctx: ctx, own: map[string][]string{}}
	servers := o.MCP.Servers
	var sdkTransport func(string) (sdkmcp.Transport, error)
	if h, ok := hst.(*sdkhost.Host); ok {
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
		Env:           mcpEnv(o.Secrets),
		Dir:           o.CWD,
		StartTimeout:  o.MCP.StartTimeout,
		Logger:        o.Logger,
		ClientName:    "stoke",
		ClientVersion: o.Version,
	})
	for name := range servers {
		st.parent = append(st.parent, name)
	}
	slices.Sort(st.parent)
	for _, typ := range cat.Names() {
		st.own[typ] = st.agentServers(cat[typ])
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
func (st *mcpState) agentServers(def catalog.Definition) []string {
	m := st.m
	var names []string
	warn := func(server, why string) {
		st.opts.Logger.Warn("agent MCP server ignored", "subagent_type", def.Name, "file", def.Source, "server", server, "reason", why)
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
		case st.opts.MCP.Strict:
			warn(srv.Name, "--strict-mcp-config: only --mcp-config servers run")
			continue
		case !st.opts.MCP.TrustProject && projectDefinition(st.opts.CWD, def):
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

// projectDefinition reports whether def was read from the agent directories of the
// project in cwd.
func projectDefinition(cwd string, def catalog.Definition) bool {
	dir := filepath.Dir(def.Source)
	for _, d := range (catalog.LoadOptions{ProjectDir: cwd}).Dirs() {
		if d == dir {
			return true
		}
	}
	return false
}

// tools returns the MCP tools of an agent, gated as commands under w (an MCP tool
// runs only where the approval mode, a permission rule or the host allows a command).
// The parent (the zero Definition), and a subagent without a tools list, get the tools
// of every configured server; a subagent with a tools list gets the MCP tools it lists
// (mcp__server__tool, mcp__server or mcp__server__*); every subagent gets the tools of
// the servers its mcpServers names. Servers not started yet start now. disallowedTools
// takes tools away by the same names.
func (st *mcpState) tools(def catalog.Definition, w *tools.Workspace) []tools.Tool {
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

// parentTools are the parent's MCP tools, less those disallowed (--disallowedTools)
// names bare.
func (st *mcpState) parentTools(disallowed []string, ws *tools.Workspace) []tools.Tool {
	var denied []string
	for _, r := range disallowed {
		if rule := permission.ParseRule(r); rule.Whole() {
			denied = append(denied, rule.Tool)
		}
	}
	return st.tools(catalog.Definition{DisallowedTools: denied}, ws)
}

// close stops the servers.
func (st *mcpState) close() {
	if st != nil {
		st.m.Close()
	}
}

// statuses is system/init's mcp_servers: every server with its status.
func (st *mcpState) statuses() []any {
	out := []any{}
	for _, s := range st.m.Statuses() {
		out = append(out, mcpServerStatus{Name: s.Name, Status: s.Status})
	}
	return out
}

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
