package kubectlplugin

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// PauseOptions are the flags of `rollout pause` and `rollout resume`.
type PauseOptions struct {
	PrintFlags *genericclioptions.PrintFlags

	pause     bool
	refs      []Ref
	workloads workloads
	streams   genericiooptions.IOStreams
}

// NewCmdRolloutPause is `kubectl inplace rollout pause`.
func NewCmdRolloutPause(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdPause(f, streams, true, &cobra.Command{
		Use:   "pause RESOURCE",
		Short: "Mark the provided resource as paused",
		Long: `Pause the update of a workload: spec.updateStrategy.paused of a CloneSet,
spec.updateStrategy.rollingUpdate.paused of an Advanced StatefulSet or DaemonSet (a JSON merge
patch). The controller stops updating Pods to the new revision (Pods already being updated in place
finish); scaling goes on. Resume with 'kubectl inplace rollout resume'.`,
		Example: `  # Pause a CloneSet's update, change its template, then resume
  kubectl inplace rollout pause clone/sample
  kubectl inplace set image clone/sample main=inplace.local/app:v3
  kubectl inplace rollout resume clone/sample`,
	})
}

// NewCmdRolloutResume is `kubectl inplace rollout resume`.
func NewCmdRolloutResume(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	return newCmdPause(f, streams, false, &cobra.Command{
		Use:   "resume RESOURCE",
		Short: "Resume a paused resource",
		Long: `Resume the paused update of a workload (sets the paused field back to false with a JSON
merge patch); the controller then rolls out the newest revision.`,
		Example: `  kubectl inplace rollout resume clone/sample
  kubectl inplace rollout resume asts/db ads/agent`,
	})
}

func newCmdPause(f Factory, streams genericiooptions.IOStreams, pause bool, cmd *cobra.Command) *cobra.Command {
	operation := "resumed"
	if pause {
		operation = "paused"
	}
	o := &PauseOptions{PrintFlags: newPrintFlags(operation), pause: pause, streams: streams}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := o.Complete(f, args); err != nil {
			return err
		}
		return o.Run(cmd.Context())
	}
	o.PrintFlags.AddFlags(cmd)
	return cmd
}

// Complete reads the arguments and makes the client.
func (o *PauseOptions) Complete(f Factory, args []string) error {
	refs, err := ParseRefs(args)
	if err != nil {
		return err
	}
	o.refs = refs
	o.workloads, err = newWorkloads(f)
	return err
}

// Run patches every workload; one already in the wanted state is left alone ("already paused").
func (o *PauseOptions) Run(ctx context.Context) error {
	operation := "resumed"
	if o.pause {
		operation = "paused"
	}
	for _, ref := range o.refs {
		w, err := o.workloads.get(ctx, ref)
		if err != nil {
			return err
		}
		if w.Paused() == o.pause {
			if err := printObject(o.PrintFlags, "already "+operation, DryRunNone, w.Object, o.streams.Out); err != nil {
				return err
			}
			continue
		}
		w, err = o.workloads.patch(ctx, ref, types.MergePatchType, pausePatch(ref.Kind, o.pause), DryRunNone.patchOptions())
		if err != nil {
			return err
		}
		if err := printObject(o.PrintFlags, operation, DryRunNone, w.Object, o.streams.Out); err != nil {
			return err
		}
	}
	return nil
}
