// Package lifecycle is OpenKruise's Pod lifecycle hooks (pub.Lifecycle: preDelete, inPlaceUpdate,
// preNormal) as the workload controllers share them: CloneSet today, Advanced StatefulSet and
// DaemonSet, which have the same hooks, to come. It works on the hooks and the Pod, never on a
// workload, so that no workload controller imports another for it. Every Pod carries its state in
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
//
// All functions are pure except SyncKruisePodReady, which writes the condition, and Move, which
// sends Patch and then SyncKruisePodReady: recording the move in its expectations and Events is
// the controller's.
package lifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
)

// InitialState is the state of a Pod a workload creates: PreparingNormal, with or without a
// preNormal hook, as in OpenKruise (see Next).
const InitialState = pub.LifecycleStatePreparingNormal

// State is the Pod's lifecycle state, "" when it has none.
func State(pod *corev1.Pod) pub.LifecycleStateType {
	return pub.LifecycleStateType(pod.Labels[pub.LifecycleStateKey])
}

// CountsAsUpdated tells whether scaling counts the Pod as one at the update revision although its
// revision label is an older one: it waits in PreparingUpdate (held by the inPlaceUpdate hook)
// and the PreparingUpdateAsUpdate gate is on, as OpenKruise's revision.IsPodUpdate. Then a Pod
// created while it waits keeps the partition at the current revision; by default it takes the
// update revision, and the held Pod stays at the old one beyond the partition.
func CountsAsUpdated(pod *corev1.Pod) bool {
	return features.Enabled(features.PreparingUpdateAsUpdate) && State(pod) == pub.LifecycleStatePreparingUpdate
}

// Preparing tells whether the Pod waits in PreparingUpdate or PreparingDelete: out of service for
// an update budget, whatever its readiness.
func Preparing(pod *corev1.Pod) bool {
	s := State(pod)
	return s == pub.LifecycleStatePreparingUpdate || s == pub.LifecycleStatePreparingDelete
}

// WaitsForDeletion tells whether the Pod waits in PreparingDelete for the preDelete hook of l to
// release it: nothing is to be done with it meanwhile. Released, it is to be deleted.
func WaitsForDeletion(l *pub.Lifecycle, pod *corev1.Pod) bool {
	return State(pod) == pub.LifecycleStatePreparingDelete && Hooked(PreDeleteHook(l), pod)
}

// PreDeleteHook is the preDelete hook of l, nil when l or the hook is.
func PreDeleteHook(l *pub.Lifecycle) *pub.LifecycleHook {
	if l == nil {
		return nil
	}
	return l.PreDelete
}

// InPlaceUpdateHook is the inPlaceUpdate hook of l, nil when l or the hook is.
func InPlaceUpdateHook(l *pub.Lifecycle) *pub.LifecycleHook {
	if l == nil {
		return nil
	}
	return l.InPlaceUpdate
}

// PreNormalHook is the preNormal hook of l, nil when l or the hook is.
func PreNormalHook(l *pub.Lifecycle) *pub.LifecycleHook {
	if l == nil {
		return nil
	}
	return l.PreNormal
}

// Hooked tells whether the hook holds the Pod: it carries one of the hook's labels (same value) or
// finalizers. A nil hook holds nothing.
func Hooked(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
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

// AllHooked tells whether the Pod carries all of the hook's labels and finalizers (false for a nil
// hook).
func AllHooked(hook *pub.LifecycleHook, pod *corev1.Pod) bool {
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

// MarksPodNotReady tells whether any hook of l asks for markPodNotReady: then the workload's new
// Pods get the KruisePodReady readiness gate.
func MarksPodNotReady(l *pub.Lifecycle) bool {
	for _, h := range []*pub.LifecycleHook{PreDeleteHook(l), InPlaceUpdateHook(l), PreNormalHook(l)} {
		if h != nil && h.MarkPodNotReady {
			return true
		}
	}
	return false
}

// KruisePodReadyFor is the KruisePodReady status a Pod in a state should have.
func KruisePodReadyFor(state pub.LifecycleStateType) corev1.ConditionStatus {
	switch state {
	case pub.LifecycleStatePreparingUpdate, pub.LifecycleStateUpdating, pub.LifecycleStatePreparingDelete:
		return corev1.ConditionFalse
	}
	return corev1.ConditionTrue
}

// InjectKruisePodReadyGate adds the KruisePodReady readiness gate to a Pod being created.
func InjectKruisePodReadyGate(pod *corev1.Pod) {
	if !podreadiness.HasGate(pod) {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.KruisePodReadyConditionType})
	}
}

// updateDone tells whether a Pod is at the update revision: its revision label says so and no
// in-place update of it is under way (pods/inplaceupdate writes the label when the update begins).
func updateDone(pod *corev1.Pod, updateRevision string) bool {
	return pod.Labels[appsv1.ControllerRevisionHashLabelKey] == updateRevision && !inplaceupdate.IsInProgress(pod)
}

