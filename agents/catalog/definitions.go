package catalog

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/tools"
)

// Definition is a subagent type.
type Definition struct {
	Name        string
	Description string
	// Prompt is the system prompt body.
	Prompt string
	// Tools is the allow-list of tool names: nil means every workspace tool, an empty
	// (non-nil) list none (Claude Code's `tools: []`). Claude Code's and Qwen Code's names
	// for the workspace tools are mapped to stoke's when a file is loaded (Read is
	// read_file, Bash is shell, ...); other names are kept as written.
	Tools []string
	// DisallowedTools are deny rules (Claude Code's disallowedTools): a bare tool name
	// takes the tool away; a rule such as Bash(rm:*) refuses the calls it covers
	// (package permission).
	DisallowedTools []string
	// Model overrides the parent's model when set. LoadDefinitions resolves what files
	// write (sonnet, fast, provider:model; see ResolveModel), so it is a model name.
	Model string
	// ApprovalMode, when set, lowers the run's approval mode for this agent; CapMode
	// drops a mode above the run's (or one stoke does not know).
	ApprovalMode tools.Mode
	// HasHooks: the definition declares hooks (never kept resident). Set by the loader
	// when Hooks holds at least one hook.
	HasHooks bool
	// Hooks are the definition's own command hooks, by event.
	Hooks hooks.Config
	// Isolation is "" or "worktree" (never kept resident).
	Isolation string
	// MCPServers are the MCP servers the agent names (mcpServers): configured ones by
	// name, or its own inline. Their tools are added to its tool set.
	MCPServers []MCPServer
	// MaxTurns caps the model calls of one turn of the agent (Claude Code's maxTurns,
	// Qwen Code's runConfig.max_turns); 0 leaves the run's cap. It only lowers the
	// run's cap (StepCap).
	MaxTurns int
	// MaxTime bounds one turn of the agent (Qwen Code's runConfig.max_time_minutes); 0
	// means no bound of its own. The registry ends a turn that runs out of time as a
	// failure, not a cancellation.
	MaxTime time.Duration
	// Source is the file it came from ("built-in" for built-ins).
	Source string
}

// StepCap is the cap on model calls per turn for an agent of this type, given the run's
// cap (0: none): the lower of the two, where 0 is no cap.
func (d Definition) StepCap(run int) int {
	if d.MaxTurns > 0 && (run <= 0 || d.MaxTurns < run) {
		return d.MaxTurns
	}
	return run
}

// GeneralPurpose is the built-in subagent type.
const GeneralPurpose = "general-purpose"

// BuiltinDefinitions returns the built-in subagent types.
func BuiltinDefinitions() []Definition {
	return []Definition{{
		Name:        GeneralPurpose,
		Description: "General-purpose agent for researching questions, searching code and carrying out multi-step tasks.",
		Prompt: "You are a subagent of stoke, working on one task for a parent agent. " +
			"Do the task with the tools you have, then answer with a concise report of what you found or did; " +
			"the parent sees only your final message.",
		Source: "built-in",
	}}
}

// Resident reports whether a runtime of this type may stay resident between turns. Agents
// with hooks or worktree isolation continue through transcript revival instead.
func (d Definition) Resident() bool {
	return !d.HasHooks && d.Isolation == ""
}

// CapMode applies the run's approval mode as a ceiling: a definition may lower its mode,
// never raise it. When d names a mode that grants more than ceiling (by the rank plan <
// default < auto-edit < yolo), or one stoke does not know, CapMode returns d without it
// (the agent runs under the run's mode) and raised true, for one warning. An empty
// ceiling is default; an unknown ceiling ranks lowest.
func (d Definition) CapMode(ceiling tools.Mode) (Definition, bool) {
	if ceiling == "" {
		ceiling = tools.ModeDefault
	}
	if d.ApprovalMode == "" || d.ApprovalMode.AtMost(ceiling) {
		return d, false
	}
	d.ApprovalMode = ""
	return d, true
}

// SystemPrompt is the system prompt sent for this type. Its last line names the type, so
// that a model endpoint (and the e2e mock) can tell the agents apart.
func (d Definition) SystemPrompt() string {
	return strings.TrimSpace(d.Prompt) + "\n\nAgent type: " + d.Name + "."
}

// Catalog is a set of definitions by name.
type Catalog map[string]Definition

// New returns a catalog of defs; a later definition of a name replaces an earlier one.
func New(defs ...Definition) Catalog {
	c := make(Catalog, len(defs))
	for _, d := range defs {
		c[d.Name] = d
	}
	return c
}

// Names returns the type names, sorted.
func (c Catalog) Names() []string {
	out := make([]string, 0, len(c))
	for n := range c {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the definition of name, or an error listing the available types.
func (c Catalog) Lookup(name string) (Definition, error) {
	if name == "" {
		name = GeneralPurpose
	}
	d, ok := c[name]
	if !ok {
		return Definition{}, fmt.Errorf("unknown subagent_type %q; available types: %s", name, strings.Join(c.Names(), ", "))
	}
	return d, nil
}
