package kubectlplugin

import (
	"context"
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// ScaleOptions are the flags of `scale`.
type ScaleOptions struct {
	Replicas        int32
	CurrentReplicas int32
	Pods            []string
	DryRun          string
	PrintFlags      *genericclioptions.PrintFlags

	dryRun    DryRun
	ref       Ref
	workloads workloads
	kube      func() (kubernetes.Interface, error)
	streams   genericiooptions.IOStreams
}

// NewCmdScale is `kubectl inplace scale`.
func NewCmdScale(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &ScaleOptions{Replicas: -1, CurrentReplicas: -1, PrintFlags: newPrintFlags("scaled"), streams: streams}
	cmd := &cobra.Command{
		Use:   "scale (TYPE NAME | TYPE/NAME) [--replicas=COUNT] [--pods=POD_1,POD_2]",
		Short: "Set a new size for a CloneSet or Advanced StatefulSet, deleting chosen Pods",
		Long: `Set the replicas of a CloneSet or Advanced StatefulSet, and choose which Pods go.

--pods adds the Pods to a CloneSet's spec.scaleStrategy.podsToDelete: scaling down with it deletes
exactly those Pods; without changing replicas, the CloneSet deletes them and creates new ones. For an
Advanced StatefulSet, --pods labels the Pods ` + v1alpha1.SpecifiedDeleteKey + `=true: the controller deletes each
and creates it again under its name. If --current-replicas is given, the scale is refused unless
the workload has that many replicas (as kubectl scale does).`,
		Example: `  # Scale a CloneSet to 3
  kubectl inplace scale clone/sample --replicas 3

  # Scale down to 2, deleting exactly sample-abcde
  kubectl inplace scale clone/sample --replicas 2 --pods sample-abcde

  # Replace two Pods, keeping the size
  kubectl inplace scale clone/sample --pods sample-abcde,sample-fghij`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, args); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().Int32Var(&o.Replicas, "replicas", o.Replicas, "The new desired number of replicas.")
	cmd.Flags().Int32Var(&o.CurrentReplicas, "current-replicas", o.CurrentReplicas, "Precondition for current size. Requires that the current size of the resource match this value in order to scale. -1 (default) for no condition.")
	cmd.Flags().StringSliceVar(&o.Pods, "pods", nil, "Pods to delete (CloneSet: spec.scaleStrategy.podsToDelete; Advanced StatefulSet: the "+v1alpha1.SpecifiedDeleteKey+" label).")
	addDryRunFlag(cmd, &o.DryRun)
	o.PrintFlags.AddFlags(cmd)
	return cmd
}

// Complete reads the arguments and makes the clients.
func (o *ScaleOptions) Complete(f Factory, args []string) error {
	ref, err := ParseRef(args)
	if err != nil {
		return err
	}
	o.ref = ref
	if o.dryRun, err = parseDryRun(o.DryRun); err != nil {
		return err
	}
	o.kube = f.Kube
	o.workloads, err = newWorkloads(f)
	return err
}

// Validate checks the flags against the kind.
func (o *ScaleOptions) Validate() error {
	if o.ref.Kind == DaemonSet {
		return fmt.Errorf("%s: a DaemonSet has no replicas (it runs one Pod on each node it selects)", o.ref)
	}
	if o.Replicas < -1 || o.Replicas == -1 && len(o.Pods) == 0 {
		return fmt.Errorf("the --replicas=COUNT flag (COUNT >= 0) or --pods is required")
	}
	return nil
}

// Scale sets replicas (when >= 0) and adds pods to a CloneSet's podsToDelete, keeping the
// Pods already there. It returns whether anything changed.
func Scale(cs *v1alpha1.CloneSet, replicas int32, pods []string) bool {
	changed := false
	if replicas >= 0 && (cs.Spec.Replicas == nil || *cs.Spec.Replicas != replicas) {
		cs.Spec.Replicas = &replicas
		changed = true
	}
	for _, p := range pods {
		if !slices.Contains(cs.Spec.ScaleStrategy.PodsToDelete, p) {
			cs.Spec.ScaleStrategy.PodsToDelete = append(cs.Spec.ScaleStrategy.PodsToDelete, p)
			changed = true
		}
	}
	return changed
}

// Run scales.
func (o *ScaleOptions) Run(ctx context.Context) error {
	if o.ref.Kind == StatefulSet && len(o.Pods) > 0 && o.dryRun != DryRunClient {
		if err := o.markSpecifiedDelete(ctx); err != nil {
			return err
		}
	}
	var result *Workload
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w, err := o.workloads.get(ctx, o.ref)
		if err != nil {
			return err
		}
		changed := false
		switch obj := w.Object.(type) {
		case *v1alpha1.CloneSet:
			if err := checkCurrent(o.CurrentReplicas, obj.Spec.Replicas); err != nil {
				return err
			}
			changed = Scale(obj, o.Replicas, o.Pods)
		case *v1beta1.StatefulSet:
			if err := checkCurrent(o.CurrentReplicas, obj.Spec.Replicas); err != nil {
				return err
			}
			if o.Replicas >= 0 && (obj.Spec.Replicas == nil || *obj.Spec.Replicas != o.Replicas) {
				obj.Spec.Replicas, changed = &o.Replicas, true
			}
		}
		if !changed || o.dryRun == DryRunClient {
			result = w
			return nil
		}
		result, err = o.workloads.update(ctx, w, o.dryRun.updateOptions())
		return err
	})
	if err != nil {
		return err
	}
	return printObject(o.PrintFlags, "scaled", o.dryRun, result.Object, o.streams.Out)
}

func checkCurrent(want int32, replicas *int32) error {
	if want < 0 {
		return nil
	}
	have := int32(1)
	if replicas != nil {
		have = *replicas
	}
	if have != want {
		return fmt.Errorf("expected replicas to be %d, was %d", want, have)
	}
	return nil
}

// markSpecifiedDelete labels the Advanced StatefulSet's Pods for deletion.
func (o *ScaleOptions) markSpecifiedDelete(ctx context.Context) error {
	kube, err := o.kube()
	if err != nil {
		return err
	}
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"true"}}}`, v1alpha1.SpecifiedDeleteKey)
	for _, name := range o.Pods {
		opts := metav1.PatchOptions{}
		if o.dryRun == DryRunServer {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		if _, err := kube.CoreV1().Pods(o.workloads.namespace).Patch(ctx, name, types.MergePatchType, patch, opts); err != nil {
			return fmt.Errorf("marking pod %s for deletion: %w", name, err)
		}
		fmt.Fprintf(o.streams.Out, "pod/%s labeled %s=true%s\n", name, v1alpha1.SpecifiedDeleteKey, o.dryRun.suffix())
	}
	return nil
}