// Next is the state a Pod moves to by itself (no update or deletion decided), "" when it stays:
// PreparingNormal becomes Normal once the Pod is scheduled (no preNormal hook) or once the
// preNormal hook's labels and finalizers are all present; Updating becomes Updated (or Normal) when
// its in-place update to updateRevision is done; PreparingUpdate becomes so too when the Pod is
// already at the update revision (the update was rolled back while it waited); Updated becomes
// Normal once the inPlaceUpdate hook's labels and finalizers are all back.
func Next(l *pub.Lifecycle, pod *corev1.Pod, updateRevision string) pub.LifecycleStateType {
	afterUpdate := func() pub.LifecycleStateType {
		if h := InPlaceUpdateHook(l); h != nil && !AllHooked(h, pod) {
			return pub.LifecycleStateUpdated
		}
		return pub.LifecycleStateNormal
	}
	switch State(pod) {
	case pub.LifecycleStatePreparingNormal:
		// Without a hook a Pod is Normal once scheduled, as in OpenKruise; with one, once the
		// hook's labels and finalizers are all present, scheduled or not.
		if h := PreNormalHook(l); (h == nil && pod.Spec.NodeName != "") || (h != nil && AllHooked(h, pod)) {
			return pub.LifecycleStateNormal
		}
	case pub.LifecycleStatePreparingUpdate, pub.LifecycleStateUpdating:
		// (Without an inPlaceUpdate hook the update itself writes Normal on completion, see
		// StateAfterUpdate; this is the way for Pods with one, or updated before.)
		// Done means the update is recorded completed AND InPlaceUpdateReady is back to True:
		// inplace-controller writes the second right after the first, and a state patch between
		// them would make its condition write conflict (409) and start over.
		if updateDone(pod, updateRevision) && inplaceupdate.UpdateReadySet(pod) {
			return afterUpdate()
		}
	case pub.LifecycleStateUpdated:
		if h := InPlaceUpdateHook(l); h == nil || AllHooked(h, pod) {
			return pub.LifecycleStateNormal
		}
	}
	return ""
}

// StateAfterUpdate is the state a Pod of a workload with lifecycle l moves to when its in-place
// update completes, when that is known before the update starts: Normal without an inPlaceUpdate
// hook. With one it depends on the hook's labels then (see Next), and it is "".
func StateAfterUpdate(l *pub.Lifecycle) pub.LifecycleStateType {
	if InPlaceUpdateHook(l) == nil {
		return pub.LifecycleStateNormal
	}
	return ""
}

// Patch is the strategic merge patch that moves a Pod to a lifecycle state (label, and timestamp
// annotation at now), adding the labels and finalizers of rearm (a hook armed again) when not nil.
// It carries the Pod's UID, so a recreated Pod of the same name is not touched.
func Patch(pod *corev1.Pod, state pub.LifecycleStateType, rearm *pub.LifecycleHook, now time.Time) ([]byte, error) {
	lbls := map[string]any{pub.LifecycleStateKey: string(state)}
	if _, ok := pod.Labels[pub.LifecycleTimestampKey]; ok {
		lbls[pub.LifecycleTimestampKey] = nil // where older inplace versions wrote it
	}
	meta := map[string]any{"uid": pod.UID, "labels": lbls,
		"annotations": map[string]string{pub.LifecycleTimestampKey: pub.LifecycleTimestamp(now)}}
	if rearm != nil {
		for k, v := range rearm.LabelsHandler {
			lbls[k] = v
		}
		if missing := missingFinalizers(pod, rearm.FinalizersHandler); len(missing) > 0 {
			// A strategic merge patch adds to finalizers (merge by value) instead of replacing.
			meta["finalizers"] = missing
		}
	}
	patch, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, fmt.Errorf("encoding the lifecycle patch of pod %s: %w", pod.Name, err)
	}
	return patch, nil
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

// kruisePodReadyChange makes the lifecycle's hold on KruisePodReady the one state calls for.
func kruisePodReadyChange(state pub.LifecycleStateType) func([]podreadiness.Holder) []podreadiness.Holder {
	return func(holders []podreadiness.Holder) []podreadiness.Holder {
		holders = slices.DeleteFunc(holders, func(h podreadiness.Holder) bool { return h.UserAgent == podreadiness.UserAgentLifecycle })
		if KruisePodReadyFor(state) == corev1.ConditionFalse {
			holders = append(holders, podreadiness.Holder{UserAgent: podreadiness.UserAgentLifecycle, Key: string(state)})
		}
		return holders
	}
}

// SyncKruisePodReady makes the lifecycle's hold on the KruisePodReady condition (shared with
// other holders, see pkg/podreadiness) the one the state calls for, if it differs, and tells
// whether it wrote. Only for a Pod with the KruisePodReady gate.
func SyncKruisePodReady(ctx context.Context, pods corev1client.PodsGetter, pod *corev1.Pod, state pub.LifecycleStateType, now time.Time) (bool, error) {
	change := kruisePodReadyChange(state)
	if _, changed := podreadiness.Desired(pod, change, now); !changed {
		return false, nil
	}
	if _, err := podreadiness.Update(ctx, pods, pod, change, now); err != nil {
		return false, err
	}
	return true, nil
}

// Move moves a Pod to a lifecycle state, arming rearm again when not nil (see Patch), unless it is
// there already with nothing to arm; then, on a Pod with the KruisePodReady gate, makes the
// lifecycle's hold on that condition the one the state calls for. It tells whether it patched the
// state, for the caller to expect the move and report it. A Pod gone is no error.
func Move(ctx context.Context, pods corev1client.PodsGetter, pod *corev1.Pod, state pub.LifecycleStateType, rearm *pub.LifecycleHook, now time.Time) (bool, error) {
	moved := false
	if State(pod) != state || rearm != nil {
		patch, err := Patch(pod, state, rearm, now)
		if err != nil {
			return false, err
		}
		updated, err := pods.Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("setting the lifecycle state of pod %s to %s: %w", pod.Name, state, err)
		}
		pod, moved = updated, true
	}
	if podreadiness.HasGate(pod) {
		if _, err := SyncKruisePodReady(ctx, pods, pod, state, now); err != nil {
			return moved, err
		}
	}
	return moved, nil
}
