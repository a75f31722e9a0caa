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

	"github.com/stoke-cli/stoke/agents"
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
	Agents []agents.Definition
	// SessionStates writes system/session_state_changed lines: running when a turn starts,
	// idle once nothing runs or waits (the SDK sets CLAUDE_CODE_SDK_READS_SESSION_STATE=1).
	SessionStates bool
	// NoPrompt (permission mode dontAsk) never asks the host, even with
	// PermissionPromptStdio: what the mode refuses is refused.
	NoPrompt bool
	// Dialect is the SDK that drives stoke: DialectClaude ("" too) or DialectQwen
	// (--channel=SDK). It decides the tool names of the SDK surface (Surface).
	Dialect string
}

// IsZero reports whether o asks for nothing (Tools: nil is all, empty is none).
func (o Options) IsZero() bool {
	return !o.PermissionPromptStdio && o.AllowedTools == nil && o.DisallowedTools == nil && o.Tools == nil &&
		!o.IncludePartialMessages && o.MaxBudgetUSD == 0 && o.SystemPrompt == "" && o.AppendSystemPrompt == "" &&
		o.Agents == nil && !o.SessionStates && !o.NoPrompt && o.Dialect == ""
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
// is an initialize request, reads it, so that what it asks for is known before anything
// is built. An error is returned only when ctx ends first. The caller must Close the
// control plane when the run is over.
func Start(ctx context.Context, stdin io.Reader, sdkMode bool, log *slog.Logger) (*ControlPlane, error) {
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
	init, err := parseInitialize(in.Raw, log)
	if err != nil {
		// The session runs without it; the initialize reply says what was wrong.
		c.initErr = err
		return c, nil
	}
	c.init = init
	return c, nil
}

// initialize is what an initialize request asks stoke for.
type initialize struct {
	systemPrompt       string
	appendSystemPrompt string
	agents             []agents.Definition
	hooks              map[string][]hookMatcher
}

// initRequest is the part of an initialize request stoke applies.
type initRequest struct {
	SystemPrompt       json.RawMessage          `json:"systemPrompt"`
	AppendSystemPrompt string                   `json:"appendSystemPrompt"`
	Agents             map[string]sdkAgent      `json:"agents"`
	Hooks              map[string][]hookMatcher `json:"hooks"`
	JSONSchema         json.RawMessage          `json:"jsonSchema"`
	SDKMCPServers      []string                 `json:"sdkMcpServers"`
}

// sdkAgent is an agent definition as the SDK sends it (AgentDefinition).
type sdkAgent struct {
	Description     string   `json:"description"`
	Prompt          string   `json:"prompt"`
	Tools           []string `json:"tools"`
	DisallowedTools []string `json:"disallowedTools"`
	Model           string   `json:"model"`
	PermissionMode  string   `json:"permissionMode"`
}

// parseInitialize reads an initialize request: the system prompt, the appended prompt,
// the SDK-defined agents as subagent types, and its hook callbacks. What stoke cannot
// honour is logged.
func parseInitialize(raw json.RawMessage, log *slog.Logger) (initialize, error) {
	var req initRequest
	if err := json.Unmarshal([]byte(gjson.GetBytes(raw, "request").Raw), &req); err != nil {
		return initialize{}, fmt.Errorf("decode initialize: %w", err)
	}
	defs, err := agentDefinitions(req.Agents)
	if err != nil {
		return initialize{}, fmt.Errorf("initialize: %w", err)
	}
	out := initialize{appendSystemPrompt: req.AppendSystemPrompt, agents: defs, hooks: req.Hooks}
	if sp, ok := systemPromptText(req.SystemPrompt); ok {
		out.systemPrompt = sp
	}
	for name, ms := range req.Hooks {
		if !hookEventSupported(name) {
			log.Warn("SDK hook event not supported: its callbacks are never invoked", "event", name)
		}
		for _, m := range ms {
			if err := m.valid(); err != nil {
				log.Warn("SDK hook matcher is not a regular expression: it matches nothing", "event", name, "matcher", m.Matcher, "err", err)
			}
		}
	}
	if len(req.JSONSchema) > 0 && string(req.JSONSchema) != "null" {
		log.Warn("initialize: jsonSchema ignored: stoke has no structured output")
	}
	if len(req.SDKMCPServers) > 0 {
		log.Warn("initialize: in-process (sdk) MCP servers ignored: not supported yet", "servers", strings.Join(req.SDKMCPServers, ","))
	}
	return out, nil
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
// subagent types, sorted by name. Claude model aliases ("sonnet", "opus", "haiku",
// "inherit") and claude-* ids mean the parent's model; another model name is kept.
func agentDefinitions(in map[string]sdkAgent) ([]agents.Definition, error) {
	out := make([]agents.Definition, 0, len(in))
	for name, a := range in {
		if strings.TrimSpace(name) == "" {
			return nil, errors.New("agent with an empty name")
		}
		if strings.TrimSpace(a.Prompt) == "" {
			return nil, fmt.Errorf("agent %q has no prompt", name)
		}
		d := agents.Definition{
			Name:            name,
			Description:     a.Description,
			Prompt:          a.Prompt,
			Tools:           canonicalTools(a.Tools),
			DisallowedTools: canonicalTools(a.DisallowedTools),
			Source:          "sdk",
		}
		if m := a.Model; m != "" && !claudeModelAlias(m) {
			d.Model = m
		}
		if pm := a.PermissionMode; pm != "" {
			if pm == "dontAsk" {
				pm = "default"
			}
			// Capped by the run's mode when the catalog is built; a mode stoke does not
			// know is dropped there with a warning.
			d.ApprovalMode = pm
			if m, err := tools.ParseMode(pm); err == nil {
				d.ApprovalMode = string(m)
			}
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b agents.Definition) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ParseAgentsJSON reads Claude Code's --agents value: {"name": {description, prompt, tools?, model?}}.
func ParseAgentsJSON(data string) ([]agents.Definition, error) {
	var in map[string]sdkAgent
	if err := json.Unmarshal([]byte(data), &in); err != nil {
		return nil, fmt.Errorf("--agents: %w", err)
	}
	return agentDefinitions(in)
}

func claudeModelAlias(m string) bool {
	switch strings.ToLower(m) {
	case "inherit", "sonnet", "opus", "haiku", "fable", "default":
		return true
	}
	return strings.HasPrefix(strings.ToLower(m), "claude-")
}

// canonicalTools maps Claude Code's workspace tool names to stoke's; others are kept.
func canonicalTools(names []string) []string {
	if names == nil {
		return nil
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		if c, ok := tools.CanonicalName(n); ok {
			n = c
		}
		out = append(out, n)
	}
	return out
}
