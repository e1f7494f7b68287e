package kubectlplugin

import (
	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewCmdInplace is `kubectl inplace` with kubectl's standard flags (--kubeconfig, --context,
// -n/--namespace, --server, ...).
func NewCmdInplace(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	cmd := NewCommand(NewFactory(flags), streams)
	flags.AddFlags(cmd.PersistentFlags())
	return cmd
}

// NewCommand is `kubectl inplace` on the given factory (tests give fake clients).
func NewCommand(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "kubectl-inplace",
		Short: "Operate inplace's workloads and in-place Pod updates",
		Long: `Operate inplace's (OpenKruise-compatible apps.kruise.io) workloads and Pods:

  rollout   status, history, undo, pause, resume, restart of a CloneSet (clone/NAME),
            Advanced StatefulSet (asts/NAME) or Advanced DaemonSet (ads/NAME)
  set image change container images of those workloads
  scale     set replicas, and delete chosen Pods (CloneSet podsToDelete)
  update    update one Pod in place (pods/NAME/inplaceupdate)
  recreate  recreate containers of one Pod (pods/NAME/recreate: a ContainerRecreateRequest)
  migrate   move a cluster from OpenKruise to inplace without touching a Pod

Installed on the PATH as kubectl-inplace, it runs as "kubectl inplace".`,
		Example: `  kubectl inplace rollout status clone/sample --timeout 5m
  kubectl inplace set image clone/sample main=inplace.local/app:v2
  kubectl inplace update pod demo --image main=inplace.local/app:v2 --wait`,
		Annotations:   map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl inplace"},
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.AddCommand(
		NewCmdRollout(f, streams),
		NewCmdSet(f, streams),
		NewCmdScale(f, streams),
		NewCmdUpdate(f, streams),
		NewCmdRecreate(f, streams),
		NewCmdMigrate(f, streams),
		NewCmdCompletion(streams),
	)
	return cmd
}

// NewCmdRollout is `kubectl inplace rollout`.
func NewCmdRollout(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rollout SUBCOMMAND",
		Short: "Manage the rollout of a CloneSet, Advanced StatefulSet or Advanced DaemonSet",
		Long: `Manage the rollout of one workload: clone/NAME (CloneSet; also cloneset/NAME,
clonesets.apps.kruise.io/NAME), asts/NAME (Advanced StatefulSet) or ads/NAME (Advanced DaemonSet).`,
		Example: `  kubectl inplace rollout status clone/sample
  kubectl inplace rollout history asts/db
  kubectl inplace rollout undo clone/sample --to-revision 2
  kubectl inplace rollout pause ads/agent`,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(
		NewCmdRolloutStatus(f, streams),
		NewCmdRolloutHistory(f, streams),
		NewCmdRolloutUndo(f, streams),
		NewCmdRolloutPause(f, streams),
		NewCmdRolloutResume(f, streams),
		NewCmdRolloutRestart(f, streams),
	)
	return cmd
}

// NewCmdSet is `kubectl inplace set`.
func NewCmdSet(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set SUBCOMMAND",
		Short: "Set specific features on workloads",
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(NewCmdSetImage(f, streams))
	return cmd
}

// NewCmdUpdate is `kubectl inplace update`.
func NewCmdUpdate(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "update pod NAME",
		Short: "Update a Pod in place",
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(NewCmdUpdatePod(f, streams))
	return cmd
}

// NewCmdRecreate is `kubectl inplace recreate`.
func NewCmdRecreate(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "recreate pod NAME",
		Short: "Recreate containers of a Pod in place",
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(NewCmdRecreatePod(f, streams))
	return cmd
}
