package cmd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/stoke-cli/stoke/agents/structured"
	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless"
	"github.com/stoke-cli/stoke/headless/sdkhost"
)

// Claude Code's flags. The Claude Agent SDK starts its executable with
// `--output-format stream-json --verbose --input-format stream-json` and one flag per
// option (see docs/sdk.md); scripts written for `claude -p` pass the same flags. stoke
// declares every flag of Claude Code's CLI reference (docs/claude-code-flags.md has the
// table and its source), hidden, on its root command. A flag stoke honours changes the
// run. Any other flag is accepted with one warning line, except that outside SDK mode a
// flag whose absence would change what the run does or promises (--json-schema,
// --add-dir, --settings, ...) is refused with one line that says what to do instead: a
// script learns at once instead of parsing output that was never produced. In SDK mode
// (stream-json both ways) nothing is refused, as the SDK may pass any of them.
// -p/--print, --model, --max-turns, --resume, --continue, --session-id, --fork-session,
// --bare, --verbose and --debug are stoke's own flags with the same meaning.

// flagType is the type of a Claude Code flag's value.
type flagType int

const (
	flagBool   flagType = iota
	flagString          // one value: --flag=v or --flag v
	flagList            // repeatable, each value comma separated: --add-dir a --add-dir b
	flagFloat
	flagOptional // an optional value, given only as --flag=v: --worktree, --worktree=name
)

// variadic says which words after a flag's first value are more of its values. Claude
// Code declares some flags variadic (`--allowedTools <tools...>`): they take every
// following word up to the next flag, the prompt included. stoke takes a following word
// only when it is a value of that kind, so `--allowedTools Read "fix the bug"` leaves the
// prompt alone.
type variadic int

const (
	single      variadic = iota
	moreRules            // permission rules naming tools: Read, Bash(git log:*), mcp__srv__tool
	moreDirs             // existing directories
	moreConfigs          // MCP configs: a .json file or a JSON object
	moreBetas            // beta header names: interleaved-thinking-2025-05-14
)

// claudeFlag is one of Claude Code's flags.
type claudeFlag struct {
	name  string
	short string // one-letter shorthand, if Claude Code has one
	typ   flagType
	more  variadic
	// ignored says why stoke does not honour the flag; empty for a flag it honours.
	ignored string
	// instead, when set, refuses the flag outside SDK mode: the run exits 2 with ignored
	// and this advice on one line.
	instead string
	// help shows the flag in stoke --help, under "Claude Code flags" (help.go); the
	// others are hidden there and listed in docs/claude-code-flags.md.
	help  bool
	usage string
}

