package cmd

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stoke-cli/stoke/headless"
	"github.com/stoke-cli/stoke/headless/sdkhost"
)

// Claude Code's flags. The Claude Agent SDK starts its executable with
// `--output-format stream-json --verbose --input-format stream-json` and one flag per
// option (see docs/sdk.md); scripts written for `claude -p` pass the same flags. stoke
// declares them all, hidden, on its root command: the ones it honours change the run,
// the others are accepted with one warning line each, so that they never make a run fail.
// --model, --max-turns, --resume, --continue, --session-id, --verbose and --debug are
// stoke's own flags with the same meaning.

// flagType is the type of a Claude Code flag's value.
type flagType int

const (
	flagBool   flagType = iota
	flagString          // one value: --flag=v or --flag v
	flagList            // repeatable, each value comma separated: --add-dir a --add-dir b
	flagFloat
)

// claudeFlag is one of Claude Code's flags.
type claudeFlag struct {
	name string
	typ  flagType
	// ignored says why stoke does not honour the flag; empty for a flag it honours.
	ignored string
	usage   string
}

// claudeFlags lists the Claude Code flags stoke declares besides its own.
func claudeFlags() []claudeFlag {
	return []claudeFlag{
		// Honoured.
		{name: "permission-mode", typ: flagString, usage: "Claude Code's permission mode: default | acceptEdits (auto-edit) | bypassPermissions (yolo) | plan | dontAsk"},
		{name: "dangerously-skip-permissions", typ: flagBool, usage: "the same as --approval-mode yolo"},
		{name: "allowedTools", typ: flagList, usage: "permission rules that approve calls without asking: Write, Bash(git status), Bash(npm run:*)"},
		{name: "allowed-tools", typ: flagList, usage: "the same as --allowedTools"},
		{name: "disallowedTools", typ: flagList, usage: "permission rules that refuse calls; a bare tool name takes the tool away"},
		{name: "disallowed-tools", typ: flagList, usage: "the same as --disallowedTools"},
		{name: "tools", typ: flagString, usage: "the workspace tools offered: Read,Edit,Bash | default (all) | \"\" (none)"},
		{name: "permission-prompt-tool", typ: flagString, usage: "stdio: put calls the permission mode refuses to the SDK host (can_use_tool)"},
		{name: "include-partial-messages", typ: flagBool, usage: "write stream_event lines with the parent's streamed reply"},
		{name: "max-budget-usd", typ: flagFloat, usage: "end the run with error_max_budget_usd once its estimated cost is over this"},
		{name: "system-prompt", typ: flagString, usage: "replace stoke's built-in parent system prompt"},
		{name: "append-system-prompt", typ: flagString, usage: "add text to the parent's system prompt"},
		{name: "agents", typ: flagString, usage: `more subagent types, as JSON: {"name": {"description": ..., "prompt": ..., "tools": [...]}}`},
		{name: "no-session-persistence", typ: flagBool, usage: "write nothing under $STOKE_HOME for this session"},
		{name: "await-initialize", typ: flagBool, usage: "wait for the SDK's initialize request (stoke always applies it before the first turn)"},

		// Accepted with a warning.
		{name: "setting-sources", typ: flagString, ignored: "stoke reads its own settings (.stoke/settings.yaml), not Claude Code's"},
		{name: "settings", typ: flagString, ignored: "stoke reads its own settings (.stoke/settings.yaml), not Claude Code's"},
		{name: "managed-settings", typ: flagString, ignored: "stoke has no managed settings"},
		{name: "managed-settings-in-initialize", typ: flagBool, ignored: "stoke has no managed settings"},
		{name: "initialize-fields", typ: flagString, ignored: "stoke reads no settings from the initialize request"},
		{name: "mcp-config", typ: flagList, ignored: "stoke has no MCP client"},
		{name: "strict-mcp-config", typ: flagBool, ignored: "stoke has no MCP client"},
		{name: "add-dir", typ: flagList, ignored: "the workspace tools work in the working directory only"},
		{name: "fallback-model", typ: flagString, ignored: "stoke has no fallback model; the provider's own retries apply"},
		{name: "betas", typ: flagString, ignored: "stoke sends no Anthropic beta headers"},
		{name: "agent", typ: flagString, ignored: "the parent is always stoke's own agent; use --agents for subagent types"},
		{name: "fork-session", typ: flagBool, ignored: "a resumed session continues under its own id"},
		{name: "resume-session-at", typ: flagString, ignored: "a resumed session continues from its last message"},
		{name: "resume-drops-turn", typ: flagString, ignored: "a resumed session continues from its last message"},
		{name: "include-hook-events", typ: flagBool, ignored: "stoke writes no hook events"},
		{name: "replay-user-messages", typ: flagBool, ignored: "stoke does not echo user messages"},
		{name: "json-schema", typ: flagString, ignored: "stoke has no structured output"},
		{name: "effort", typ: flagString, ignored: "stoke sends no reasoning effort"},
		{name: "thinking", typ: flagString, ignored: "stoke sends no thinking configuration"},
		{name: "thinking-display", typ: flagString, ignored: "stoke sends no thinking configuration"},
		{name: "max-thinking-tokens", typ: flagString, ignored: "stoke sends no thinking configuration"},
		{name: "task-budget", typ: flagString, ignored: "stoke has no task budget; see --max-budget-usd"},
		{name: "allow-dangerously-skip-permissions", typ: flagBool, ignored: "set_permission_mode may always switch to bypassPermissions"},
		{name: "debug-file", typ: flagString, ignored: "diagnostics go to stderr (--debug)"},
		{name: "plugin-dir", typ: flagList, ignored: "stoke has no plugins"},
		{name: "plugin-dir-no-mcp", typ: flagList, ignored: "stoke has no plugins"},
		{name: "channels", typ: flagString, ignored: "stoke has no channels"},
		{name: "project-config-root", typ: flagString, ignored: "stoke reads .stoke/ in the working directory"},
		{name: "system-prompt-file", typ: flagString, ignored: "use --system-prompt"},
		{name: "append-system-prompt-file", typ: flagString, ignored: "use --append-system-prompt"},
	}
}

