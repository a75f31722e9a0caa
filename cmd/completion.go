package cmd

import (
	"github.com/spf13/cobra"

	"github.com/stoke-cli/stoke/agents/llm/cassette"
	"github.com/stoke-cli/stoke/agents/tools"
)

// NewCmdCompletion returns `stoke completion SHELL`: the completion script of bash, zsh,
// fish or powershell on stdout.
func NewCmdCompletion(deps *Deps) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print the shell completion script for bash, zsh, fish or powershell",
		Long: `Print a shell completion script on stdout. Load it in the current shell, or
install it where the shell finds completions:

  bash:  source <(stoke completion bash)
         stoke completion bash > /etc/bash_completion.d/stoke
  zsh:   stoke completion zsh > "${fpath[1]}/_stoke"    (with compinit enabled)
  fish:  stoke completion fish > ~/.config/fish/completions/stoke.fish
  powershell:  stoke completion powershell | Out-String | Invoke-Expression`,
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args: func(c *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("%s needs one shell: bash, zsh, fish or powershell", c.CommandPath())
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			root := c.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(deps.Out, true)
			case "zsh":
				return root.GenZshCompletion(deps.Out)
			case "fish":
				return root.GenFishCompletion(deps.Out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(deps.Out)
			}
			return usageErrorf("unknown shell %q: want bash, zsh, fish or powershell", args[0])
		},
	}
}

// completeFlagValues makes shell completion offer the words a flag of a few fixed values
// takes (stoke --output-format <TAB>: text, json, stream-json) instead of file names.
func completeFlagValues(cmd *cobra.Command) {
	values := enumValues()
	values["replay-mode"] = []string{cassette.ModeStrict, cassette.ModeLenient}
	values["replay-timing"] = []string{cassette.TimingZero, cassette.TimingReal}
	var permissionModes []string
	for _, m := range tools.Modes() {
		permissionModes = append(permissionModes, m.PermissionMode())
	}
	values["permission-mode"] = append(permissionModes, "dontAsk")
	for name, words := range values {
		if cmd.Flags().Lookup(name) == nil {
			continue
		}
		_ = cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp))
	}
}
