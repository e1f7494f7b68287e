package cloneset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
)

// A CloneSet's lifecycle hooks (spec.lifecycle), as in OpenKruise: every Pod carries its state in
// the label lifecycle.apps.kruise.io/state. A hook holds a Pod while the Pod carries ANY of the
// hook's labels (with their values) or finalizers; whoever set them (an operator, a traffic
// manager) releases the Pod by removing them.
//
//	created ─> PreparingNormal ─(preNormal: ALL hook labels/finalizers present)─> Normal
//	Normal ─(update; inPlaceUpdate hook holds)─> PreparingUpdate ─(released)─> Updating
//	Updating ─(in-place update done)─> Updated ─(ALL inPlaceUpdate hook labels back)─> Normal
//	         (or straight to Normal when the hook's labels/finalizers are all present)
//	any ─(deletion; preDelete hook holds)─> PreparingDelete ─(released)─> deleted
//
// markPodNotReady: Pods get the KruisePodReady readiness gate, whose condition is False while the
// Pod is PreparingUpdate, Updating or PreparingDelete, so Endpoints drop it before it changes.

func lifecycleState(pod *corev1.Pod) pub.LifecycleStateType {
	return pub.LifecycleStateType(pod.Labels[pub.LifecycleStateKey])
}

// hooked tells whether the hook holds the Pod: it carries one of the hook's labels (same value) or
// finalizers.
func hooked(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
	if hook == nil {
		return false
	}
	for _, f := range hook.FinalizersHandler {
		if slices.Contains(pod.Finalizers, f) {
			return true
		}
	}
	for k, v := range hook.LabelsHandler {
		if got, ok := pod.Labels[k]; ok && got == v {
			return true
		}
	}
	return false
}