// addClaudeFlags declares Claude Code's flags, hidden from --help (docs/sdk.md lists them).
func addClaudeFlags(f *pflag.FlagSet) {
	for _, cf := range claudeFlags() {
		switch cf.typ {
		case flagBool:
			f.Bool(cf.name, false, cf.usage)
		case flagString:
			f.String(cf.name, "", cf.usage)
		case flagList:
			f.StringArray(cf.name, nil, cf.usage)
		case flagFloat:
			f.Float64(cf.name, 0, cf.usage)
		}
		_ = f.MarkHidden(cf.name)
	}
}

// claudeOptions is what Claude Code's flags and the SDK's environment ask of a run.
type claudeOptions struct {
	sdk           sdkhost.Options
	noPersistence bool
	// warnings are logged once the logger exists, one line each.
	warnings []claudeWarning
	// host describes the SDK host from its environment, for a debug line.
	host []any
}

type claudeWarning struct {
	msg  string
	args []any
}

func (o *claudeOptions) warn(msg string, args ...any) {
	o.warnings = append(o.warnings, claudeWarning{msg: msg, args: args})
}

// log writes the warnings and the SDK host's identity.
func (o *claudeOptions) log(logger *slog.Logger) {
	for _, w := range o.warnings {
		logger.Warn(w.msg, w.args...)
	}
	if len(o.host) > 0 {
		logger.Debug("driven by a Claude Agent SDK host", o.host...)
	}
}

// approvalOf maps a Claude Code permission mode to stoke's approval mode.
func approvalOf(permissionMode string) (string, bool) {
	switch permissionMode {
	case "default", "dontAsk":
		return approvalDefault, true
	case "acceptEdits":
		return approvalAutoEdit, true
	case "bypassPermissions":
		return approvalYolo, true
	case "plan":
		return approvalPlan, true
	}
	return "", false
}

// applyClaudeFlags reads Claude Code's flags. It runs before the configuration is loaded:
// --permission-mode and --dangerously-skip-permissions set --approval-mode when that flag
// was not given itself. Values that cannot mean anything (--agents that is not JSON, a
// negative --max-budget-usd) are usage errors.
func applyClaudeFlags(f *pflag.FlagSet, lookupEnv func(string) (string, bool)) (*claudeOptions, error) {
	o := &claudeOptions{}
	changed := func(name string) bool { fl := f.Lookup(name); return fl != nil && fl.Changed }

	if err := o.permissionMode(f, changed); err != nil {
		return nil, err
	}
	for _, name := range []string{"allowedTools", "allowed-tools"} {
		vals, _ := f.GetStringArray(name)
		o.sdk.AllowedTools = append(o.sdk.AllowedTools, splitRules(vals)...)
	}
	for _, name := range []string{"disallowedTools", "disallowed-tools"} {
		vals, _ := f.GetStringArray(name)
		o.sdk.DisallowedTools = append(o.sdk.DisallowedTools, splitRules(vals)...)
	}
	if changed("tools") {
		v, _ := f.GetString("tools")
		switch strings.TrimSpace(v) {
		case "default":
		case "":
			o.sdk.Tools = []string{}
		default:
			o.sdk.Tools = splitRules([]string{v})
		}
	}
	if changed("permission-prompt-tool") {
		v, _ := f.GetString("permission-prompt-tool")
		if v == "stdio" {
			o.sdk.PermissionPromptStdio = true
		} else {
			o.warn("Claude Code flag ignored", "flag", "--permission-prompt-tool="+v, "reason", "stoke has no MCP client: only stdio (the SDK's canUseTool) is supported")
		}
	}
	o.sdk.IncludePartialMessages, _ = f.GetBool("include-partial-messages")
	budget, _ := f.GetFloat64("max-budget-usd")
	if budget < 0 {
		return nil, usageErrorf("invalid --max-budget-usd %v: want 0 (none) or more", budget)
	}
	o.sdk.MaxBudgetUSD = budget // priced by headless.Options.Prices (total_cost_usd)
	o.sdk.SystemPrompt, _ = f.GetString("system-prompt")
	o.sdk.AppendSystemPrompt, _ = f.GetString("append-system-prompt")
	if changed("agents") {
		v, _ := f.GetString("agents")
		defs, err := sdkhost.ParseAgentsJSON(v)
		if err != nil {
			return nil, usageErrorf("invalid --agents: %v", err)
		}
		o.sdk.Agents = defs
	}
	o.noPersistence, _ = f.GetBool("no-session-persistence")

	for _, cf := range claudeFlags() {
		if cf.ignored != "" && changed(cf.name) {
			o.warn("Claude Code flag ignored", "flag", "--"+cf.name, "reason", cf.ignored)
		}
	}

	if v, ok := lookupEnv("CLAUDE_CODE_SDK_READS_SESSION_STATE"); ok && v == "1" {
		o.sdk.SessionStates = true
	}
	for _, k := range []string{"CLAUDE_CODE_ENTRYPOINT", "CLAUDE_AGENT_SDK_VERSION"} {
		if v, ok := lookupEnv(k); ok {
			o.host = append(o.host, k, v)
		}
	}
	return o, nil
}

