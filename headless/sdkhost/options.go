package sdkhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/mcp"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/streamjson"
)

// Options are the Claude Code options stoke honours when a Claude Agent SDK host (an app
// that sets pathToClaudeCodeExecutable to stoke) or a script written for Claude Code drives
// it. cmd/claudeflags.go fills them from Claude Code's flags; the host's initialize request
// adds to them (in the Host, never in the Options). The zero value changes nothing.
type Options struct {
	// PermissionPromptStdio (--permission-prompt-tool=stdio): a workspace tool call the
	// permission mode would refuse is put to the host as a can_use_tool control request.
	PermissionPromptStdio bool
	// AllowedTools are Claude Code permission rules that approve calls without asking:
	// "Write", "Bash", "Bash(git status)", "Bash(npm run:*)" (--allowedTools).
	AllowedTools []string
	// DisallowedTools are rules that refuse calls; a bare name also takes the tool away
	// from the model (--disallowedTools).
	DisallowedTools []string
	// Tools, when not nil, names the workspace tools offered (--tools); empty offers none.
	Tools []string
	// IncludePartialMessages writes stream_event lines with the parent's streamed reply
	// (--include-partial-messages).
	IncludePartialMessages bool
	// MaxBudgetUSD ends the run with error_max_budget_usd once its cost (total_cost_usd)
	// goes over it; 0 is no budget (--max-budget-usd). The run loop applies it.
	MaxBudgetUSD float64
	// SystemPrompt replaces stoke's built-in parent prompt when not empty;
	// AppendSystemPrompt is added to the prompt in use (--system-prompt,
	// --append-system-prompt, initialize's systemPrompt and appendSystemPrompt).
	SystemPrompt       string
	AppendSystemPrompt string
	// Agents are more subagent types for the task tool (--agents, initialize's agents).
	Agents []catalog.Definition
	// SessionStates writes system/session_state_changed lines: running when a turn starts,
	// idle once nothing runs or waits (the SDK sets CLAUDE_CODE_SDK_READS_SESSION_STATE=1).
	SessionStates bool
	// NoPrompt (permission mode dontAsk) never asks the host, even with
	// PermissionPromptStdio: what the mode refuses is refused.
	NoPrompt bool
	// Dialect is the SDK that drives stoke: DialectClaude ("" too) or DialectQwen
	// (--channel=SDK). It decides the tool names of the SDK surface (Surface).
	Dialect string
	// MaxSessionTurns, when positive, caps the parent's model calls over the whole
	// session (Qwen Code's --max-session-turns): the call past it ends the run with
	// error_max_turns (ErrMaxSessionTurns).
	MaxSessionTurns int
}

// IsZero reports whether o asks for nothing (Tools: nil is all, empty is none).
func (o Options) IsZero() bool {
	return !o.PermissionPromptStdio && o.AllowedTools == nil && o.DisallowedTools == nil && o.Tools == nil &&
		!o.IncludePartialMessages && o.MaxBudgetUSD == 0 && o.SystemPrompt == "" && o.AppendSystemPrompt == "" &&
		o.Agents == nil && !o.SessionStates && !o.NoPrompt && o.Dialect == "" && o.MaxSessionTurns == 0
}

// permissionOptions reports whether o sets Claude Code's permission options.
func (o Options) permissionOptions() bool {
	return o.PermissionPromptStdio || len(o.AllowedTools) > 0 || len(o.DisallowedTools) > 0
}

// with returns o with what an initialize request asked for.
func (o Options) with(in initialize) Options {
	if in.systemPrompt != "" {
		o.SystemPrompt = in.systemPrompt
	}
	o.AppendSystemPrompt = joinPrompt(o.AppendSystemPrompt, in.appendSystemPrompt)
	o.Agents = append(slices.Clip(o.Agents), in.agents...)
	return o
}

// Start starts the stdin reader of a stream-json session. When the host speaks the control
// protocol (sdkMode: stream-json output too) it waits for the first line and, when that
// is an initialize request, reads it (in the dialect's vocabulary), so that what it asks
// for is known before anything is built; InitError says when it cannot be applied. An
// error is returned only when ctx ends first. The caller must Close the control plane
// when the run is over.
func Start(ctx context.Context, stdin io.Reader, sdkMode bool, dialect string, log *slog.Logger) (*ControlPlane, error) {
	c := newControlPlane(stdin, sdkMode, log)
	if !sdkMode {
		return c, nil
	}
	in, err := c.peek(ctx)
	if ctx.Err() != nil {
		c.Close()
		return nil, err
	}
	if err != nil || in.Kind != streamjson.InputControlRequest || in.Subtype != "initialize" {
		return c, nil // the reader delivers it (EOF, a malformed line, a prompt) in order
	}
	c.initLine = in.Line
	init, err := parseInitialize(in.Raw, dialect, log)
	if err != nil {
		c.initErr = err // the run ends: RefuseInitialize
		return c, nil
	}
	c.init = init
	return c, nil
}