// claudeFlags lists the Claude Code flags stoke declares besides its own.
func claudeFlags() []claudeFlag {
	return []claudeFlag{
		// Honoured.
		{name: "permission-mode", typ: flagString, help: true, usage: "Claude Code's permission `MODE`: default (manual) | acceptEdits (auto-edit) | bypassPermissions (yolo) | plan | dontAsk"},
		{name: "dangerously-skip-permissions", typ: flagBool, help: true, usage: "the same as --approval-mode yolo"},
		{name: "allowedTools", typ: flagList, more: moreRules, help: true, usage: "permission `RULES` that approve calls without asking: Read, Write, \"Bash(git log:*)\" (also --allowed-tools)"},
		{name: "allowed-tools", typ: flagList, more: moreRules, usage: "the same as --allowedTools"},
		{name: "disallowedTools", typ: flagList, more: moreRules, help: true, usage: "permission `RULES` that refuse calls; a bare tool name takes the tool away (also --disallowed-tools)"},
		{name: "disallowed-tools", typ: flagList, more: moreRules, usage: "the same as --disallowedTools"},
		{name: "tools", typ: flagList, more: moreRules, help: true, usage: "the workspace `TOOLS` offered: Read,Edit,Bash | default (all) | \"\" (none)"},
		{name: "permission-prompt-tool", typ: flagString, ignored: "approval through an MCP tool is not supported: only stdio (an SDK host's canUseTool) is supported",
			instead: "decide permissions with --allowedTools, --disallowedTools or --permission-mode", usage: "stdio: put calls the permission mode refuses to the SDK host (can_use_tool)"},
		{name: "include-partial-messages", typ: flagBool, help: true, usage: "write stream_event lines with the parent's streamed reply"},
		{name: "max-budget-usd", typ: flagFloat, help: true, usage: "end the run with error_max_budget_usd once its estimated cost (total_cost_usd) is over `USD`"},
		{name: "system-prompt", typ: flagString, help: true, usage: "replace stoke's built-in parent system prompt with `TEXT`"},
		{name: "system-prompt-file", typ: flagString, help: true, usage: "replace stoke's built-in parent system prompt with the text of `FILE`"},
		{name: "append-system-prompt", typ: flagString, help: true, usage: "add `TEXT` to the parent's system prompt"},
		{name: "append-system-prompt-file", typ: flagString, help: true, usage: "add the text of `FILE` to the parent's system prompt"},
		{name: "agents", typ: flagString, help: true, usage: "more subagent types, as `JSON`: {\"name\": {\"description\": ..., \"prompt\": ..., \"tools\": [...]}}"},
		{name: "no-session-persistence", typ: flagBool, help: true, usage: "write nothing under $STOKE_HOME for this session"},
		{name: "await-initialize", typ: flagBool, usage: "wait for the SDK's initialize request (stoke always applies it before the first turn)"},
		{name: "forward-subagent-text", typ: flagBool, usage: "stream subagents' messages (stoke always does)"},
		{name: "disable-slash-commands", typ: flagBool, usage: "no skills or slash commands (stoke has none)"},
		{name: "no-chrome", typ: flagBool, usage: "no Chrome integration (stoke has none)"},
		{name: "json-schema", typ: flagString, usage: "a JSON Schema (JSON text, or @FILE) the final answer must match: the result's structured_output"},

		// Accepted with a warning.
		{name: "setting-sources", typ: flagString, ignored: "stoke reads its own settings (.stoke/settings.yaml), not Claude Code's"},
		{name: "settings", typ: flagString, ignored: "stoke reads its own settings (.stoke/settings.yaml), not Claude Code's",
			instead: "pass permission rules with --allowedTools/--disallowedTools and the rest as stoke flags or in .stoke/settings.yaml"},
		{name: "managed-settings", typ: flagString, ignored: "stoke has no managed settings"},
		{name: "managed-settings-in-initialize", typ: flagBool, ignored: "stoke has no managed settings"},
		{name: "initialize-fields", typ: flagString, ignored: "stoke reads no settings from the initialize request"},
		{name: "add-dir", typ: flagList, more: moreDirs, ignored: "the workspace tools work in the working directory only",
			instead: "run stoke in a directory that holds everything the run needs"},
		{name: "fallback-model", typ: flagString, ignored: "stoke has no fallback model; the provider's own retries apply"},
		{name: "betas", typ: flagList, more: moreBetas, ignored: "stoke sends no Anthropic beta headers"},
		{name: "agent", typ: flagString, ignored: "the parent is always stoke's own agent",
			instead: "put the agent's instructions in --append-system-prompt, or define it with --agents and let the parent launch it with the task tool"},
		{name: "resume-session-at", typ: flagString, ignored: "a resumed session continues from its last message"},
		{name: "resume-drops-turn", typ: flagString, ignored: "a resumed session continues from its last message"},
		{name: "include-hook-events", typ: flagBool, ignored: "stoke writes no hook events"},
		{name: "replay-user-messages", typ: flagBool, ignored: "stoke does not echo user messages"},
		{name: "effort", typ: flagString, ignored: "stoke sends no reasoning effort"},
		{name: "thinking", typ: flagString, ignored: "stoke sends no thinking configuration"},
		{name: "thinking-display", typ: flagString, ignored: "stoke sends no thinking configuration"},
		{name: "max-thinking-tokens", typ: flagString, ignored: "stoke sends no thinking configuration"},
		{name: "task-budget", typ: flagString, ignored: "stoke has no task budget; see --max-budget-usd"},
		{name: "allow-dangerously-skip-permissions", typ: flagBool, ignored: "set_permission_mode may always switch to bypassPermissions"},
		{name: "debug-file", typ: flagString, ignored: "diagnostics go to stderr (--debug)"},
		{name: "plugin-dir", typ: flagList, ignored: "stoke has no plugins"},
		{name: "plugin-dir-no-mcp", typ: flagList, ignored: "stoke has no plugins"},
		{name: "plugin-url", typ: flagList, ignored: "stoke has no plugins"},
		{name: "channels", typ: flagString, ignored: "stoke has no channels"},
		{name: "dangerously-load-development-channels", typ: flagString, ignored: "stoke has no channels"},
		{name: "project-config-root", typ: flagString, ignored: "stoke reads .stoke/ in the working directory"},
		{name: "advisor", typ: flagString, ignored: "stoke has no advisor tool"},
		{name: "append-subagent-system-prompt", typ: flagString, ignored: "subagents keep the prompts of their definitions"},
		{name: "autocompact", typ: flagString, ignored: "stoke does not compact conversations"},
		{name: "exclude-dynamic-system-prompt-sections", typ: flagBool, ignored: "stoke's system prompt has no per-machine sections to move"},
		{name: "prompt-suggestions", typ: flagBool, ignored: "stoke writes no prompt suggestions"},
		{name: "init", typ: flagBool, ignored: "stoke has no Setup hooks"},
		{name: "maintenance", typ: flagBool, ignored: "stoke has no Setup hooks"},
		{name: "name", short: "n", typ: flagString, ignored: "stoke sessions have ids, not names (stoke sessions list)"},
		{name: "safe-mode", typ: flagBool, ignored: "no customizations to turn off beyond project settings: use --bare to skip those"},
		{name: "ide", typ: flagBool, ignored: "stoke connects to no IDE"},
		{name: "chrome", typ: flagBool, ignored: "stoke has no Chrome integration"},
		{name: "ax-screen-reader", typ: flagBool, ignored: "stoke has no terminal interface"},
		{name: "teammate-mode", typ: flagString, ignored: "stoke has no terminal interface"},
		{name: "tmux", typ: flagOptional, ignored: "stoke has no terminal interface"},
		{name: "remote-control-session-name-prefix", typ: flagString, ignored: "stoke has no Remote Control"},

		// Interactive or cloud features: refused outside SDK mode.
		{name: "init-only", typ: flagBool, ignored: "stoke has no Setup hooks", instead: "leave the flag out: there is nothing to initialize"},
		{name: "from-pr", typ: flagOptional, ignored: "stoke has no session picker", instead: "resume by id: stoke -r SESSION_ID (stoke sessions list)"},
		{name: "teleport", typ: flagBool, ignored: "stoke runs locally only", instead: "resume a local session with -r SESSION_ID"},
		{name: "cloud", typ: flagBool, ignored: "stoke runs locally only", instead: "run stoke where the work is"},
		{name: "remote", typ: flagBool, ignored: "stoke runs locally only", instead: "run stoke where the work is"},
		{name: "environment", typ: flagString, ignored: "stoke runs locally only", instead: "run stoke where the work is"},
		{name: "ref", typ: flagString, ignored: "stoke runs locally only", instead: "check the ref out and run stoke there"},
		{name: "remote-control", typ: flagOptional, ignored: "stoke has no Remote Control", instead: "drive stoke over stream-json on stdin (--input-format stream-json)"},
		{name: "rc", typ: flagOptional, ignored: "stoke has no Remote Control", instead: "drive stoke over stream-json on stdin (--input-format stream-json)"},
		{name: "bg", typ: flagBool, ignored: "stoke runs in the foreground", instead: "put stoke in the background with your shell (&) or your CI system"},
		{name: "background", typ: flagBool, ignored: "stoke runs in the foreground", instead: "put stoke in the background with your shell (&) or your CI system"},
		{name: "exec", typ: flagBool, ignored: "stoke runs no background jobs", instead: "run the command with your shell"},
		{name: "worktree", short: "w", typ: flagOptional, ignored: "stoke works in the current directory", instead: "create the worktree with git worktree add and run stoke in it"},
		{name: "enable-auto-mode", typ: flagBool, ignored: "removed from Claude Code (v2.1.111), and stoke has no auto mode", instead: "use --permission-mode acceptEdits or --allowedTools"},
	}
}

