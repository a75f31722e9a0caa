package cmd

import (
	"github.com/spf13/cobra"
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
