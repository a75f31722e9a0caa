package cmd

import (
	"bytes"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// rootExamples is the Examples block of stoke --help: the CI one-liners of the README.
// TestRootExamples runs every stoke command in it.
const rootExamples = `  # review a branch's diff in CI; one JSON result object, its text picked out with jq
  git diff origin/main... | stoke -p "Review this diff" --output-format json | jq -r .result

  # stream events; let it run git log and go test without asking (other commands are refused)
  stoke -p "Summarise the failing tests in ./ci.log" --allowedTools "Bash(git log:*)" "Bash(go test:*)" \
      --output-format stream-json | jq -c 'select(.type=="result")'

  # let it edit files, within a turn cap and a spending cap, with instructions of your own
  stoke -p "Fix the lint errors" --permission-mode acceptEdits --max-turns 20 \
      --max-budget-usd 0.50 --append-system-prompt "Touch only files under src/"

  # a local OpenAI-compatible server (Ollama, vLLM, llama.cpp)
  stoke -p "hello" --base-url http://localhost:11434/v1 --model qwen2.5-coder

  # replay a recorded run: no key, no network (record it once with --record FILE)
  stoke -p "Review the diff" --replay ci/review.cassette.yaml

  # continue this directory's last session, or a stored one by id
  stoke -c -p "Now update the changelog"
  stoke -r 0f3c9a52-4b1e-4c2f-9a8d-2b7e6c1d5f40 -p "Status?"`

// claudeHelpHeading introduces the Claude Code flags in stoke --help.
const claudeHelpHeading = "Claude Code flags (as claude -p takes them; every one: docs/claude-code-flags.md):\n"

// setRootUsage makes the root command's usage show, after its own flags, the Claude Code
// flags a CI script reaches for (claudeFlag.help), apart from stoke's; subcommands keep
// cobra's usage.
func setRootUsage(root *cobra.Command) {
	plain := root.UsageFunc() // cobra's, before ours replaces it
	shown := pflag.NewFlagSet("claude", pflag.ContinueOnError)
	shown.SortFlags = false
	for _, cf := range claudeFlags() {
		if !cf.help {
			continue
		}
		if f := root.Flags().Lookup(cf.name); f != nil {
			visible := *f
			visible.Hidden = false
			shown.AddFlag(&visible)
		}
	}
	root.SetUsageFunc(func(c *cobra.Command) error {
		if c != root {
			return plain(c)
		}
		out := c.OutOrStderr()
		var buf bytes.Buffer
		c.SetOut(&buf)
		err := plain(c)
		c.SetOut(out)
		if err != nil {
			return err
		}
		_, err = out.Write([]byte(withSection(buf.String(), claudeHelpHeading+shown.FlagUsages())))
		return err
	})
}

// withSection puts section into cobra's usage text: before its closing line (`Use
// "stoke [command] --help" ...`), or at the end when it has none.
func withSection(usage, section string) string {
	const closing = "\nUse \""
	i := strings.LastIndex(usage, closing)
	if i < 0 {
		return usage + "\n" + section
	}
	return usage[:i+1] + section + usage[i:]
}
