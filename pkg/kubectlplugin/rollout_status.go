package kubectlplugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// Reasons the controllers record when InPlaceOnly refuses a change that cannot be made in place:
// the CloneSet controller sets its FailedUpdate condition True with reasonCannotUpdateInPlace
// (and a FailedUpdatePodInPlaceOnly event); the Advanced StatefulSet controller records a
// CannotUpdateInPlace event naming the Pod and the revision (pkg/controller/{cloneset,statefulset}).
const (
	reasonCannotUpdateInPlace = "CannotUpdateInPlace"
)

// StatusOptions are the flags of `rollout status`.
type StatusOptions struct {
	Watch   bool
	Timeout time.Duration
	// PollInterval is how often the workload (and its events) are read again besides the watch:
	// a stuck rollout changes no status, only events.
	PollInterval time.Duration

	ref       Ref
	workloads workloads
	kube      kubernetes.Interface
	streams   genericiooptions.IOStreams
}

// NewCmdRolloutStatus is `kubectl inplace rollout status`.
func NewCmdRolloutStatus(f Factory, streams genericiooptions.IOStreams) *cobra.Command {
	o := &StatusOptions{Watch: true, PollInterval: 2 * time.Second, streams: streams}
	cmd := &cobra.Command{
		Use:   "status (TYPE NAME | TYPE/NAME)",
		Short: "Show the status of the rollout",
		Long: `Show the status of the rollout of a CloneSet, Advanced StatefulSet or Advanced DaemonSet.

By default it watches until the rollout is done: the controller observed the latest spec
(status.observedGeneration == metadata.generation) and every Pod is updated and ready
(updatedReplicas and updatedReadyReplicas equal replicas; with a partition, the Pods the
partition lets update; for a DaemonSet, updatedNumberScheduled and numberAvailable equal
desiredNumberScheduled). It exits non-zero when --timeout passes, when a CloneSet exceeds its
progressDeadlineSeconds, and when an InPlaceOnly rollout is stuck: the new revision changes
something that cannot be changed in place (the CloneSet's FailedUpdate condition with reason
CannotUpdateInPlace; for an Advanced StatefulSet, CannotUpdateInPlace events for its update
revision).`,
		Example: `  # Watch the rollout of a CloneSet
  kubectl inplace rollout status clone/sample

  # Give up after five minutes (exit code 1)
  kubectl inplace rollout status asts/db --timeout 5m

  # Print the current status once, without watching
  kubectl inplace rollout status ads/agent --watch=false`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(f, args); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", o.Watch, "Watch the status of the rollout until it's done.")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 0, "The length of time to wait before ending watch, zero means never. Any other values should contain a corresponding time unit (e.g. 1s, 2m, 3h).")
	return cmd
}

// Complete reads the arguments and makes the clients.
func (o *StatusOptions) Complete(f Factory, args []string) error {
	ref, err := ParseRef(args)
	if err != nil {
		return err
	}
	o.ref = ref
	if o.workloads, err = newWorkloads(f); err != nil {
		return err
	}
	if ref.Kind == StatefulSet {
		// Only for the events of a stuck InPlaceOnly rollout; without it, no stuck detection.
		o.kube, _ = f.Kube()
	}
	return nil
}

// Run prints the status, and with Watch keeps printing it as it changes until the rollout is done.
func (o *StatusOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, o.Timeout, errTimeout)
		defer cancel()
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	last := ""
	var w watch.Interface
	defer func() {
		if w != nil {
			w.Stop()
		}
	}()
	wl, err := o.workloads.get(ctx, o.ref)
	for {
		if err != nil {
			return o.contextError(ctx, last, err)
		}
		msg, done, stuck := RolloutStatus(wl, o.stuckEvents(ctx, wl))
		if stuck != nil {
			return stuck
		}
		if msg != last {
			fmt.Fprint(o.streams.Out, msg)
			last = msg
		}
		if done || !o.Watch {
			return nil
		}
		if w == nil {
			if w, err = o.workloads.watch(ctx, o.ref, wl.Meta().GetResourceVersion()); err != nil {
				continue
			}
		}
		if wl, err = o.next(ctx, w); errors.Is(err, errWatchClosed) {
			w.Stop()
			w = nil
			wl, err = o.workloads.get(ctx, o.ref)
		}
	}
}

var (
	errTimeout     = errors.New("timed out")
	errWatchClosed = errors.New("watch closed")
)

