package catalog

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/stoke-cli/stoke/agents/mcp"
)

// MCPServer is one entry of a definition's mcpServers (Claude Code's front matter): the
// name of a server configured for the run, or a server of the agent's own, in .mcp.json
// form ({command, args, env} or {type, url, headers}).
type MCPServer struct {
	Name string
	// Config is the inline server; nil for a reference to a configured one.
	Config map[string]any
}

// mcpServerList reads mcpServers as agent files write it: a list whose items are server
// names or one-key maps {name: config}; a map {name: config or null}; or one
// comma-separated string of names.
type mcpServerList []MCPServer

func (l *mcpServerList) UnmarshalYAML(n *yaml.Node) error {
	var out mcpServerList
	addMap := func(m *yaml.Node) error {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			s := MCPServer{Name: strings.TrimSpace(k.Value)}
			if v.ShortTag() != "!!null" {
				if err := v.Decode(&s.Config); err != nil {
					return fmt.Errorf("line %d: mcpServers %q: want {command, args, env} or {type, url, headers}", v.Line, s.Name)
				}
			}
			out = append(out, s)
		}
		return nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			break
		}
		for name := range strings.SplitSeq(n.Value, ",") {
			if name = strings.TrimSpace(name); name != "" {
				out = append(out, MCPServer{Name: name})
			}
		}
	case yaml.MappingNode:
		if err := addMap(n); err != nil {
			return err
		}
	case yaml.SequenceNode:
		for _, it := range n.Content {
			switch it.Kind {
			case yaml.ScalarNode:
				out = append(out, MCPServer{Name: strings.TrimSpace(it.Value)})
			case yaml.MappingNode:
				if err := addMap(it); err != nil {
					return err
				}
			default:
				return fmt.Errorf("line %d: mcpServers: want a server name or {name: config}", it.Line)
			}
		}
	default:
		return fmt.Errorf("line %d: mcpServers: want a list of server names or {name: config} entries", n.Line)
	}
	for _, s := range out {
		if s.Name == "" {
			return fmt.Errorf("line %d: mcpServers: a server without a name", n.Line)
		}
	}
	*l = out
	return nil
}

// MCPUse is what a run does with one entry of a definition's mcpServers.
type MCPUse struct {
	Name string `json:"name"`
	// Inline: the agent's own server; else a reference to a configured one.
	Inline bool `json:"inline"`
	// Used: the agent gets the server's tools (an inline server starts when an agent of
	// the type first runs).
	Used bool `json:"used"`
	// Note says why the server is not used, or that a configured server of the same
	// name is used instead of the inline one.
	Note string `json:"note,omitempty"`
}

// MCPContext is what decides the fate of a definition's mcpServers in a run.
type MCPContext struct {
	// Configured are the run's configured servers (--mcp-config, settings, .mcp.json).
	Configured map[string]mcp.ServerConfig
	// Strict is --strict-mcp-config: inline servers are ignored.
	Strict bool
	// MayStart: the definition's inline servers may start. A user's own files always
	// may; a project's only when the project is trusted.
	MayStart bool
	// LookupEnv expands ${VAR} in inline servers.
	LookupEnv func(string) (string, bool)
}

// MCPPlan says, for each entry of d's mcpServers, whether a run gives the agent that
// server, and why not. It starts nothing.
func (d Definition) MCPPlan(c MCPContext) []MCPUse {
	var out []MCPUse
	for _, srv := range d.MCPServers {
		u := MCPUse{Name: srv.Name, Inline: srv.Config != nil}
		conf, configured := c.Configured[srv.Name]
		switch {
		case !u.Inline && configured:
			u.Used = true
		case !u.Inline:
			u.Note = "no MCP server of that name is configured"
		case c.Strict:
			u.Note = "--strict-mcp-config: only --mcp-config servers run"
		case !c.MayStart:
			u.Note = "the project is not trusted (--trust-project starts its agents' servers)"
		default:
			own, err := inlineServer(srv, d.Source, c.LookupEnv)
			switch {
			case err != nil:
				u.Note = err.Error()
			case configured && !own.Equal(conf):
				u.Used, u.Note = true, fmt.Sprintf("a different server of that name is configured (%s); the configured server is used", conf.Source)
			default:
				u.Used = true
			}
		}
		out = append(out, u)
	}
	return out
}

// inlineServer parses, expands and validates an inline server of an agent file.
func inlineServer(srv MCPServer, source string, lookupEnv func(string) (string, bool)) (mcp.ServerConfig, error) {
	parsed, err := mcp.ParseMap(map[string]any{srv.Name: srv.Config}, source)
	if err != nil {
		return mcp.ServerConfig{}, err
	}
	if lookupEnv == nil {
		lookupEnv = func(string) (string, bool) { return "", false }
	}
	return parsed[srv.Name].Resolve(lookupEnv)
}