// initialize is what an initialize request asks stoke for.
type initialize struct {
	systemPrompt       string
	appendSystemPrompt string
	agents             []catalog.Definition
	hooks              map[string][]hookMatcher
	// mcpServers are its in-process servers and the servers it delivered (MCPServers);
	// mcpApplied: it delivered servers (mcpServers), so the reply says
	// mcp_servers_applied.
	mcpServers map[string]mcp.ServerConfig
	mcpApplied bool
}

// sdkAgent is an agent definition as the Claude Agent SDK sends it (AgentDefinition),
// or as Qwen Code's SDK does (SubagentConfig: name, systemPrompt, runConfig, ...).
type sdkAgent struct {
	Name            string          `json:"name"` // Qwen Code
	Description     string          `json:"description"`
	Prompt          string          `json:"prompt"`
	SystemPrompt    string          `json:"systemPrompt"` // Qwen Code
	Tools           []string        `json:"tools"`
	DisallowedTools []string        `json:"disallowedTools"`
	Model           string          `json:"model"`
	PermissionMode  string          `json:"permissionMode"`
	RunConfig       json.RawMessage `json:"runConfig"` // Qwen Code: not applied
}

// parseInitialize reads an initialize request: the system prompt, the appended prompt,
// the SDK-defined agents as subagent types, its hook callbacks and its MCP servers. What
// stoke cannot honour is logged. An error says why the request cannot be applied: the
// session then ends (see ControlPlane.RefuseInitialize).
func parseInitialize(raw json.RawMessage, dialect string, log *slog.Logger) (initialize, error) {
	req := gjson.GetBytes(raw, "request")
	if !req.IsObject() {
		return initialize{}, errors.New("initialize: the request is not an object")
	}
	var hooks map[string][]hookMatcher
	if h := req.Get("hooks"); h.IsObject() {
		if err := json.Unmarshal([]byte(h.Raw), &hooks); err != nil {
			return initialize{}, fmt.Errorf("initialize: hooks: %w", err)
		}
	} else if h.Exists() && h.Type != gjson.Null && !h.IsArray() {
		return initialize{}, errors.New("initialize: hooks: want an object of hook matchers")
	}
	ags, err := parseAgents(req.Get("agents"), dialect, log)
	if err != nil {
		return initialize{}, fmt.Errorf("initialize: %w", err)
	}
	out := initialize{appendSystemPrompt: req.Get("appendSystemPrompt").String(), agents: ags, hooks: hooks}
	if sp, ok := systemPromptText(json.RawMessage(req.Get("systemPrompt").Raw)); ok {
		out.systemPrompt = sp
	}
	for name, ms := range hooks {
		if !hookEventSupported(name) {
			log.Warn("SDK hook event not supported: its callbacks are never invoked", "event", name)
		}
		for _, m := range ms {
			if err := m.valid(); err != nil {
				log.Warn("SDK hook matcher is not a regular expression: it matches nothing", "event", name, "matcher", m.Matcher, "err", err)
			}
		}
	}
	if js := req.Get("jsonSchema"); js.Exists() && js.Type != gjson.Null {
		log.Warn("initialize: jsonSchema ignored: stoke has no structured output")
	}
	out.mcpServers, out.mcpApplied = parseMCPServers(req, func(msg string, args ...any) { log.Warn(msg, args...) })
	return out, nil
}

// parseAgents reads initialize's agents: an object of Claude Agent SDK definitions by
// name, or Qwen Code's list of SubagentConfig.
func parseAgents(v gjson.Result, dialect string, log *slog.Logger) ([]catalog.Definition, error) {
	byName := map[string]sdkAgent{}
	switch {
	case !v.Exists() || v.Type == gjson.Null:
		return nil, nil
	case v.IsObject():
		if err := json.Unmarshal([]byte(v.Raw), &byName); err != nil {
			return nil, fmt.Errorf("agents: %w", err)
		}
	case v.IsArray():
		var list []sdkAgent
		if err := json.Unmarshal([]byte(v.Raw), &list); err != nil {
			return nil, fmt.Errorf("agents: %w", err)
		}
		for i, a := range list {
			if _, dup := byName[a.Name]; dup {
				return nil, fmt.Errorf("agents[%d]: a second agent named %q", i, a.Name)
			}
			if len(a.RunConfig) > 0 && string(a.RunConfig) != "null" {
				log.Warn("initialize: an agent's runConfig is not applied: the run's limits apply", "agent", a.Name)
			}
			byName[a.Name] = a
		}
	default:
		return nil, errors.New("agents: want an object of agent definitions by name, or a list")
	}
	return agentDefinitions(byName, dialect)
}

