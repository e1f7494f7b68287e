package statefulset

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
)

// An Advanced StatefulSet's lifecycle hooks (spec.lifecycle: preDelete, inPlaceUpdate, preNormal)
// are OpenKruise's; pkg/workload/lifecycle holds their states and rules. What is the
// StatefulSet's: when its Pods move (refreshLifecycles; deletePod for preDelete; applyStep for
// inPlaceUpdate), and that each move is expected and, with hooks, reported as an Event. A Pod not
// in state Normal is not available (availability.Available), so it holds OrderedReady and takes
// maxUnavailable budgets, as in OpenKruise.

// refreshLifecycles moves each Pod to the state it reached by itself (OpenKruise's
// refreshPodState: PreparingNormal to Normal once the preNormal hook's labels and finalizers are
// all there, Updating to Normal or Updated once the in-place update is done, Updated to Normal
// once the inPlaceUpdate hook is armed again), and keeps KruisePodReady in line with the state on
// Pods with that readiness gate (a new Pod gets it True here). It tells whether it moved a Pod:
// then scaling and the update wait for the next sync, which sees the move.
func (c *Controller) refreshLifecycles(ctx context.Context, set *v1beta1.StatefulSet, pods []*corev1.Pod, updateRevision string) (bool, error) {
	moved := false
	var errs []error
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if state := lifecycle.Next(set.Spec.Lifecycle, pod, updateRevision); state != "" {
			ok, err := c.setLifecycle(ctx, set, pod, state, nil)
			moved = moved || ok
			errs = append(errs, err)
			continue
		}
		if podreadiness.HasGate(pod) {
			_, err := lifecycle.SyncKruisePodReady(ctx, c.Kube.CoreV1(), pod, lifecycle.State(pod), c.Clock.Now())
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return moved, fmt.Errorf("updating pod lifecycle states: %w", err)
	}
	return moved, nil
}

// setLifecycle moves a Pod to a lifecycle state, arming rearm again when not nil (see
// lifecycle.Mover: the move is expected and, with hooks, reported as an Event).
func (c *Controller) setLifecycle(ctx context.Context, set *v1beta1.StatefulSet, pod *corev1.Pod, state pub.LifecycleStateType, rearm *pub.LifecycleHook) (bool, error) {
	mover := lifecycle.Mover{Pods: c.Kube.CoreV1(), Exp: c.Exp, Recorder: c.Recorder, Kind: Name}
	return mover.Move(ctx, set, set.Spec.Lifecycle, pod, state, rearm, c.Clock.Now())
}

// holdForInPlaceUpdate moves a Pod about to be updated in place through the inPlaceUpdate hook, as
// OpenKruise's inPlaceUpdatePod: a Pod the hook holds moves to PreparingUpdate and waits there
// until its labels and finalizers are gone; a Pod still Updated from the last update has the hook
// armed again first. It tells whether the Pod must wait (the update is not sent now).
func (c *Controller) holdForInPlaceUpdate(ctx context.Context, set *v1beta1.StatefulSet, pod *corev1.Pod) (bool, error) {
	hook := lifecycle.InPlaceUpdateHook(set.Spec.Lifecycle)
	switch lifecycle.State(pod) {
	case pub.LifecycleStateUpdating:
		// The hook was passed for the update this one supersedes.
		return false, nil
	case pub.LifecycleStateUpdated:
		if hook == nil {
			return false, nil
		}
		_, err := c.setLifecycle(ctx, set, pod, pub.LifecycleStatePreparingUpdate, hook)
		return true, err
	case pub.LifecycleStatePreparingUpdate:
		return lifecycle.Hooked(hook, pod), nil
	default:
		if !lifecycle.Hooked(hook, pod) {
			return false, nil
		}
		klog.FromContext(ctx).Info("Pod held by the inPlaceUpdate hook", "statefulset", klog.KObj(set), "pod", klog.KObj(pod))
		_, err := c.setLifecycle(ctx, set, pod, pub.LifecycleStatePreparingUpdate, nil)
		return true, err
	}
}
