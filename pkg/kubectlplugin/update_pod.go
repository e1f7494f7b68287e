package kubectlplugin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
)

// UpdatePodOptions are the flags of `update pod`.
type UpdatePodOptions struct {
	Images       []string
	Grace        time.Duration
	Revision     string
	DryRun       string
	Wait         bool
	Timeout      time.Duration
	PollInterval time.Duration
	PrintFlags   *genericclioptions.PrintFlags

	dryRun    DryRun
	name      string
	namespace string
	kruise    versioned.Interface
	kube      kubernetes.Interface
	streams   genericiooptions.IOStreams
}

// NewCmdUpdatePod is `kubectl inplace update pod`.
func NewCmdUpdatePod(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &UpdatePodOptions{PollInterval: time.Second, PrintFlags: newPrintFlags(""), streams: streams}
	cmd := &cobra.Command{
		Use:   "pod NAME --image CONTAINER=IMAGE [--image ...] [--grace DURATION] [--wait]",
		Short: "Update the images of a running Pod in place (pods/NAME/inplaceupdate)",
		Long: `Update the images of a running Pod in place: POST an InPlaceUpdate to the Pod's
apps.kruise.io subresource pods/NAME/inplaceupdate. The Pod keeps its name, UID, node, IP and
volumes; only the named containers restart, with their new images. The server answers the
update's first state (printed; -o json|yaml prints the whole InPlaceUpdate answered) and
inplace-controller drives the rest. --grace keeps the Pod not ready that long before its containers
change. --wait then polls the Pod until the update state annotation (` + pub.InPlaceUpdateStateKey + `)
is marked completed and the Pod is Ready again. --dry-run=server asks the server to check the
request and answer the state it would write, writing nothing (needs inplace-apiserver aggregated
into a cluster; a standalone server has no Pods and answers 503).`,
		Example: `  # Update container main of Pod demo and wait until it runs the new image and is ready
  kubectl inplace update pod demo --image main=inplace.local/app:v2 --wait --timeout 2m

  # Two containers, not ready 10s before they change, recorded as revision demo-v3
  kubectl inplace update pod demo --image main=inplace.local/app:v3 --image side=inplace.local/app:v3 --grace 10s --revision demo-v3

  # Check a request without changing the Pod
  kubectl inplace update pod demo --image main=inplace.local/app:v2 --dry-run=server -o yaml`,
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
	cmd.Flags().StringArrayVar(&o.Images, "image", nil, "CONTAINER=IMAGE: a container of the Pod and its new image (repeat for more containers)")
	cmd.Flags().DurationVar(&o.Grace, "grace", 0, "How long the Pod stays not ready before its containers change (whole seconds, e.g. 10s)")
	cmd.Flags().StringVar(&o.Revision, "revision", "", "The revision to record in the Pod's controller-revision-hash label and update state")
	cmd.Flags().BoolVar(&o.Wait, "wait", false, "Wait until the update is completed and the Pod is Ready")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "How long --wait waits, zero means never (e.g. 30s, 5m)")
	addDryRunFlag(cmd, &o.DryRun)
	o.PrintFlags.AddFlags(cmd)
	return cmd
}

// Complete reads the arguments and makes the clients.
func (o *UpdatePodOptions) Complete(f Factory, args []string) error {
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
	if o.kruise, err = f.Kruise(); err != nil {
		return err
	}
	if o.Wait {
		o.kube, err = f.Kube()
	}
	return err
}

// podName reads NAME or pod/NAME (or pods/NAME).
func podName(args []string) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("exactly one Pod name is expected, got %d arguments", len(args))
	}
	name := args[0]
	if typ, n, ok := strings.Cut(name, "/"); ok {
		if typ != "pod" && typ != "pods" && typ != "po" {
			return "", fmt.Errorf("expected a Pod (NAME or pod/NAME), got %q", name)
		}
		name = n
	}
	if name == "" {
		return "", fmt.Errorf("the Pod name must not be empty")
	}
	return name, nil
}

// Validate checks the flags.
func (o *UpdatePodOptions) Validate() error {
	if len(o.Images) == 0 {
		return fmt.Errorf("at least one --image CONTAINER=IMAGE is required")
	}
	if o.Wait && o.dryRun != DryRunNone {
		return fmt.Errorf("--wait cannot be used with --dry-run: nothing is updated")
	}
	_, err := BuildInPlaceUpdate(o.Images, o.Grace, o.Revision)
	return err
}

// BuildInPlaceUpdate is the body of POST pods/NAME/inplaceupdate: the containers' new images,
// the grace period in whole seconds and the revision.
func BuildInPlaceUpdate(images []string, grace time.Duration, revision string) (*v1alpha1.InPlaceUpdate, error) {
	if grace < 0 || grace%time.Second != 0 {
		return nil, fmt.Errorf("--grace must be whole seconds (e.g. 10s), got %s", grace)
	}
	req := &v1alpha1.InPlaceUpdate{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: "InPlaceUpdate"},
		Spec:     v1alpha1.InPlaceUpdateSpec{Revision: revision, GracePeriodSeconds: int32(grace / time.Second)},
	}
	seen := map[string]bool{}
	for _, a := range images {
		name, image, ok := strings.Cut(a, "=")
		if !ok || name == "" || image == "" {
			return nil, fmt.Errorf("invalid --image %q: expected CONTAINER=IMAGE", a)
		}
		if seen[name] {
			return nil, fmt.Errorf("container %q is given twice", name)
		}
		seen[name] = true
		req.Spec.Containers = append(req.Spec.Containers, v1alpha1.InPlaceUpdateContainer{Name: name, Image: image})
	}
	return req, nil
}