// next waits for the workload to change (the watch), for the poll interval (then reads it
// again), or for the context to end.
func (o *StatusOptions) next(ctx context.Context, w watch.Interface) (*Workload, error) {
	tick := time.NewTimer(o.PollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
			return o.workloads.get(ctx, o.ref)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, errWatchClosed
			}
			switch ev.Type {
			case watch.Added, watch.Modified:
				got := newWorkload(o.ref, ev.Object)
				if got.Meta().GetName() != o.ref.Name {
					continue
				}
				return got, nil
			case watch.Deleted:
				if m, ok := ev.Object.(metav1.Object); ok && m.GetName() != o.ref.Name {
					continue
				}
				return nil, fmt.Errorf("%s was deleted", o.ref)
			case watch.Error:
				return nil, errWatchClosed
			}
		}
	}
}

// contextError tells a timeout apart from other errors.
func (o *StatusOptions) contextError(ctx context.Context, last string, err error) error {
	if errors.Is(context.Cause(ctx), errTimeout) {
		msg := fmt.Sprintf("timed out after %s waiting for the rollout of %s to finish", o.Timeout, o.ref)
		if last != "" {
			msg += ": " + strings.TrimSuffix(last, "\n")
		}
		return errors.New(msg)
	}
	return err
}

// stuckEvents are the messages of the CannotUpdateInPlace events of an Advanced StatefulSet for its
// update revision (the CloneSet says it in a condition). Errors reading events (no rights, no
// cluster) are ignored: the rollout is then watched without that check.
func (o *StatusOptions) stuckEvents(ctx context.Context, w *Workload) []string {
	sts, ok := w.Object.(*v1beta1.StatefulSet)
	if !ok || o.kube == nil || sts.Status.UpdateRevision == "" {
		return nil
	}
	list, err := o.kube.CoreV1().Events(sts.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.SelectorFromSet(fields.Set{
		"involvedObject.name": sts.Name, "reason": reasonCannotUpdateInPlace,
	}).String()})
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.UID != sts.UID || e.Reason != reasonCannotUpdateInPlace {
			continue
		}
		if strings.Contains(e.Message, "to revision "+sts.Status.UpdateRevision+" ") {
			out = append(out, e.Message)
		}
	}
	return out
}

// RolloutStatus says where the rollout of w is, in kubectl's sentences: the message to print, done
// when it finished, an error when it will not finish by itself (stuck InPlaceOnly, progress
// deadline exceeded). stuck are the messages of the events that say a Pod of the update revision
// cannot be updated in place (Advanced StatefulSet).
func RolloutStatus(w *Workload, stuck []string) (string, bool, error) {
	switch o := w.Object.(type) {
	case *v1alpha1.CloneSet:
		return cloneSetStatus(o)
	case *v1beta1.StatefulSet:
		return statefulSetStatus(o, stuck)
	case *v1alpha1.DaemonSet:
		return daemonSetStatus(o)
	}
	return "", false, fmt.Errorf("unknown workload %T", w.Object)
}

func cloneSetStatus(cs *v1alpha1.CloneSet) (string, bool, error) {
	if cs.Generation > cs.Status.ObservedGeneration {
		return "Waiting for cloneset spec update to be observed...\n", false, nil
	}
	for _, c := range cs.Status.Conditions {
		if c.Type == v1alpha1.CloneSetConditionFailedUpdate && c.Status == corev1.ConditionTrue && c.Reason == reasonCannotUpdateInPlace {
			return "", false, fmt.Errorf("cloneset %q rollout is stuck: %s", cs.Name, c.Message)
		}
		if c.Type == v1alpha1.CloneSetConditionTypeProgressing && c.Reason == string(v1alpha1.CloneSetProgressDeadlineExceeded) {
			return "", false, fmt.Errorf("cloneset %q exceeded its progress deadline", cs.Name)
		}
	}
	replicas := int32(1)
	if cs.Spec.Replicas != nil {
		replicas = *cs.Spec.Replicas
	}
	paused := ""
	if cs.Spec.UpdateStrategy.Paused {
		paused = " (paused: kubectl inplace rollout resume clone/" + cs.Name + ")"
	}
	target := replicas
	if p := cs.Spec.UpdateStrategy.Partition; p != nil && !(p.Type == intstr.Int && p.IntVal == 0) {
		target = cs.Status.ExpectedUpdatedReplicas
	}
	st := cs.Status
	switch {
	case st.UpdatedReplicas < target:
		return fmt.Sprintf("Waiting for cloneset %q rollout to finish: %d out of %d new replicas have been updated...%s\n", cs.Name, st.UpdatedReplicas, target, paused), false, nil
	case st.Replicas > replicas:
		return fmt.Sprintf("Waiting for cloneset %q rollout to finish: %d old replicas are pending termination...\n", cs.Name, st.Replicas-replicas), false, nil
	case st.UpdatedReadyReplicas < target:
		return fmt.Sprintf("Waiting for cloneset %q rollout to finish: %d of %d updated replicas are ready...\n", cs.Name, st.UpdatedReadyReplicas, target), false, nil
	case target < replicas:
		return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...\n", st.UpdatedReplicas), true, nil
	}
	return fmt.Sprintf("cloneset %q successfully rolled out\n", cs.Name), true, nil
}

