package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stoke-cli/stoke/agents/catalog"
	"github.com/stoke-cli/stoke/agents/hooks"
	"github.com/stoke-cli/stoke/agents/llm/scripted"
	"github.com/stoke-cli/stoke/agents/tools"
)

// newCmdAgentsCheck returns `stoke agents check`: the subagent definitions a run in this
// directory would find, and what it would make of them. It reads the same files under
// the same rules as a run (settings, trust, --bare, MCP configuration), and starts
// nothing: no model is called and no MCP server runs.
func newCmdAgentsCheck(deps *Deps) *cobra.Command {
	c := &cobra.Command{
		Use:   "check",
		Short: "Check the subagent definitions a run here would load",
		Long: `Lists every subagent definition a run in this directory would find (built-ins,
$STOKE_HOME/agents, and the project's .qwen, .claude and .stoke agent directories),
which file replaces which, and what a run makes of each: the model it is sent (after
model-aliases), its tools (after mapping Claude Code's and Qwen Code's names; the
ones stoke lacks are listed), its approval mode (capped by the run's), its MCP
servers, and every warning. It takes the run's flags that change that answer and
reads the same settings, under the same trust rules. It starts no MCP server and
calls no model.

Exit status: 0 when every definition in use can run; 1 when one cannot: its file is
skipped (it does not parse, has a bad value, is a symbolic link out of the project
or repeats a name of its directory), none of the tools it lists exists in stoke, or
its model falls back to the parent's when there is no parent model; 2 for bad usage.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return checkAgents(deps, c.Flags())
		},
	}
	f := c.Flags()
	f.SortFlags = false
	f.Bool("json", false, "print one JSON object, on one line")
	f.String("provider", "", "openai | anthropic | scripted, as for a run")
	f.StringP("model", "m", "", "the parent's model, as for a run")
	f.String("scenario", "", "scenario `FILE` for the scripted provider (its model is the parent's)")
	f.String("approval-mode", string(tools.ModeDefault), "the run's approval mode, a ceiling for every agent's")
	f.Bool("bare", false, "read no project configuration, as a run with --bare")
	f.Bool("trust-project", false, "let the project's settings and agent files widen the run, as for a run")
	addMCPFlags(f)
	return c
}

// checkReport is the output of `stoke agents check --json`.
type checkReport struct {
	OK           bool              `json:"ok"`
	Project      string            `json:"project"`
	Home         string            `json:"stoke_home"`
	Trusted      bool              `json:"trusted"`
	Bare         bool              `json:"bare"`
	Provider     string            `json:"provider"`
	ParentModel  string            `json:"parent_model"`
	ApprovalMode tools.Mode        `json:"approval_mode"`
	ModelAliases map[string]string `json:"model_aliases"`
	Definitions  []checkDefinition `json:"definitions"`
	// Warnings are those about the configuration rather than one definition: settings
	// keys that were ignored, MCP configuration, unreadable directories.
	Warnings []string `json:"warnings"`
}

// checkDefinition is one definition of the report.
type checkDefinition struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Source      string `json:"source"`
	Scope       string `json:"scope"`
	// Precedence is the source's rank: a definition replaces same-named ones of a lower
	// precedence (built-ins are 0).
	Precedence int `json:"precedence"`
	// Used: a run uses this definition for its name.
	Used       bool     `json:"used"`
	ShadowedBy string   `json:"shadowed_by,omitempty"`
	Shadows    []string `json:"shadows,omitempty"`
	// Model is the model name the provider is sent; ModelInherited when it is the
	// parent's.
	Model          string                  `json:"model"`
	ModelInherited bool                    `json:"model_inherited"`
	ModelField     catalog.ModelResolution `json:"model_field"`
	// Tools are the workspace and MCP tools it is given by name; AllTools when it lists
	// none (every workspace tool, and the configured MCP servers' tools).
	Tools           []string         `json:"tools"`
	AllTools        bool             `json:"all_tools"`
	UnknownTools    []string         `json:"unknown_tools"`
	DisallowedTools []string         `json:"disallowed_tools"`
	Mode            tools.Mode       `json:"mode"`
	MaxTurns        int              `json:"max_turns,omitempty"`
	MaxTime         string           `json:"max_time,omitempty"`
	Hooks           []string         `json:"hooks"`
	Isolation       string           `json:"isolation,omitempty"`
	MCPServers      []catalog.MCPUse `json:"mcp_servers"`
	Warnings        []string         `json:"warnings"`
	Error           string           `json:"error,omitempty"`
	CannotRun       []string         `json:"cannot_run"`
}

// blocks reports whether d makes the check fail: it cannot run and nothing replaces it.
func (d checkDefinition) blocks() bool { return len(d.CannotRun) > 0 && d.ShadowedBy == "" }

// errCannotRun: a definition in use cannot run (exit status 1).
var errCannotRun = errors.New("cannot run")

// checkAgents builds the report and prints it.
func checkAgents(deps *Deps, flags *pflag.FlagSet) error {
	cwd, home, err := projectPaths(deps)
	if err != nil {
		return err
	}
	cfg, ignored, err := loadConfig(deps.Viper, configInput{flags: flags, lookupEnv: deps.LookupEnv, cwd: cwd, home: home})
	if err != nil {
		return err
	}
	if _, err := cfg.validate(); err != nil {
		return err
	}
	mcpOpts, mcpWarnings, err := loadMCP(flags, cfg, deps.LookupEnv, cwd)
	if err != nil {
		return err
	}
	r := checkReport{
		Project: cwd, Home: home, Trusted: cfg.Trusted, Bare: cfg.Bare, Provider: cfg.Provider,
		ParentModel: parentModel(cfg, cwd), ApprovalMode: cfg.ApprovalMode, ModelAliases: cfg.ModelAliases,
		Definitions: []checkDefinition{}, Warnings: []string{},
	}
	if r.ModelAliases == nil {
		r.ModelAliases = map[string]string{}
	}
	for _, k := range ignored {
		if k.key == "" {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: ignored: %s", k.file, k.reason))
		} else {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %s ignored: %s", k.file, k.key, k.reason))
		}
	}
	r.Warnings = append(r.Warnings, mcpWarnings...)
	in := catalog.Inspect(catalog.LoadOptions{
		ProjectDir: cwd, UserStokeHome: home, Bare: cfg.Bare, TrustProject: cfg.Trusted,
		ModelAliases: cfg.ModelAliases, Provider: cfg.Provider, ParentModel: r.ParentModel, Ceiling: cfg.ApprovalMode,
	})
	r.Warnings = append(r.Warnings, in.DirWarnings...)
	mctx := catalog.MCPContext{Configured: mcpOpts.Servers, Strict: mcpOpts.Strict, LookupEnv: deps.LookupEnv}
	var cannot []string
	for _, f := range in.Found {
		mctx.MayStart = f.Scope != catalog.ScopeProject || cfg.Trusted
		d := r.definition(f, mctx)
		if d.blocks() {
			cannot = append(cannot, r.rel(d.Source))
		}
		r.Definitions = append(r.Definitions, d)
	}
	for i, d := range r.Definitions {
		for _, o := range r.Definitions {
			if o.ShadowedBy == d.Source && d.Source != "" {
				r.Definitions[i].Shadows = append(r.Definitions[i].Shadows, o.Source)
			}
		}
	}
	r.OK = len(cannot) == 0
	if flag, _ := flags.GetBool("json"); flag {
		if err := json.NewEncoder(deps.Out).Encode(r); err != nil { // one line, for jq and NDJSON readers
			return err
		}
	} else if err := r.writeText(deps.Out); err != nil {
		return err
	}
	if !r.OK {
		return fmt.Errorf("%d agent definition(s) %w: %s (see the report on stdout)", len(cannot), errCannotRun, strings.Join(cannot, ", "))
	}
	return nil
}

// definition is f as the report shows it.
func (r *checkReport) definition(f catalog.Found, mctx catalog.MCPContext) checkDefinition {
	d := f.Definition
	out := checkDefinition{
		Name: d.Name, Description: d.Description, Source: d.Source, Scope: f.Scope, Precedence: f.Rank,
		Used: f.Err == "" && f.ShadowedBy == "", ShadowedBy: f.ShadowedBy,
		Model: d.Model, ModelField: f.Model, UnknownTools: nonNil(f.UnknownTools),
		DisallowedTools: nonNil(d.DisallowedTools), Mode: d.ApprovalMode, MaxTurns: d.MaxTurns,
		Hooks: []string{}, Isolation: d.Isolation, MCPServers: []catalog.MCPUse{},
		Warnings: nonNil(f.Warnings), Error: f.Err, CannotRun: nonNil(f.CannotRun),
	}
	if f.Scope == catalog.ScopeBuiltin {
		out.Source = catalog.ScopeBuiltin
	}
	if out.Model == "" {
		out.Model, out.ModelInherited = r.ParentModel, true
	}
	if out.Mode == "" {
		out.Mode = r.ApprovalMode
	}
	if d.MaxTime > 0 {
		out.MaxTime = d.MaxTime.String()
	}
	switch {
	case d.Tools == nil:
		out.Tools, out.AllTools = tools.WorkspaceToolNames(), true
	default:
		out.Tools = slices.DeleteFunc(slices.Clone(d.Tools), func(n string) bool { return slices.Contains(f.UnknownTools, n) })
	}
	for _, ev := range hooks.Events() {
		if len(d.Hooks[ev]) > 0 {
			out.Hooks = append(out.Hooks, string(ev))
		}
	}
	if f.Err == "" {
		out.MCPServers = nonNil(d.MCPPlan(mctx))
		for _, u := range out.MCPServers {
			if !u.Used {
				out.Warnings = append(out.Warnings, fmt.Sprintf("mcpServers: %s ignored: %s", u.Name, u.Note))
			}
		}
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// parentModel is the model a run would give the parent: --model (or its settings), else
// the provider's default; for the scripted provider, the scenario's model. "" when it
// cannot be told (a scenario that does not load).
func parentModel(cfg *Config, cwd string) string {
	if cfg.Model != "" {
		return cfg.Model
	}
	switch cfg.Provider {
	case providerOpenAI:
		return defaultOpenAIModel
	case providerAnthropic:
		return defaultAnthropicModel
	case providerScripted:
		if cfg.Scenario == "" {
			return ""
		}
		path := cfg.Scenario
		if !filepath.IsAbs(path) {
			path = filepath.Join(cwd, path)
		}
		s, err := scripted.Load(path)
		if err != nil {
			return ""
		}
		if s.Model == "" {
			return scripted.DefaultModel
		}
		return s.Model
	}
	return ""
}

// writeText prints the report for people: one block per definition, then the
// configuration's warnings and a summary line.
func (r *checkReport) writeText(w io.Writer) error {
	var b strings.Builder
	trust := "not trusted"
	switch {
	case r.Bare:
		trust = "not read (--bare)"
	case r.Trusted:
		trust = "trusted"
	}
	fmt.Fprintf(&b, "project %s (%s); provider %s, parent model %s, approval mode %s\n",
		r.Project, trust, r.Provider, orNone(r.ParentModel), r.ApprovalMode)
	used, cannot := 0, 0
	for _, d := range r.Definitions {
		b.WriteString("\n")
		name := d.Name
		if name == "" {
			name = "(no name)"
		}
		state := "used"
		switch {
		case d.Error != "":
			state = "skipped"
		case d.ShadowedBy != "":
			state = "replaced by " + r.rel(d.ShadowedBy)
		default:
			used++
		}
		if d.blocks() {
			cannot++
			state += ", CANNOT RUN"
		}
		fmt.Fprintf(&b, "%s  %s (%s, %s)\n", name, r.rel(d.Source), d.Scope, state)
		row := func(key, format string, args ...any) {
			fmt.Fprintf(&b, "  %-9s %s\n", key, fmt.Sprintf(format, args...))
		}
		if d.Error != "" {
			row("error", "%s", d.Error)
			continue
		}
		row("model", "%s", r.modelText(d))
		tl := strings.Join(d.Tools, ", ")
		switch {
		case d.AllTools:
			tl = "all: " + tl
		case tl == "":
			tl = "none"
		}
		if len(d.UnknownTools) > 0 {
			tl += "; stoke has no " + strings.Join(d.UnknownTools, ", ")
		}
		row("tools", "%s", tl)
		if len(d.DisallowedTools) > 0 {
			row("denied", "%s", strings.Join(d.DisallowedTools, ", "))
		}
		row("mode", "%s", d.Mode)
		if d.MaxTurns > 0 || d.MaxTime != "" {
			row("limits", "%s", limitsText(d.MaxTurns, d.MaxTime))
		}
		if len(d.Hooks) > 0 {
			row("hooks", "%s", strings.Join(d.Hooks, ", "))
		}
		if d.Isolation != "" {
			row("isolation", "%s", d.Isolation)
		}
		for _, u := range d.MCPServers {
			row("mcp", "%s", mcpText(u))
		}
		for _, s := range d.Shadows {
			row("replaces", "%s", r.rel(s))
		}
		for _, wn := range d.Warnings {
			row("warning", "%s", wn)
		}
		for _, c := range d.CannotRun {
			row("problem", "%s", c)
		}
	}
	if len(r.Warnings) > 0 {
		b.WriteString("\n")
		for _, wn := range r.Warnings {
			fmt.Fprintf(&b, "warning: %s\n", wn)
		}
	}
	fmt.Fprintf(&b, "\n%d definitions found, %d in use, %d cannot run\n", len(r.Definitions), used, cannot)
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *checkReport) modelText(d checkDefinition) string {
	f := d.ModelField
	switch {
	case f.Alias != "" && !d.ModelInherited:
		return fmt.Sprintf("%s (%s, through model-aliases)", d.Model, f.Written)
	case f.Problem != "":
		return fmt.Sprintf("%s, the parent's (%s)", orNone(d.Model), f.Problem)
	case d.ModelInherited && f.Written != "":
		return fmt.Sprintf("%s, the parent's (%s)", orNone(d.Model), f.Written)
	case d.ModelInherited:
		return orNone(d.Model) + ", the parent's"
	}
	return d.Model
}

func limitsText(turns int, maxTime string) string {
	var parts []string
	if turns > 0 {
		parts = append(parts, fmt.Sprintf("%d turns", turns))
	}
	if maxTime != "" {
		parts = append(parts, maxTime)
	}
	return strings.Join(parts, ", ")
}

func mcpText(u catalog.MCPUse) string {
	kind := "configured"
	if u.Inline {
		kind = "inline"
	}
	s := u.Name + " (" + kind
	if !u.Used {
		s += ", ignored"
	}
	s += ")"
	if u.Note != "" {
		s += ": " + u.Note
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// rel shows a path of the project relative to it.
func (r *checkReport) rel(p string) string {
	if rel, err := filepath.Rel(r.Project, p); err == nil && filepath.IsAbs(p) && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}