// addClaudeFlags declares Claude Code's flags, hidden from the flags of --help: the
// ones with help set are shown apart, under "Claude Code flags" (help.go), and
// docs/claude-code-flags.md lists them all.
func addClaudeFlags(f *pflag.FlagSet) { declareHidden(f, claudeFlags()) }

// declareHidden declares flags (Claude Code's, Qwen Code's), hidden from --help.
func declareHidden(f *pflag.FlagSet, flags []claudeFlag) {
	for _, cf := range flags {
		switch cf.typ {
		case flagBool:
			f.BoolP(cf.name, cf.short, false, cf.usage)
		case flagString:
			f.StringP(cf.name, cf.short, "", cf.usage)
		case flagList:
			f.StringArrayP(cf.name, cf.short, nil, cf.usage)
		case flagFloat:
			f.Float64P(cf.name, cf.short, 0, cf.usage)
		case flagOptional:
			f.StringP(cf.name, cf.short, "", cf.usage)
			f.Lookup(cf.name).NoOptDefVal = "true"
		}
		_ = f.MarkHidden(cf.name)
	}
}

// claudeOptions is what Claude Code's flags and the SDK's environment ask of a run.
type claudeOptions struct {
	sdk           sdkhost.Options
	noPersistence bool
	// outputSchema is --json-schema; outputAttempts is MAX_STRUCTURED_OUTPUT_RETRIES (0:
	// the default).
	outputSchema   *structured.Schema
	outputAttempts int
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

// claudeInput is what applyClaudeFlags reads besides the flags.
type claudeInput struct {
	lookupEnv func(string) (string, bool)
	// cwd resolves relative paths of --system-prompt-file and --append-system-prompt-file.
	cwd string
	// sdk: the run speaks stream-json both ways (SDK mode), where no flag is refused.
	sdk bool
}

// applyClaudeFlags reads Claude Code's flags. It runs before the configuration is loaded:
// --permission-mode and --dangerously-skip-permissions set --approval-mode when that flag
// was not given itself. Values that cannot mean anything (--agents that is not JSON, a
// negative --max-budget-usd) are usage errors, and so, outside SDK mode, are the flags
// stoke refuses (claudeFlag.instead).
func applyClaudeFlags(f *pflag.FlagSet, in claudeInput) (*claudeOptions, error) {
	o := &claudeOptions{}
	changed := f.Changed

	for _, cf := range claudeFlags() {
		if cf.ignored == "" || !changed(cf.name) {
			continue
		}
		if v := f.Lookup(cf.name).Value.String(); cf.name == "permission-prompt-tool" && v == "stdio" {
			continue // the one value honoured
		}
		if cf.instead != "" && !in.sdk {
			return nil, usageErrorf("--%s is not supported: %s; %s", cf.name, cf.ignored, cf.instead)
		}
		o.warn("Claude Code flag ignored", "flag", "--"+cf.name, "reason", cf.ignored)
	}
	if err := o.permissionMode(f, changed, in.sdk); err != nil {
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
		vals, _ := f.GetStringArray("tools")
		switch v := strings.TrimSpace(strings.Join(vals, ",")); v {
		case "default":
		case "", ",":
			o.sdk.Tools = []string{}
		default:
			o.sdk.Tools = splitRules(vals)
			if o.sdk.Tools == nil {
				o.sdk.Tools = []string{}
			}
		}
	}
	if changed("permission-prompt-tool") {
		if v, _ := f.GetString("permission-prompt-tool"); v == "stdio" {
			o.sdk.PermissionPromptStdio = true
		}
	}
	o.sdk.IncludePartialMessages, _ = f.GetBool("include-partial-messages")
	budget, _ := f.GetFloat64("max-budget-usd")
	if budget < 0 {
		return nil, usageErrorf("invalid --max-budget-usd %v: want 0 (none) or more", budget)
	}
	o.sdk.MaxBudgetUSD = budget // priced by headless.Options.Prices (total_cost_usd)
	if err := o.systemPrompts(f, changed, in.cwd); err != nil {
		return nil, err
	}
	if changed("agents") {
		v, _ := f.GetString("agents")
		defs, err := sdkhost.ParseAgentsJSON(v)
		if err != nil {
			return nil, usageErrorf("invalid --agents: %v", err)
		}
		o.sdk.Agents = defs
	}
	o.noPersistence, _ = f.GetBool("no-session-persistence")
	if err := o.structuredOutput(f, changed, in); err != nil {
		return nil, err
	}

	if v, ok := in.lookupEnv("CLAUDE_CODE_SDK_READS_SESSION_STATE"); ok && v == "1" {
		o.sdk.SessionStates = true
	}
	for _, k := range []string{"CLAUDE_CODE_ENTRYPOINT", "CLAUDE_AGENT_SDK_VERSION"} {
		if v, ok := in.lookupEnv(k); ok {
			o.host = append(o.host, k, v)
		}
	}
	return o, nil
}

// structuredOutput reads --json-schema (JSON text, or @FILE relative to cwd) and Claude
// Code's MAX_STRUCTURED_OUTPUT_RETRIES, the answers a turn may give before it fails.
func (o *claudeOptions) structuredOutput(f *pflag.FlagSet, changed func(string) bool, in claudeInput) error {
	if changed("json-schema") {
		v, _ := f.GetString("json-schema")
		schema, err := structured.Load(v, in.cwd)
		if err != nil {
			return usageErrorf("invalid --json-schema: %v", err)
		}
		o.outputSchema = schema
	}
	if v, ok := in.lookupEnv("MAX_STRUCTURED_OUTPUT_RETRIES"); ok && strings.TrimSpace(v) != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return usageErrorf("invalid MAX_STRUCTURED_OUTPUT_RETRIES=%q: want a number of answers, 1 or more", v)
		}
		o.outputAttempts = n
	}
	return nil
}

