package cloneset

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
)

// A CloneSet's lifecycle hooks (spec.lifecycle) are OpenKruise's; pkg/workload/lifecycle holds
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
			ok, err := lifecycle.SyncKruisePodReady(ctx, c.Kube.CoreV1(), pod, lifecycle.State(pod), c.Clock.Now())
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

// setLifecycle moves a Pod to a lifecycle state (see lifecycle.Mover), expected and, with hooks,
// reported as an Event.
func (c *Controller) setLifecycle(ctx context.Context, cs *v1alpha1.CloneSet, pod *corev1.Pod, state pub.LifecycleStateType, addHook *pub.LifecycleHook) error {
	mover := lifecycle.Mover{Pods: c.Kube.CoreV1(), Exp: c.Exp, Recorder: c.Recorder, Kind: Name}
	_, err := mover.Move(ctx, cs, cs.Spec.Lifecycle, pod, state, addHook, c.Clock.Now())
	return err
}
