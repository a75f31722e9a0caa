package cmd

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless/sdkhost"
)

// Qwen Code's flags, as its SDK (@qwen-code/sdk) starts its executable:
// `--input-format stream-json --output-format stream-json --channel=SDK` and one flag per
// option (docs/sdk.md). The ones Claude Code shares (--model, --system-prompt,
// --allowed-tools, --resume, ...) are declared in claudeflags.go; --approval-mode and
// --sandbox (Qwen Code's boolean: its bare form is the default mode) are stoke's own. These are hidden, and those stoke does not honour are accepted with one
// warning each.
func qwenFlags() []claudeFlag {
	return []claudeFlag{
		{name: "channel", typ: flagString, usage: "SDK: Qwen Code's SDK drives stoke (its tool names, can_use_tool for what the mode does not allow)"},
		{name: "max-session-turns", typ: flagString, usage: "end the session with error_max_turns once the parent has asked its model this many times (-1: no cap)"},
		{name: "core-tools", typ: flagList, more: moreRules, usage: "the workspace tools offered, in Qwen Code's or Claude Code's names"},
		{name: "exclude-tools", typ: flagList, more: moreRules, usage: "tools taken away, or calls refused by a rule (run_shell_command(rm *)), in every mode"},
		{name: "auth-type", typ: flagString, ignored: "the provider is set by --provider"},
		{name: "max-tool-calls", typ: flagString, ignored: "stoke caps model calls (--max-turns), not tool calls"},
		{name: "max-subagent-depth", typ: flagString, ignored: "subagents never launch subagents in stoke"},
		{name: "include-directories", typ: flagList, ignored: "the workspace tools work in the working directory only"},
		{name: "extensions", typ: flagList, ignored: "stoke has no extensions"},
		{name: "allowed-mcp-server-names", typ: flagList, ignored: "every configured MCP server runs"},
		{name: "proxy", typ: flagString, ignored: "set HTTPS_PROXY in the environment"},
		{name: "insecure", typ: flagBool, ignored: "TLS certificates are always verified"},
		{name: "disabled-slash-commands", typ: flagList, ignored: "stoke has no slash commands"},
	}
}

// addQwenFlags declares Qwen Code's flags, hidden from --help.
func addQwenFlags(f *pflag.FlagSet) { declareHidden(f, qwenFlags()) }

// applyQwenFlags reads Qwen Code's flags into o, before the configuration is loaded:
// --channel=SDK makes the run a Qwen Code SDK session (its dialect; calls the permission
// mode does not allow are put to the host, whose SDK always answers can_use_tool), where
// --approval-mode auto (a model classifier in Qwen Code, which puts to the host what it
// cannot decide) is the default mode. --core-tools, --exclude-tools and --allowed-tools
// may name tools in Qwen Code's names.
func applyQwenFlags(f *pflag.FlagSet, o *claudeOptions) error {
	changed := f.Changed
	for _, qf := range qwenFlags() {
		if qf.ignored != "" && changed(qf.name) {
			o.warn("Qwen Code flag ignored", "flag", "--"+qf.name, "reason", qf.ignored)
		}
	}
	if changed("channel") {
		switch ch, _ := f.GetString("channel"); ch {
		case "SDK":
			o.sdk.Dialect = sdkhost.DialectQwen
			o.sdk.PermissionPromptStdio = true
		default:
			o.warn("Qwen Code channel ignored: only SDK changes what stoke does", "flag", "--channel="+ch)
		}
	}
	qwen := o.sdk.Dialect == sdkhost.DialectQwen
	if qwen {
		if mode, _ := f.GetString("approval-mode"); mode == "auto" {
			o.warn("approval mode auto is the default mode: stoke has no classifier, so what the mode does not allow goes to the host's canUseTool", "flag", "--approval-mode=auto")
			if err := f.Set("approval-mode", string(tools.ModeDefault)); err != nil {
				return fmt.Errorf("set --approval-mode: %w", err)
			}
		}
		o.sdk.AllowedTools = sdkhost.QwenRules(o.sdk.AllowedTools)
	}
	if changed("max-session-turns") {
		v, _ := f.GetString("max-session-turns")
		var n int
		if _, err := fmt.Sscan(v, &n); err != nil {
			return usageErrorf("invalid --max-session-turns %q: want a number (-1: no cap)", v)
		}
		if n > 0 {
			o.sdk.MaxSessionTurns = n
		}
	}
	if changed("core-tools") {
		vals, _ := f.GetStringArray("core-tools")
		var names []string
		for _, r := range sdkhost.QwenRules(splitRules(vals)) {
			name, _, _ := strings.Cut(r, "(") // Qwen Code strips specifiers: core tools are registered, not invoked
			names = append(names, strings.TrimSpace(name))
		}
		o.sdk.Tools = append([]string{}, names...)
	}
	if changed("exclude-tools") {
		vals, _ := f.GetStringArray("exclude-tools")
		o.sdk.DisallowedTools = append(o.sdk.DisallowedTools, sdkhost.QwenRules(splitRules(vals))...)
	}
	return nil
}
