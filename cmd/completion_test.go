package cmd

import (
	"strings"
	"testing"
)

func TestCompletion(t *testing.T) {
	t.Parallel()
	for shell, marker := range map[string]string{
		"bash":       "# bash completion V2 for stoke",
		"zsh":        "#compdef stoke",
		"fish":       "# fish completion for stoke",
		"powershell": "# powershell completion for stoke",
	} {
		t.Run(shell, func(t *testing.T) {
			t.Parallel()
			got := newTestProcess(t).run(t, "completion", shell)
			if got.code != 0 || !strings.HasPrefix(got.stdout, marker) || got.stderr != "" {
				t.Errorf("completion %s: code %d, stderr %q, stdout starts %q", shell, got.code, got.stderr, got.stdout[:min(len(got.stdout), 60)])
			}
		})
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		if got := newTestProcess(t).run(t, args...); got.code != 2 || !strings.Contains(got.stderr, "bash, zsh, fish or powershell") {
			t.Errorf("%q: code %d, stderr %q; want a usage error naming the shells", args, got.code, got.stderr)
		}
	}
	// The scripts call the hidden __complete command: flags and subcommands complete.
	if got := newTestProcess(t).run(t, "__complete", "--output-f"); !strings.Contains(got.stdout, "--output-format") {
		t.Errorf("__complete --output-f = %q", got.stdout)
	}
	if got := newTestProcess(t).run(t, "__complete", "compl"); !strings.Contains(got.stdout, "completion") {
		t.Errorf("__complete compl = %q", got.stdout)
	}
	// A flag of a few fixed values completes to those values, and to no file name.
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--output-format", ""}, "text\njson\nstream-json\n:4\n"},
		{[]string{"--input-format", "s"}, "text\nstream-json\n:4\n"},
		{[]string{"-p", "q", "--progress", ""}, "auto\nplain\noff\n:4\n"},
		{[]string{"--permission-mode", ""}, "plan\ndefault\nacceptEdits\nbypassPermissions\ndontAsk\n:4\n"},
		{[]string{"--approval-mode", ""}, "plan\ndefault\nauto-edit\nyolo\n:4\n"},
		{[]string{"--replay-timing", ""}, "zero\nreal\n:4\n"},
	} {
		if got := newTestProcess(t).run(t, append([]string{"__complete"}, tt.args...)...); got.stdout != tt.want {
			t.Errorf("__complete %q = %q, want %q", tt.args, got.stdout, tt.want)
		}
	}
}