// systemPromptText reads initialize's systemPrompt: absent (the preset) and [""] (the
// SDK's default) keep stoke's built-in prompt; a string or a list of strings replaces it.
func systemPromptText(raw json.RawMessage) (string, bool) {
	r := gjson.ParseBytes(raw)
	var parts []string
	switch {
	case r.Type == gjson.String:
		parts = []string{r.Str}
	case r.IsArray():
		for _, p := range r.Array() {
			if p.Type == gjson.String {
				parts = append(parts, p.Str)
			}
		}
	}
	text := strings.TrimSpace(strings.Join(parts, "\n\n"))
	return text, text != ""
}

func joinPrompt(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// agentDefinitions converts SDK agent definitions (initialize's agents, --agents) to
// subagent types, sorted by name. The model is kept as written: ResolveModel turns it
// into the model the agent runs on when the run builds its catalog. Tool names are the
// dialect's (Claude Code's or Qwen Code's).
func agentDefinitions(in map[string]sdkAgent, dialect string) ([]catalog.Definition, error) {
	out := make([]catalog.Definition, 0, len(in))
	for name, a := range in {
		if strings.TrimSpace(name) == "" {
			return nil, errors.New("agent with an empty name")
		}
		prompt := a.Prompt
		if prompt == "" {
			prompt = a.SystemPrompt
		}
		if strings.TrimSpace(prompt) == "" {
			return nil, fmt.Errorf("agent %q has no prompt", name)
		}
		d := catalog.Definition{
			Name:            name,
			Description:     a.Description,
			Prompt:          prompt,
			Tools:           canonicalTools(dialect, a.Tools),
			DisallowedTools: canonicalTools(dialect, a.DisallowedTools),
			Source:          "sdk",
		}
		d.Model = strings.TrimSpace(a.Model) // resolved with the run's catalog (ResolveModel)
		if pm := a.PermissionMode; pm != "" {
			// Capped by the run's mode when the catalog is built; a mode stoke does not
			// know is dropped there with a warning.
			d.ApprovalMode = tools.Mode(pm)
			if m, err := tools.ParseMode(pm); err == nil {
				d.ApprovalMode = m
			} else if m, _, err := tools.ParsePermissionMode(pm); err == nil {
				d.ApprovalMode = m // dontAsk and manual are default
			}
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b catalog.Definition) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ParseAgentsJSON reads Claude Code's --agents value: {"name": {description, prompt, tools?, model?}}.
func ParseAgentsJSON(data string) ([]catalog.Definition, error) {
	var in map[string]sdkAgent
	if err := json.Unmarshal([]byte(data), &in); err != nil {
		return nil, fmt.Errorf("--agents: %w", err)
	}
	return agentDefinitions(in, DialectClaude)
}

// ResolveModel is the model an SDK-defined agent runs on ("" for the parent's): an entry
// of aliases (the model-aliases settings) maps what it names, as for agent files;
// without one, Claude's aliases ("sonnet", "opus", "haiku", "inherit") and claude-* ids
// mean the parent's model, since the SDKs write them for every agent whatever the
// provider; another name is kept. problem says why a name that was meant to be honoured
// falls back to the parent's model ("" when none did).
func ResolveModel(written string, aliases map[string]string, provider string) (model, problem string) {
	r := catalog.ResolveModel(written, aliases, provider)
	if r.Alias == "" && claudeModelAlias(written) {
		return "", ""
	}
	return r.Model, r.Problem
}

func claudeModelAlias(m string) bool {
	switch strings.ToLower(m) {
	case "inherit", "sonnet", "opus", "haiku", "fable", "default":
		return true
	}
	return strings.HasPrefix(strings.ToLower(m), "claude-")
}

// canonicalTools maps the dialect's workspace tool names (Claude Code's, or Qwen Code's)
// to stoke's; others are kept.
func canonicalTools(dialect string, names []string) []string {
	if names == nil {
		return nil
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if c, ok := canonicalTool(dialect, n); ok {
			n = c
		}
		out = append(out, n)
	}
	return out
}

// QwenRules maps the tool names of permission rules written for Qwen Code
// (run_shell_command, run_shell_command(rm *), grep_search, ...) to stoke's; rules in
// Claude Code's or stoke's names are kept.
func QwenRules(rules []string) []string {
	if rules == nil {
		return nil
	}
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		name, rest, hasPattern := strings.Cut(strings.TrimSpace(r), "(")
		if c, ok := canonicalTool(DialectQwen, strings.TrimSpace(name)); ok {
			name = c
		}
		if hasPattern {
			name += "(" + rest
		}
		out = append(out, name)
	}
	return out
}

// canonicalTool maps one tool name to stoke's workspace tool, if it names one.
func canonicalTool(dialect, name string) (string, bool) {
	if dialect == DialectQwen {
		switch name {
		case "run_shell_command":
			return tools.NameShell, true
		case "grep_search", "search_file_content":
			return tools.NameGrep, true
		case "list_directory":
			return tools.NameGlob, true
		case "replace":
			return tools.NameEdit, true
		case "read_many_files":
			return tools.NameReadFile, true
		}
	}
	return tools.CanonicalName(name)
}
