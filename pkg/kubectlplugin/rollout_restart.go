package kubectlplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// RestartedAtAnnotation is the Pod template annotation `rollout restart` sets (kubectl sets
// kubectl.kubernetes.io/restartedAt on Deployments).
const RestartedAtAnnotation = "inplace.dev/restartedAt"

// RestartOptions are the flags of `rollout restart`.
type RestartOptions struct {
	PrintFlags *genericclioptions.PrintFlags
	DryRun     string

	dryRun    DryRun
	refs      []Ref
	workloads workloads
	now       func() time.Time
	streams   genericiooptions.IOStreams
}

// NewCmdRolloutRestart is `kubectl inplace rollout restart`.
func NewCmdRolloutRestart(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RestartOptions{PrintFlags: newPrintFlags("restarted"), now: time.Now, streams: streams}
	cmd := &cobra.Command{
		Use:   "restart RESOURCE",
		Short: "Start a new rollout of a workload by changing a Pod template annotation",
		Long: `Start a new rollout: set the Pod template annotation ` + RestartedAtAnnotation + ` to the current
time (a JSON merge patch), which makes a new revision the controller rolls out.

What the Pods go through depends on the update strategy. With InPlaceIfPossible or InPlaceOnly
(CloneSet updateStrategy.type, Advanced StatefulSet rollingUpdate.podUpdatePolicy, Advanced
DaemonSet rollingUpdateType InPlaceIfPossible) an annotation change is made IN PLACE: each Pod gets
the new annotation and the new revision, keeps its name, IP and node, and its containers are NOT
restarted, unless a container reads that annotation through the downward API
(env valueFrom.fieldRef metadata.annotations['` + RestartedAtAnnotation + `']): inplace-daemon then restarts
exactly those containers. With ReCreate (or a standard rolling update of a DaemonSet) every Pod is
deleted and created again, as kubectl rollout restart does. To restart the containers of one Pod
in place, use 'kubectl inplace recreate pod NAME'.`,
		Example: `  # Roll out a new revision of a CloneSet
  kubectl inplace rollout restart clone/sample

  # Restart the containers in place: have them read the annotation through env first
  #   env: [{name: RESTARTED_AT, valueFrom: {fieldRef: {fieldPath: "metadata.annotations['inplace.dev/restartedAt']"}}}]
  kubectl inplace rollout restart asts/db`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	addDryRunFlag(cmd, &o.DryRun)
	o.PrintFlags.AddFlags(cmd)
	return cmd
}

// Complete reads the arguments and makes the client.
func (o *RestartOptions) Complete(f Factory, args []string) error {
	refs, err := ParseRefs(args)
	if err != nil {
		return err
	}
	o.refs = refs
	if o.dryRun, err = parseDryRun(o.DryRun); err != nil {
		return err
	}
	o.workloads, err = newWorkloads(f)
	return err
}

// restartPatch is the merge patch that sets the restartedAt template annotation.
func restartPatch(at time.Time) ([]byte, error) {
	return json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{RestartedAtAnnotation: at.Format(time.RFC3339)},
	}}}})
}

// Run patches every workload. A paused workload is refused, as kubectl refuses a paused
// Deployment: nothing would roll out.
func (o *RestartOptions) Run(ctx context.Context) error {
	for _, ref := range o.refs {
		w, err := o.workloads.get(ctx, ref)
		if err != nil {
			return err
		}
		if w.Paused() {
			return fmt.Errorf("can't restart paused %s (run rollout resume first)", ref)
		}
		at := o.now()
		result := w
		if o.dryRun == DryRunClient {
			t := w.Template()
			if t.Annotations == nil {
				t.Annotations = map[string]string{}
			}
			t.Annotations[RestartedAtAnnotation] = at.Format(time.RFC3339)
		} else {
			patch, err := restartPatch(at)
			if err != nil {
				return err
			}
			if result, err = o.workloads.patch(ctx, ref, types.MergePatchType, patch, o.dryRun.patchOptions()); err != nil {
				return err
			}
		}
		if err := printObject(o.PrintFlags, "restarted", o.dryRun, result.Object, o.streams.Out); err != nil {
			return err
		}
	}
	return nil
}
