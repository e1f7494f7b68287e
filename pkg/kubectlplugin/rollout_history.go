package kubectlplugin

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// HistoryOptions are the flags of `rollout history`.
type HistoryOptions struct {
	Revision   int64
	PrintFlags *genericclioptions.PrintFlags

	ref       Ref
	workloads workloads
	kube      kubernetes.Interface
	streams   genericiooptions.IOStreams
}

// NewCmdRolloutHistory is `kubectl inplace rollout history`.
func NewCmdRolloutHistory(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &HistoryOptions{PrintFlags: newPrintFlags(""), streams: streams}
	cmd := &cobra.Command{
		Use:   "history (TYPE NAME | TYPE/NAME) [flags]",
		Short: "View rollout history",
		Long: `View the revisions of a workload: the ControllerRevisions it controls, oldest first, with
their revision number and the kubernetes.io/change-cause annotation of each. --revision N prints
the Pod template of revision N; -o json|yaml prints the ControllerRevisions themselves.`,
		Example: `  # View the rollout history of a CloneSet
  kubectl inplace rollout history clone/sample

  # View the Pod template of revision 3
  kubectl inplace rollout history clone/sample --revision 3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().Int64Var(&o.Revision, "revision", 0, "See the details, including podTemplate of the revision specified")
	o.PrintFlags.AddFlags(cmd)
	return cmd
}

// Complete reads the arguments and makes the clients.
func (o *HistoryOptions) Complete(f Factory, args []string) error {
	ref, err := ParseRef(args)
	if err != nil {
		return err
	}
	o.ref = ref
	if o.workloads, err = newWorkloads(f); err != nil {
		return err
	}
	o.kube, err = f.Kube()
	return err
}

// Run prints the history.
func (o *HistoryOptions) Run(ctx context.Context) error {
	w, err := o.workloads.get(ctx, o.ref)
	if err != nil {
		return err
	}
	revisions, err := controlledRevisions(ctx, o.kube, w)
	if err != nil {
		return err
	}
	if o.Revision > 0 {
		r := findRevision(revisions, o.Revision)
		if r == nil {
			return fmt.Errorf("unable to find the specified revision %d", o.Revision)
		}
		if o.output() {
			return o.print(r)
		}
		return printRevisionTemplate(o.streams.Out, o.ref, r)
	}
	if o.output() {
		if *o.PrintFlags.OutputFormat == "name" {
			for _, r := range revisions {
				if err := o.print(r); err != nil {
					return err
				}
			}
			return nil
		}
		list := &appsv1.ControllerRevisionList{}
		for _, r := range revisions {
			list.Items = append(list.Items, *r)
		}
		return o.print(list)
	}
	if len(revisions) == 0 {
		fmt.Fprintf(o.streams.Out, "No rollout history found in %s\n", o.ref)
		return nil
	}
	fmt.Fprintf(o.streams.Out, "%s\n", o.ref)
	tw := tabwriter.NewWriter(o.streams.Out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tCHANGE-CAUSE")
	for _, r := range revisions {
		cause := r.Annotations[history.ChangeCauseAnnotation]
		if cause == "" {
			cause = "<none>"
		}
		fmt.Fprintf(tw, "%d\t%s\n", r.Revision, cause)
	}
	fmt.Fprintln(tw)
	return tw.Flush()
}

func (o *HistoryOptions) print(obj runtime.Object) error {
	printer, err := o.PrintFlags.ToPrinter()
	if err != nil {
		return err
	}
	return printer.PrintObj(obj, o.streams.Out)
}

// printRevisionTemplate prints kubectl's "with revision #N" and the revision's Pod template.
func printRevisionTemplate(out io.Writer, ref Ref, r *appsv1.ControllerRevision) error {
	template, err := history.Template(r)
	if err != nil {
		return err
	}
	raw, err := yaml.Marshal(template)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s with revision #%d (%s)\nPod Template:\n", ref, r.Revision, r.Name)
	for _, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		fmt.Fprintf(out, "  %s\n", line)
	}
	return nil
}

// controlledRevisions lists the ControllerRevisions the workload controls (its controllerRef),
// oldest first. The list is narrowed by the workload's selector, as the controllers label their
// revisions with the template's labels.
func controlledRevisions(ctx context.Context, kube kubernetes.Interface, w *Workload) ([]*appsv1.ControllerRevision, error) {
	opts := metav1.ListOptions{}
	if s := w.Selector(); s != nil {
		sel, err := metav1.LabelSelectorAsSelector(s)
		if err != nil {
			return nil, err
		}
		opts.LabelSelector = sel.String()
	}
	list, err := kube.AppsV1().ControllerRevisions(w.Meta().GetNamespace()).List(ctx, opts)
	if err != nil {
		return nil, err
	}
	var out []*appsv1.ControllerRevision
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], w.Meta()) {
			out = append(out, &list.Items[i])
		}
	}
	history.SortRevisions(out)
	return out, nil
}

func findRevision(revisions []*appsv1.ControllerRevision, n int64) *appsv1.ControllerRevision {
	for _, r := range revisions {
		if r.Revision == n {
			return r
		}
	}
	return nil
}

// output tells whether -o was given: then the ControllerRevisions are printed, names included.
func (o *HistoryOptions) output() bool {
	return o.PrintFlags.OutputFormat != nil && *o.PrintFlags.OutputFormat != ""
}