// Run posts the request, prints the answer and, with Wait, waits for the update to complete.
func (o *UpdatePodOptions) Run(ctx context.Context) error {
	req, err := BuildInPlaceUpdate(o.Images, o.Grace, o.Revision)
	if err != nil {
		return err
	}
	if o.dryRun == DryRunClient {
		return o.printAnswer(req)
	}
	answer, err := o.kruise.AppsV1alpha1().Pods(o.namespace).InPlaceUpdate(ctx, o.name, req, o.dryRun.createOptions())
	if err != nil {
		if apierrors.IsNotFound(err) && strings.Contains(err.Error(), "inplaceupdate") {
			return fmt.Errorf("pods/%s/inplaceupdate: %w (is inplace-apiserver serving apps.kruise.io in this cluster?)", o.name, err)
		}
		return err
	}
	answer.SetGroupVersionKind(v1alpha1.SchemeGroupVersion.WithKind("InPlaceUpdate"))
	if err := o.printAnswer(answer); err != nil {
		return err
	}
	if !o.Wait {
		return nil
	}
	return o.wait(ctx, answer)
}

func (o *UpdatePodOptions) printAnswer(answer *v1alpha1.InPlaceUpdate) error {
	if outputRequested(o.PrintFlags) {
		printer, err := o.PrintFlags.ToPrinter()
		if err != nil {
			return err
		}
		return printer.PrintObj(answer, o.streams.Out)
	}
	fmt.Fprint(o.streams.Out, DescribeInPlaceUpdate(o.name, answer, o.dryRun))
	return nil
}

// DescribeInPlaceUpdate is the human answer: what was started, and the state the server answered.
func DescribeInPlaceUpdate(pod string, u *v1alpha1.InPlaceUpdate, dryRun DryRun) string {
	var b strings.Builder
	var images []string
	for _, c := range u.Spec.Containers {
		images = append(images, c.Name+"="+c.Image)
	}
	verb := "in-place update started"
	if dryRun == DryRunClient {
		verb = "in-place update requested"
	}
	fmt.Fprintf(&b, "pod/%s %s%s: %s\n", pod, verb, dryRun.suffix(), strings.Join(images, ", "))
	if u.Status.Message != "" {
		fmt.Fprintf(&b, "  %s\n", u.Status.Message)
	}
	if s := u.Status.State; s != nil {
		if s.Revision != "" {
			fmt.Fprintf(&b, "  revision: %s\n", s.Revision)
		}
		if len(s.NextContainerImages) > 0 {
			var next []string
			for c, img := range s.NextContainerImages {
				next = append(next, c+"="+img)
			}
			sort.Strings(next)
			fmt.Fprintf(&b, "  next batch: %s\n", strings.Join(next, ", "))
		}
		if n := len(s.ContainerBatchesRecord); n > 0 {
			fmt.Fprintf(&b, "  updating now: %s\n", strings.Join(s.ContainerBatchesRecord[n-1].Containers, ", "))
		}
	}
	return b.String()
}

// podUpdateState is the Pod's state annotation as far as waiting needs it (inplace's superset of
// OpenKruise's InPlaceUpdateState adds completedTimestamp).
type podUpdateState struct {
	Revision           string       `json:"revision"`
	UpdateTimestamp    metav1.Time  `json:"updateTimestamp"`
	CompletedTimestamp *metav1.Time `json:"completedTimestamp,omitempty"`
}

// UpdateDone tells whether the Pod finished the in-place update started (started is the state
// the server answered; nil matches any update): its state annotation is completed, for that
// update or a later one, and the Pod is Ready. The string says what is awaited.
func UpdateDone(pod *corev1.Pod, started *pub.InPlaceUpdateState) (bool, string, error) {
	raw, ok := pod.Annotations[pub.InPlaceUpdateStateKey]
	if !ok {
		return false, "", fmt.Errorf("pod %s has no in-place update state (annotation %s): was it updated another way, or recreated?", pod.Name, pub.InPlaceUpdateStateKey)
	}
	var st podUpdateState
	if err := json.Unmarshal([]byte(raw), &st); err != nil {
		return false, "", fmt.Errorf("pod %s: reading its in-place update state: %w", pod.Name, err)
	}
	if started != nil && st.UpdateTimestamp.Before(&started.UpdateTimestamp) {
		return false, "", fmt.Errorf("pod %s: its in-place update state is older than the update started (%s): was it recreated?", pod.Name, started.UpdateTimestamp.Format(time.RFC3339))
	}
	if st.CompletedTimestamp == nil {
		return false, "the in-place update to complete", nil
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true, "", nil
		}
	}
	return false, "the Pod to be Ready", nil
}

// wait polls the Pod until UpdateDone; a Pod of another UID (deleted and created again under
// its name) ends the wait with an error.
func (o *UpdatePodOptions) wait(ctx context.Context, answer *v1alpha1.InPlaceUpdate) error {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	last := ""
	err := wait.PollUntilContextCancel(ctx, o.PollInterval, true, func(ctx context.Context) (bool, error) {
		pod, err := o.kube.CoreV1().Pods(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if answer.UID != "" && pod.UID != answer.UID {
			return false, fmt.Errorf("pod %s was deleted and created again (uid %s, was %s)", o.name, pod.UID, answer.UID)
		}
		done, what, err := UpdateDone(pod, answer.Status.State)
		if err != nil || done {
			return done, err
		}
		if what != last {
			fmt.Fprintf(o.streams.Out, "Waiting for pod %q: %s...\n", o.name, what)
			last = what
		}
		return false, nil
	})
	if err != nil {
		if ctx.Err() != nil && wait.Interrupted(err) {
			return fmt.Errorf("timed out after %s waiting for pod %q: %s", o.Timeout, o.name, last)
		}
		return err
	}
	fmt.Fprintf(o.streams.Out, "pod/%s in-place update completed\n", o.name)
	return nil
}
