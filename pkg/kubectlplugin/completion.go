package kubectlplugin

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewCmdCompletion is `kubectl inplace completion SHELL`.
func NewCmdCompletion(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:       "completion SHELL",
		Short:     "Output shell completion code for the specified shell (bash, zsh, fish or powershell)",
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		Args:      cobra.ExactArgs(1),
		Long: `Output shell completion code for kubectl-inplace.

The code completes the kubectl-inplace command. For "kubectl inplace <TAB>", kubectl (1.26 and
later) runs an executable named kubectl_complete-inplace from the PATH; one that calls
"kubectl-inplace __complete" is enough:

  cat > /usr/local/bin/kubectl_complete-inplace <<'SH'
  #!/bin/sh
  exec kubectl-inplace __complete "$@"
  SH
  chmod +x /usr/local/bin/kubectl_complete-inplace`,
		Example: `  # bash, for this shell
  source <(kubectl-inplace completion bash)

  # zsh, for every new shell
  kubectl-inplace completion zsh > "${fpath[1]}/_kubectl-inplace"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(streams.Out, true)
			case "zsh":
				return root.GenZshCompletion(streams.Out)
			case "fish":
				return root.GenFishCompletion(streams.Out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(streams.Out)
			}
			return fmt.Errorf("unsupported shell type %q: bash, zsh, fish or powershell", args[0])
		},
	}
}
