package cloneset

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/lifecycle"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
)

// A CloneSet's lifecycle hooks (spec.lifecycle) are OpenKruise's; pkg/controller/lifecycle holds
// their states and rules. What is the CloneSet's: when its Pods move (refreshLifecycles, and the
// scaling and update steps), and that each move is expected and, with hooks, reported as an Event.

// refreshLifecycles moves each Pod to the state it reached by itself, and keeps KruisePodReady in
// line with the state on Pods with that readiness gate (a new Pod gets it True here). It tells
// whether it changed a Pod.
func (c *Controller) refreshLifecycles(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod, updateRevision string) (bool, error) {
	changed := false
	var errs []error
	for _, pod := range pods {
		state := lifecycle.Next(cs.Spec.Lifecycle, pod, updateRevision)
		if state != "" {
			if err := c.setLifecycle(ctx, cs, pod, state, nil); err != nil {
				errs = append(errs, err)
			}
			changed = true
			continue
		}
		if podreadiness.HasGate(pod) {
			ok, err := lifecycle.SyncKruisePodReady(ctx, c.kube.CoreV1(), pod, lifecycle.State(pod), c.now())
			if err != nil {
				errs = append(errs, err)
			}
			changed = changed || ok
		}
	}
	if len(errs) > 0 {
		return changed, fmt.Errorf("updating pod lifecycle states: %w", errors.Join(errs...))
	}
	return changed, nil
}

// setLifecycle moves a Pod to a lifecycle state (label and timestamp), adding the labels and
// finalizers of addHook (a hook armed again), then sets KruisePodReady to match when the Pod has
// that gate. The patch carries the Pod's UID, so a recreated Pod of the same name is not touched.
func (c *Controller) setLifecycle(ctx context.Context, cs *v1alpha1.CloneSet, pod *corev1.Pod, state pub.LifecycleStateType, addHook *pub.LifecycleHook) error {
	if lifecycle.State(pod) != state || addHook != nil {
		patch, err := lifecycle.Patch(pod, state, addHook, c.now())
		if err != nil {
			return err
		}
		updated, err := c.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("setting the lifecycle state of pod %s to %s: %w", pod.Name, state, err)
		}
		c.exp.ExpectLifecycle(cache.MetaObjectToName(cs).String(), pod.Name, string(state))
		klog.FromContext(ctx).V(2).Info("Pod lifecycle state", "cloneset", klog.KObj(cs), "pod", klog.KObj(pod),
			"from", lifecycle.State(pod), "to", state)
		// Without hooks every Pod passes through the states by itself (PreparingNormal to Normal
		// once scheduled, Updating to Normal once updated): an Event for each would double the
		// requests of creating or updating a Pod and tell nobody anything. With hooks, the states
		// are what users wait on.
		if cs.Spec.Lifecycle != nil {
			c.recorder.Eventf(cs, corev1.EventTypeNormal, "PodLifecycle"+string(state), "pod %s is %s", pod.Name, state)
		}
		pod = updated
	}
	if podreadiness.HasGate(pod) {
		if _, err := lifecycle.SyncKruisePodReady(ctx, c.kube.CoreV1(), pod, state, c.now()); err != nil {
			return err
		}
	}
	return nil
}
