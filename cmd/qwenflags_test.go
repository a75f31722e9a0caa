package cmd

import (
	"strings"
	"testing"

	"github.com/stoke-cli/stoke/agents/tools"
	"github.com/stoke-cli/stoke/headless/sdkhost"
)

// qwenArgs is what Qwen Code's SDK always passes.
var qwenArgs = []string{"--input-format", "stream-json", "--output-format", "stream-json", "--channel=SDK"}

func TestQwenFlags(t *testing.T) {
	t.Parallel()
	qwen := func(o sdkhost.Options) sdkhost.Options {
		o.Dialect, o.PermissionPromptStdio = sdkhost.DialectQwen, true
		return o
	}
	tests := []struct {
		name     string
		args     []string
		approval tools.Mode
		want     sdkhost.Options
		warns    []string
	}{
		{name: "the SDK's bare invocation", approval: "default", want: qwen(sdkhost.Options{})},
		{name: "each mode the SDK sends", args: []string{"--approval-mode", "auto-edit"}, approval: "auto-edit", want: qwen(sdkhost.Options{})},
		{name: "auto is the default mode, with a warning", args: []string{"--approval-mode", "auto"}, approval: "default",
			want: qwen(sdkhost.Options{}), warns: []string{`flag="--approval-mode=auto"`}},
		{name: "max session turns", args: []string{"--max-session-turns", "7"}, approval: "default", want: qwen(sdkhost.Options{MaxSessionTurns: 7})},
		{name: "-1 is no cap", args: []string{"--max-session-turns", "-1"}, approval: "default", want: qwen(sdkhost.Options{})},
		{name: "core tools in Qwen Code's names, specifiers stripped", args: []string{"--core-tools", "read_file,run_shell_command(git *),grep_search"},
			approval: "default", want: qwen(sdkhost.Options{Tools: []string{"read_file", "shell", "grep"}})},
		{name: "exclude and allowed tools in Qwen Code's names", args: []string{"--exclude-tools", "write_file,run_shell_command(rm *)", "--allowed-tools", "run_shell_command(git status),Read"},
			approval: "default", want: qwen(sdkhost.Options{DisallowedTools: []string{"write_file", "shell(rm *)"}, AllowedTools: []string{"shell(git status)", "read_file"}})},
		{name: "flags stoke does not honour warn", args: []string{"--auth-type", "openai", "--max-tool-calls", "5", "--insecure"}, approval: "default",
			want: qwen(sdkhost.Options{}), warns: []string{"flag=--auth-type", "flag=--max-tool-calls", "flag=--insecure"}},
		{name: "--sandbox is honoured: the default mode", args: []string{"--sandbox"}, approval: "default", want: qwen(sdkhost.Options{})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := sdkProcess(t).run(t, append(append([]string{}, qwenArgs...), tt.args...)...)
			checkSDKOptions(t, got, tt.approval, tt.want)
			if n := strings.Count(got.stderr, "level=WARN"); n != len(tt.warns) {
				t.Errorf("%d warnings, want %d:\n%s", n, len(tt.warns), got.stderr)
			}
			for _, w := range tt.warns {
				if !strings.Contains(got.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, got.stderr)
				}
			}
		})
	}
}

func TestQwenFlagErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		append(append([]string{}, qwenArgs...), "--max-session-turns", "many"),
		{"-p", "hi", "--approval-mode", "auto"}, // auto is Qwen Code's: without its SDK it is bad usage
	} {
		got := sdkProcess(t).run(t, args...)
		if got.code != 2 || strings.Count(strings.TrimSpace(got.stderr), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", args, got.code, got.stderr)
		}
	}
}