// permissionMode maps --permission-mode (and --dangerously-skip-permissions) onto
// --approval-mode, which wins when both are given.
func (o *claudeOptions) permissionMode(f *pflag.FlagSet, changed func(string) bool) error {
	mode := ""
	if changed("dangerously-skip-permissions") {
		if skip, _ := f.GetBool("dangerously-skip-permissions"); skip {
			mode = approvalYolo
		}
	}
	if changed("permission-mode") {
		pm, _ := f.GetString("permission-mode")
		m, ok := approvalOf(pm)
		if !ok {
			o.warn("Claude Code permission mode not known: using default", "flag", "--permission-mode="+pm)
			m = approvalDefault
		}
		if pm == "dontAsk" {
			o.sdk.NoPrompt = true
		}
		mode = m
	}
	if mode == "" {
		return nil
	}
	if changed("approval-mode") {
		o.warn("--permission-mode ignored: --approval-mode is given", "approval-mode", f.Lookup("approval-mode").Value.String())
		return nil
	}
	if err := f.Set("approval-mode", mode); err != nil {
		return fmt.Errorf("set --approval-mode from --permission-mode: %w", err)
	}
	return nil
}

// splitRules splits permission rules written as one comma- or space-separated list
// ("Read,Bash(git log:*)", "Read Edit"), leaving commas and spaces inside parentheses alone.
func splitRules(vals []string) []string {
	var out []string
	for _, v := range vals {
		depth, start := 0, 0
		flush := func(end int) {
			if r := strings.TrimSpace(v[start:end]); r != "" {
				out = append(out, r)
			}
			start = end + 1
		}
		for i, c := range v {
			switch {
			case c == '(':
				depth++
			case c == ')' && depth > 0:
				depth--
			case (c == ',' || c == ' ') && depth == 0:
				flush(i)
			}
		}
		flush(len(v))
	}
	return out
}

// sdkInvocation reports whether args are the Claude Agent SDK's: stream-json on both
// stdin and stdout and no subcommand. Such a run ignores flags it does not know (one
// warning each) instead of failing, as the SDK may pass options of a newer Claude Code.
func sdkInvocation(args []string) bool {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return false // a subcommand or a stray argument
	}
	return flagValue(args, "input-format") == headless.InputStreamJSON &&
		flagValue(args, "output-format") == headless.OutputStreamJSON
}

// flagValue is the last value of --name in args, in either spelling.
func flagValue(args []string, name string) string {
	val := ""
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			val = v
		} else if a == "--"+name && i+1 < len(args) {
			val = args[i+1]
		}
	}
	return val
}

// unknownFlags lists the flags in args that f does not declare.
func unknownFlags(f *pflag.FlagSet, args []string) []string {
	var out []string
	for _, a := range args {
		if a == "--" {
			break
		}
		switch {
		case strings.HasPrefix(a, "--"):
			name, _, _ := strings.Cut(a[2:], "=")
			if f.Lookup(name) == nil {
				out = append(out, "--"+name)
			}
		case strings.HasPrefix(a, "-") && len(a) > 1:
			short := a[1:2]
			if f.ShorthandLookup(short) == nil {
				out = append(out, "-"+short)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// allowSDKFlags makes an SDK invocation lenient: flags root does not know are skipped
// (with the value that follows them, when it is not a flag) and each is logged once on
// errOut.
func allowSDKFlags(root *cobra.Command, args []string, errOut io.Writer) {
	if !sdkInvocation(args) {
		return
	}
	unknown := unknownFlags(root.Flags(), args)
	if len(unknown) == 0 {
		return
	}
	root.FParseErrWhitelist.UnknownFlags = true
	logger := slog.New(slog.NewTextHandler(errOut, nil))
	for _, name := range unknown {
		logger.Warn("unknown flag ignored (Claude Agent SDK mode)", "flag", name)
	}
}