// allHooked tells whether the Pod carries all of the hook's labels and finalizers.
func allHooked(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
	if hook == nil {
		return false
	}
	for _, f := range hook.FinalizersHandler {
		if !slices.Contains(pod.Finalizers, f) {
			return false
		}
	}
	for k, v := range hook.LabelsHandler {
		if got, ok := pod.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func hookOf(cs *v1alpha1.CloneSet, pick func(*pub.Lifecycle) *pub.LifecycleHook) *pub.LifecycleHook {
	if cs.Spec.Lifecycle == nil {
		return nil
	}
	return pick(cs.Spec.Lifecycle)
}

func preDeleteHook(cs *v1alpha1.CloneSet) *pub.LifecycleHook {
	return hookOf(cs, func(l *pub.Lifecycle) *pub.LifecycleHook { return l.PreDelete })
}

func inPlaceUpdateHook(cs *v1alpha1.CloneSet) *pub.LifecycleHook {
	return hookOf(cs, func(l *pub.Lifecycle) *pub.LifecycleHook { return l.InPlaceUpdate })
}

func preNormalHook(cs *v1alpha1.CloneSet) *pub.LifecycleHook {
	return hookOf(cs, func(l *pub.Lifecycle) *pub.LifecycleHook { return l.PreNormal })
}

// marksPodNotReady tells whether any hook asks for markPodNotReady: then the CloneSet's new Pods
// get the KruisePodReady readiness gate.
func marksPodNotReady(cs *v1alpha1.CloneSet) bool {
	for _, h := range []*pub.LifecycleHook{preDeleteHook(cs), inPlaceUpdateHook(cs), preNormalHook(cs)} {
		if h != nil && h.MarkPodNotReady {
			return true
		}
	}
	return false
}

// initialLifecycleState is the state of a Pod the CloneSet creates: PreparingNormal, with or
// without a preNormal hook, as in OpenKruise (see nextLifecycleState).
const initialLifecycleState = pub.LifecycleStatePreparingNormal

func hasKruisePodReadyGate(pod *corev1.Pod) bool { return podreadiness.HasGate(pod) }

// kruisePodReadyFor is the KruisePodReady status a Pod in a state should have.
func kruisePodReadyFor(state pub.LifecycleStateType) corev1.ConditionStatus {
	switch state {
	case pub.LifecycleStatePreparingUpdate, pub.LifecycleStateUpdating, pub.LifecycleStatePreparingDelete:
		return corev1.ConditionFalse
	}
	return corev1.ConditionTrue
}

// nextLifecycleState is the state a Pod moves to by itself (no update or deletion decided), ""
// when it stays: PreparingNormal becomes Normal once the Pod is scheduled (no preNormal hook) or
// once the preNormal hook's labels and finalizers are all present; Updating becomes Updated (or Normal) when its in-place update is done;
// PreparingUpdate becomes so too when the Pod is already at the update revision (the update was
// rolled back while it waited); Updated becomes Normal once the inPlaceUpdate hook's labels and
// finalizers are all back.
func nextLifecycleState(cs *v1alpha1.CloneSet, pod *corev1.Pod, updateRevision string) pub.LifecycleStateType {
	afterUpdate := func() pub.LifecycleStateType {
		if h := inPlaceUpdateHook(cs); h != nil && !allHooked(h, pod) {
			return pub.LifecycleStateUpdated
		}
		return pub.LifecycleStateNormal
	}
	switch lifecycleState(pod) {
	case pub.LifecycleStatePreparingNormal:
		// Without a hook a Pod is Normal once scheduled, as in OpenKruise; with one, once the
		// hook's labels and finalizers are all present, scheduled or not.
		if h := preNormalHook(cs); (h == nil && pod.Spec.NodeName != "") || (h != nil && allHooked(h, pod)) {
			return pub.LifecycleStateNormal
		}
	case pub.LifecycleStatePreparingUpdate, pub.LifecycleStateUpdating:
		// Done means the update is recorded completed AND InPlaceUpdateReady is back to True:
		// inplace-controller writes the second right after the first, and a state patch between
		// them would make its condition write conflict (409) and start over.
		if podUpdated(pod, updateRevision) && inplaceupdate.UpdateReadySet(pod) {
			return afterUpdate()
		}
	case pub.LifecycleStateUpdated:
		if h := inPlaceUpdateHook(cs); h == nil || allHooked(h, pod) {
			return pub.LifecycleStateNormal
		}
	}
	return ""
}

// refreshLifecycles moves each Pod to the state it reached by itself, and keeps KruisePodReady in
// line with the state on Pods with that readiness gate (a new Pod gets it True here). It tells
// whether it changed a Pod.
func (c *Controller) refreshLifecycles(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod, updateRevision string) (bool, error) {
	changed := false
	var errs []error
	for _, pod := range pods {
		state := nextLifecycleState(cs, pod, updateRevision)
		if state != "" {
			if err := c.setLifecycle(ctx, cs, pod, state, nil); err != nil {
				errs = append(errs, err)
			}
			changed = true
			continue
		}
		if hasKruisePodReadyGate(pod) {
			ok, err := c.syncKruisePodReady(ctx, pod, lifecycleState(pod))
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

// lifecycleTimestamp is the value of the lifecycle.apps.kruise.io/timestamp annotation, as
// OpenKruise writes it.
func lifecycleTimestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// setLifecycle moves a Pod to a lifecycle state (label and timestamp), adding the labels and
// finalizers of addHook (a hook armed again), then sets KruisePodReady to match when the Pod has
// that gate. The patch carries the Pod's UID, so a recreated Pod of the same name is not touched.
func (c *Controller) setLifecycle(ctx context.Context, cs *v1alpha1.CloneSet, pod *corev1.Pod, state pub.LifecycleStateType, addHook *pub.LifecycleHook) error {
	if lifecycleState(pod) != state || addHook != nil {
		lbls := map[string]any{pub.LifecycleStateKey: string(state)}
		if _, ok := pod.Labels[pub.LifecycleTimestampKey]; ok {
			lbls[pub.LifecycleTimestampKey] = nil // where older inplace versions wrote it
		}
		meta := map[string]any{"uid": pod.UID, "labels": lbls,
			"annotations": map[string]string{pub.LifecycleTimestampKey: lifecycleTimestamp(c.now())}}
		if addHook != nil {
			for k, v := range addHook.LabelsHandler {
				lbls[k] = v
			}
			if missing := missingFinalizers(pod, addHook.FinalizersHandler); len(missing) > 0 {
				// A strategic merge patch adds to finalizers (merge by value) instead of replacing.
				meta["finalizers"] = missing
			}
		}
		patch, err := json.Marshal(map[string]any{"metadata": meta})
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
			"from", lifecycleState(pod), "to", state)
		// Without hooks every Pod passes through the states by itself (PreparingNormal to Normal
		// once scheduled, Updating to Normal once updated): an Event for each would double the
		// requests of creating or updating a Pod and tell nobody anything. With hooks, the states
		// are what users wait on.
		if cs.Spec.Lifecycle != nil {
			c.recorder.Eventf(cs, corev1.EventTypeNormal, "PodLifecycle"+string(state), "pod %s is %s", pod.Name, state)
		}
		pod = updated
	}
	if hasKruisePodReadyGate(pod) {
		if _, err := c.syncKruisePodReady(ctx, pod, state); err != nil {
			return err
		}
	}
	return nil
}

func missingFinalizers(pod *corev1.Pod, finalizers []string) []string {
	var out []string
	for _, f := range finalizers {
		if !slices.Contains(pod.Finalizers, f) {
			out = append(out, f)
		}
	}
	return out
}

// syncKruisePodReady makes the lifecycle's hold on the KruisePodReady condition (shared with
// other holders, see pkg/podreadiness) the one the state calls for, if it differs. It tells
// whether it wrote.
func (c *Controller) syncKruisePodReady(ctx context.Context, pod *corev1.Pod, state pub.LifecycleStateType) (bool, error) {
	change := func(holders []podreadiness.Holder) []podreadiness.Holder {
		holders = slices.DeleteFunc(holders, func(h podreadiness.Holder) bool { return h.UserAgent == podreadiness.UserAgentLifecycle })
		if kruisePodReadyFor(state) == corev1.ConditionFalse {
			holders = append(holders, podreadiness.Holder{UserAgent: podreadiness.UserAgentLifecycle, Key: string(state)})
		}
		return holders
	}
	if _, changed := podreadiness.Desired(pod, change, c.now()); !changed {
		return false, nil
	}
	if _, err := podreadiness.Update(ctx, c.kube.CoreV1(), pod, change, c.now()); err != nil {
		return false, err
	}
	return true, nil
}

// injectKruisePodReadyGate adds the KruisePodReady readiness gate to a Pod being created.
func injectKruisePodReadyGate(pod *corev1.Pod) {
	if !hasKruisePodReadyGate(pod) {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType})
	}
}

// preparing tells whether the Pod waits in PreparingUpdate or PreparingDelete: out of service
// for the update budget, whatever its readiness.
func preparing(pod *corev1.Pod) bool {
	s := lifecycleState(pod)
	return s == pub.LifecycleStatePreparingUpdate || s == pub.LifecycleStatePreparingDelete
}
