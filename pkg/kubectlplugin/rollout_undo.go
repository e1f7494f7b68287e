package kubectlplugin

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// UndoOptions are the flags of `rollout undo`.
type UndoOptions struct {
	ToRevision int64
	DryRun     string
	PrintFlags *genericclioptions.PrintFlags

	dryRun    DryRun
	ref       Ref
	workloads workloads
	kube      kubernetes.Interface
	streams   genericiooptions.IOStreams
}

// NewCmdRolloutUndo is `kubectl inplace rollout undo`.
func NewCmdRolloutUndo(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UndoOptions{PrintFlags: newPrintFlags("rolled back"), streams: streams}
	cmd := &cobra.Command{
		Use:   "undo (TYPE NAME | TYPE/NAME) [flags]",
		Short: "Undo a previous rollout",
		Long: `Roll back to a previous revision: the Pod template stored in that revision's
ControllerRevision is written back into the workload (a JSON patch replacing spec.template), and
the controller rolls it out as any other change, in place where it can. By default the previous
revision: the newest revision other than the one the current template is at.`,
		Example: `  # Roll back to the previous revision
  kubectl inplace rollout undo clone/sample

  # Roll back to revision 3
  kubectl inplace rollout undo asts/db --to-revision 3

  # See the template that would be written, without writing it
  kubectl inplace rollout undo ads/agent --dry-run=server -o yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().Int64Var(&o.ToRevision, "to-revision", 0, "The revision to rollback to. Default to 0 (last revision).")
	addDryRunFlag(cmd, &o.DryRun)
	o.PrintFlags.AddFlags(cmd)
	return cmd
}

// Complete reads the arguments and makes the clients.
func (o *UndoOptions) Complete(f Factory, args []string) error {
	ref, err := ParseRef(args)
	if err != nil {
		return err
	}
	o.ref = ref
	if o.dryRun, err = parseDryRun(o.DryRun); err != nil {
		return err
	}
	if o.workloads, err = newWorkloads(f); err != nil {
		return err
	}
	o.kube, err = f.Kube()
	return err
}

// Run rolls back.
func (o *UndoOptions) Run(ctx context.Context) error {
	w, err := o.workloads.get(ctx, o.ref)
	if err != nil {
		return err
	}
	revisions, err := controlledRevisions(ctx, o.kube, w)
	if err != nil {
		return err
	}
	target, template, err := ChooseRollbackRevision(w.Template(), revisions, o.ToRevision)
	if err != nil {
		return err
	}
	if apiequality.Semantic.DeepEqual(w.Template(), template) {
		fmt.Fprintf(o.streams.Out, "%s skipped rollback (current template already matches revision %d)\n", o.ref, target.Revision)
		return nil
	}
	if w.Paused() {
		fmt.Fprintf(o.streams.ErrOut, "Warning: %s is paused: the rollback rolls out once it is resumed (kubectl inplace rollout resume %s)\n", o.ref, o.ref)
	}
	result := w
	switch o.dryRun {
	case DryRunClient:
		*w.Template() = *template
	default:
		patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/template", "value": template}})
		if err != nil {
			return err
		}
		if result, err = o.workloads.patch(ctx, o.ref, types.JSONPatchType, patch, o.dryRun.patchOptions()); err != nil {
			return err
		}
	}
	return printObject(o.PrintFlags, "rolled back", o.dryRun, result.Object, o.streams.Out)
}

// ChooseRollbackRevision picks the revision to roll back to among revisions (oldest first) and
// decodes its template. toRevision > 0 is that revision number. 0 is the previous revision: the
// newest one other than the revision the current template is at (the newest revision whose
// template equals it); when the current template has no revision yet (the controller did not see
// it), the newest revision.
func ChooseRollbackRevision(current *corev1.PodTemplateSpec, revisions []*appsv1.ControllerRevision, toRevision int64) (*appsv1.ControllerRevision, *corev1.PodTemplateSpec, error) {
	if toRevision < 0 {
		return nil, nil, fmt.Errorf("--to-revision must be a revision number (0 for the previous one), got %d", toRevision)
	}
	if len(revisions) == 0 {
		return nil, nil, fmt.Errorf("no rollout history found")
	}
	if toRevision > 0 {
		r := findRevision(revisions, toRevision)
		if r == nil {
			return nil, nil, fmt.Errorf("unable to find specified revision %d in history", toRevision)
		}
		t, err := history.Template(r)
		return r, t, err
	}
	templates := make([]*corev1.PodTemplateSpec, len(revisions))
	at := -1
	for i, r := range revisions {
		t, err := history.Template(r)
		if err != nil {
			return nil, nil, err
		}
		templates[i] = t
		if apiequality.Semantic.DeepEqual(current, t) {
			at = i
		}
	}
	for i := len(revisions) - 1; i >= 0; i-- {
		if i != at {
			return revisions[i], templates[i], nil
		}
	}
	return nil, nil, fmt.Errorf("no previous revision to roll back to: the only revision is %d, the current one", revisions[0].Revision)
}