// systemPrompts reads --system-prompt, --append-system-prompt and their -file forms, which
// name a file relative to cwd. A replacement and its file form together are a usage
// error, as in Claude Code; the two append forms are joined, the text first.
func (o *claudeOptions) systemPrompts(f *pflag.FlagSet, changed func(string) bool, cwd string) error {
	if changed("system-prompt") && changed("system-prompt-file") {
		return usageErrorf("--system-prompt and --system-prompt-file cannot be used together")
	}
	read := func(flag string) (string, error) {
		name, _ := f.GetString(flag)
		path := name
		if !filepath.IsAbs(path) {
			path = filepath.Join(cwd, path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return "", usageErrorf("--%s %s: %v", flag, name, errors.Unwrap(err))
		}
		return strings.TrimRight(string(data), "\r\n"), nil
	}
	o.sdk.SystemPrompt, _ = f.GetString("system-prompt")
	if changed("system-prompt-file") {
		text, err := read("system-prompt-file")
		if err != nil {
			return err
		}
		if strings.TrimSpace(text) == "" {
			return usageErrorf("--system-prompt-file: the file is empty")
		}
		o.sdk.SystemPrompt = text
	}
	o.sdk.AppendSystemPrompt, _ = f.GetString("append-system-prompt")
	if changed("append-system-prompt-file") {
		text, err := read("append-system-prompt-file")
		if err != nil {
			return err
		}
		o.sdk.AppendSystemPrompt = strings.Join(slices.DeleteFunc([]string{o.sdk.AppendSystemPrompt, text}, func(s string) bool {
			return strings.TrimSpace(s) == ""
		}), "\n\n")
	}
	return nil
}

// permissionMode maps --permission-mode (and --dangerously-skip-permissions) onto
// --approval-mode, which wins when both are given. A mode stoke does not know is a usage
// error outside SDK mode, and the default mode with a warning in it.
func (o *claudeOptions) permissionMode(f *pflag.FlagSet, changed func(string) bool, sdk bool) error {
	var mode tools.Mode
	if changed("dangerously-skip-permissions") {
		if skip, _ := f.GetBool("dangerously-skip-permissions"); skip {
			mode = tools.ModeYolo
		}
	}
	if changed("permission-mode") {
		pm, _ := f.GetString("permission-mode")
		m, noPrompt, err := tools.ParsePermissionMode(pm)
		switch {
		case err != nil && !sdk:
			return usageErrorf("invalid --permission-mode %q: want one of default, acceptEdits, plan, bypassPermissions, dontAsk (stoke has no auto mode: use acceptEdits, or --allowedTools for what may run)", pm)
		case err != nil:
			o.warn("Claude Code permission mode not known: using default", "flag", "--permission-mode="+pm)
			m = tools.ModeDefault
		}
		if noPrompt {
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
	if err := f.Set("approval-mode", string(mode)); err != nil {
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
