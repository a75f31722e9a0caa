package sdkhost

import (
	"slices"

	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// Dialects: the SDK that drives stoke, whose tool names and vocabulary its surface uses.
const (
	// DialectClaude is the Claude Agent SDK (the default): Read, Write, Edit, Glob, Grep,
	// Bash, Task.
	DialectClaude = "claude"
	// DialectQwen is Qwen Code's SDK (--channel=SDK): read_file, write_file, edit, glob,
	// grep_search, run_shell_command.
	DialectQwen = "qwen"
)

// ToolName is the name the host's SDK gives a stoke tool: what its canUseTool callback,
// its hook matchers, its permission_denials and the tool_use blocks it reads all use.
// Names the SDK does not know (stoke's task tools, MCP tools) are kept.
func (h *Host) ToolName(name string) string {
	return sdkToolName(h.opts.Dialect, name)
}

func sdkToolName(dialect, name string) string {
	if dialect == DialectQwen {
		switch name {
		case tools.NameShell:
			return "run_shell_command"
		case tools.NameGrep:
			return "grep_search"
		}
		return name
	}
	return claudeToolName(name)
}

// Surface returns ev as the host's SDK reads it: tool names in its vocabulary (system/init
// tools, tool_use blocks, task_progress, permission_denials), and stoke's own words moved
// where the SDK's types name other values (a task_notification's reason). It changes a
// copy: ev itself is left as it is. It is applied to the events of an SDK session only;
// the other runs keep stoke's names (DESIGN.md).
func (h *Host) Surface(ev streamjson.Event) streamjson.Event {
	name := h.ToolName
	switch e := ev.(type) {
	case *streamjson.Init:
		c := *e
		c.Tools = mapNames(e.Tools, name)
		if h.opts.Dialect == DialectQwen {
			c.QwenPermissionMode = string(h.liveMode())
			c.QwenCodeVersion = h.cfg.Version
		}
		return &c
	case *streamjson.Assistant:
		if !slices.ContainsFunc(e.Message.Content, func(b streamjson.Block) bool { return b.Name != name(b.Name) }) {
			return ev
		}
		c := *e
		c.Message.Content = slices.Clone(e.Message.Content)
		for i, b := range c.Message.Content {
			c.Message.Content[i].Name = name(b.Name)
		}
		return &c
	case *streamjson.TaskProgress:
		c := *e
		c.LastToolName = name(e.LastToolName)
		return &c
	case *streamjson.TaskNotification:
		if e.Reason == "" {
			return ev
		}
		c := *e
		c.StokeReason, c.Reason = e.Reason, ""
		return &c
	case *streamjson.Result:
		if len(e.PermissionDenials) == 0 {
			return ev
		}
		c := *e
		c.PermissionDenials = slices.Clone(e.PermissionDenials)
		for i, d := range c.PermissionDenials {
			c.PermissionDenials[i].ToolName = name(d.ToolName)
		}
		return &c
	}
	return ev
}

func mapNames(names []string, name func(string) string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = name(n)
	}
	return out
}