func statefulSetStatus(sts *v1beta1.StatefulSet, stuck []string) (string, bool, error) {
	if sts.Generation > sts.Status.ObservedGeneration {
		return "Waiting for statefulset spec update to be observed...\n", false, nil
	}
	if len(stuck) > 0 {
		more := ""
		if len(stuck) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(stuck)-1)
		}
		return "", false, fmt.Errorf("statefulset %q rollout is stuck: %s%s", sts.Name, stuck[0], more)
	}
	replicas := int32(1)
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	st := sts.Status
	paused := ""
	partition := int32(0)
	if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Paused {
			paused = " (paused: kubectl inplace rollout resume asts/" + sts.Name + ")"
		}
		if ru.Partition != nil {
			partition = min(max(*ru.Partition, 0), replicas)
		}
	}
	if sts.Spec.UpdateStrategy.Type == "OnDelete" {
		return "", true, fmt.Errorf("rollout status is only available for RollingUpdate strategy type")
	}
	target := replicas - partition
	switch {
	case st.ReadyReplicas < replicas && st.UpdatedReplicas >= target && st.UpdatedReadyReplicas >= target:
		return fmt.Sprintf("Waiting for %d pods to be ready...\n", replicas-st.ReadyReplicas), false, nil
	case partition > 0 && st.UpdatedReplicas < target:
		return fmt.Sprintf("Waiting for partitioned roll out to finish: %d out of %d new pods have been updated...%s\n", st.UpdatedReplicas, target, paused), false, nil
	case st.UpdatedReplicas < target:
		return fmt.Sprintf("Waiting for statefulset %q rollout to finish: %d out of %d new pods have been updated...%s\n", sts.Name, st.UpdatedReplicas, target, paused), false, nil
	case st.UpdatedReadyReplicas < target:
		return fmt.Sprintf("Waiting for statefulset %q rollout to finish: %d of %d updated pods are ready...\n", sts.Name, st.UpdatedReadyReplicas, target), false, nil
	case st.Replicas > replicas:
		return fmt.Sprintf("Waiting for statefulset %q rollout to finish: %d old pods are pending termination...\n", sts.Name, st.Replicas-replicas), false, nil
	case partition > 0:
		return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...\n", st.UpdatedReplicas), true, nil
	}
	return fmt.Sprintf("statefulset rolling update complete %d pods at revision %s...\n", st.UpdatedReplicas, st.UpdateRevision), true, nil
}

func daemonSetStatus(ds *v1alpha1.DaemonSet) (string, bool, error) {
	if ds.Spec.UpdateStrategy.Type == "OnDelete" {
		return "", true, fmt.Errorf("rollout status is only available for RollingUpdate strategy type")
	}
	if ds.Generation > ds.Status.ObservedGeneration {
		return "Waiting for daemon set spec update to be observed...\n", false, nil
	}
	st := ds.Status
	target := st.DesiredNumberScheduled
	paused := ""
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.Paused != nil && *ru.Paused {
			paused = " (paused: kubectl inplace rollout resume ads/" + ds.Name + ")"
		}
		if ru.Partition != nil {
			kept, err := intstr.GetScaledValueFromIntOrPercent(ru.Partition, int(target), true)
			if err == nil {
				target -= min(max(int32(kept), 0), target)
			}
		}
	}
	switch {
	case st.UpdatedNumberScheduled < target:
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d out of %d new pods have been updated...%s\n", ds.Name, st.UpdatedNumberScheduled, target, paused), false, nil
	case st.NumberAvailable < st.DesiredNumberScheduled:
		return fmt.Sprintf("Waiting for daemon set %q rollout to finish: %d of %d updated pods are available...\n", ds.Name, st.NumberAvailable, st.DesiredNumberScheduled), false, nil
	case target < st.DesiredNumberScheduled:
		return fmt.Sprintf("partitioned roll out complete: %d new pods have been updated...\n", st.UpdatedNumberScheduled), true, nil
	}
	return fmt.Sprintf("daemon set %q successfully rolled out\n", ds.Name), true, nil
}
