package kubectlplugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
)

// RecreatePodOptions are the flags of `recreate pod`.
type RecreatePodOptions struct {
	Containers    []string
	Ordered       bool
	Force         bool
	FailurePolicy string
	DryRun        string
	Wait          bool
	Timeout       time.Duration
	PollInterval  time.Duration
	PrintFlags    *genericclioptions.PrintFlags

	dryRun    DryRun
	name      string
	namespace string
	kruise    versioned.Interface
	streams   genericiooptions.IOStreams
}

// NewCmdRecreatePod is `kubectl inplace recreate pod`.
func NewCmdRecreatePod(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &RecreatePodOptions{PollInterval: time.Second, PrintFlags: newPrintFlags("created"), streams: streams}
	cmd := &cobra.Command{
		Use:   "pod NAME [-c CONTAINER,...] [--ordered] [--wait]",
		Short: "Recreate containers of a Pod in place (pods/NAME/recreate)",
		Long: `Recreate (stop and start again) containers of a running Pod without deleting the Pod:
POST a ContainerRecreateRequest body to the Pod's apps.kruise.io subresource pods/NAME/recreate.
The server creates the ContainerRecreateRequest (named after the Pod) for the Pod of the path and
answers it; inplace-daemon on the Pod's node carries it out. Without -c, every container of the Pod
is recreated. --ordered recreates one container after the other, each once the previous one runs.
--wait polls the request until it is Completed and fails if a container failed.`,
		Example: `  # Recreate every container of Pod demo
  kubectl inplace recreate pod demo

  # Recreate main then side, one after the other, and wait for the result
  kubectl inplace recreate pod demo -c main,side --ordered --wait --timeout 2m`,
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
	cmd.Flags().StringSliceVarP(&o.Containers, "containers", "c", nil, "Containers to recreate (default: every container of the Pod)")
	cmd.Flags().BoolVar(&o.Ordered, "ordered", false, "Recreate the containers one after the other, each once the previous one runs")
	cmd.Flags().BoolVar(&o.Force, "force", false, "Recreate a container even if it is not running")
	cmd.Flags().StringVar(&o.FailurePolicy, "failure-policy", "", "Fail (stop at the first failure, the default) or Ignore")
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "Wait until the request is Completed")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "How long --wait waits, zero means never (e.g. 30s, 5m)")
	addDryRunFlag(cmd, &o.DryRun)
	o.PrintFlags.AddFlags(cmd)
	return cmd
}

// Complete reads the arguments and makes the client.
func (o *RecreatePodOptions) Complete(f Factory, args []string) error {
	name, err := podName(args)
	if err != nil {
		return err
	}
	o.name = name
	if o.dryRun, err = parseDryRun(o.DryRun); err != nil {
		return err
	}
	if o.namespace, err = f.Namespace(); err != nil {
		return err
	}
	o.kruise, err = f.Kruise()
	return err
}

// Validate checks the flags.
func (o *RecreatePodOptions) Validate() error {
	switch o.FailurePolicy {
	case "", string(v1alpha1.ContainerRecreateRequestFailurePolicyFail), string(v1alpha1.ContainerRecreateRequestFailurePolicyIgnore):
	default:
		return fmt.Errorf("--failure-policy must be Fail or Ignore, got %q", o.FailurePolicy)
	}
	if o.Wait && o.dryRun != DryRunNone {
		return fmt.Errorf("--wait cannot be used with --dry-run: nothing is created")
	}
	return nil
}

// BuildRecreateRequest is the body of POST pods/NAME/recreate. The server fills spec.podName, a
// generateName of the Pod's name, and every container of the Pod when containers is empty.
func BuildRecreateRequest(containers []string, ordered, force bool, failurePolicy string) *v1alpha1.ContainerRecreateRequest {
	crr := &v1alpha1.ContainerRecreateRequest{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "ContainerRecreateRequest"},
	}
	for _, c := range containers {
		crr.Spec.Containers = append(crr.Spec.Containers, v1alpha1.ContainerRecreateRequestContainer{Name: c})
	}
	if ordered || force || failurePolicy != "" {
		crr.Spec.Strategy = &v1alpha1.ContainerRecreateRequestStrategy{
			OrderedRecreate: ordered,
			ForceRecreate:   force,
			FailurePolicy:   v1alpha1.ContainerRecreateRequestFailurePolicyType(failurePolicy),
		}
	}
	return crr
}

// Run posts the request, prints the answer and, with Wait, waits for it to complete.
func (o *RecreatePodOptions) Run(ctx context.Context) error {
	body := BuildRecreateRequest(o.Containers, o.Ordered, o.Force, o.FailurePolicy)
	if o.dryRun == DryRunClient {
		body.GenerateName = o.name + "-"
		body.Namespace = o.namespace
		body.Spec.PodName = o.name
		return printObject(o.PrintFlags, "created", o.dryRun, body, o.streams.Out)
	}
	crr, err := o.kruise.AppsV1alpha1().Pods(o.namespace).Recreate(ctx, o.name, body, o.dryRun.createOptions())
	if err != nil {
		return err
	}
	crr.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("ContainerRecreateRequest"))
	if err := printObject(o.PrintFlags, "created", o.dryRun, crr, o.streams.Out); err != nil {
		return err
	}
	if !o.Wait {
		return nil
	}
	return o.wait(ctx, crr.Name)
}

// RecreateDone tells whether the request is over, and an error when it ended as a failure. The
// controller completes a request with an empty message when it succeeded (containers that failed
// under failurePolicy Ignore included), and with the reason otherwise (a container failed, the Pod
// is gone, activeDeadlineSeconds passed, no daemon answered).
func RecreateDone(crr *v1alpha1.ContainerRecreateRequest) (bool, error) {
	if crr.Status.Phase != v1alpha1.ContainerRecreateRequestCompleted {
		return false, nil
	}
	if crr.Status.Message == "" {
		return true, nil
	}
	msg := crr.Status.Message
	for _, s := range crr.Status.ContainerRecreateStates {
		if s.Phase == v1alpha1.ContainerRecreateRequestFailed && s.Message != "" && !strings.Contains(msg, s.Message) {
			msg += fmt.Sprintf("; %s: %s", s.Name, s.Message)
		}
	}
	return true, fmt.Errorf("containerrecreaterequest %s failed: %s", crr.Name, msg)
}

func (o *RecreatePodOptions) wait(ctx context.Context, name string) error {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	phase := v1alpha1.ContainerRecreateRequestPhase("")
	err := wait.PollUntilContextCancel(ctx, o.PollInterval, true, func(ctx context.Context) (bool, error) {
		crr, err := o.kruise.AppsV1alpha1().ContainerRecreateRequests(o.namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if crr.Status.Phase != phase {
			phase = crr.Status.Phase
			if phase != v1alpha1.ContainerRecreateRequestCompleted {
				fmt.Fprintf(o.streams.Out, "Waiting for containerrecreaterequest %q: phase %s...\n", name, orPending(phase))
			}
		}
		return RecreateDone(crr)
	})
	if err != nil {
		if ctx.Err() != nil && wait.Interrupted(err) {
			return fmt.Errorf("timed out after %s waiting for containerrecreaterequest %q (phase %s)", o.Timeout, name, orPending(phase))
		}
		return err
	}
	fmt.Fprintf(o.streams.Out, "containerrecreaterequest.apps.kruise.io/%s completed\n", name)
	return nil
}

func orPending(p v1alpha1.ContainerRecreateRequestPhase) v1alpha1.ContainerRecreateRequestPhase {
	if p == "" {
		return v1alpha1.ContainerRecreateRequestPending
	}
	return p
}
