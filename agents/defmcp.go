package agents

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
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
