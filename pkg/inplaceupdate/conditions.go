package inplaceupdate

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// HasReadinessGate is true when the Pod has the InPlaceUpdateReady readiness gate.
func HasReadinessGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == pub.InPlaceUpdateReady {
			return true
		}
	}
	return false
}

// InjectReadinessGate adds the InPlaceUpdateReady readiness gate to a Pod (being created) that
// lacks it.
func InjectReadinessGate(pod *corev1.Pod) {
	if !HasReadinessGate(pod) {
		pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: pub.InPlaceUpdateReady})
	}
}

func getCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// unreadyConditions are the conditions that take the Pod out of service for an in-place update:
// InPlaceUpdateReady=False and, when the kubelet currently reports the Pod Ready because all its
// containers are ready, Ready=False too (so Endpoints drop it now rather than at the kubelet's
// next sync, as OpenKruise does). Nothing when the Pod has no InPlaceUpdateReady readiness gate
// or the condition is already False.
func unreadyConditions(pod *corev1.Pod, now time.Time) []corev1.PodCondition {
	if !HasReadinessGate(pod) {
		return nil
	}
	if c := getCondition(pod, pub.InPlaceUpdateReady); c != nil && c.Status == corev1.ConditionFalse && c.Reason == ReasonStartInPlaceUpdate {
		return nil
	}
	conds := []corev1.PodCondition{{
		Type:               pub.InPlaceUpdateReady,
		Status:             corev1.ConditionFalse,
		Reason:             ReasonStartInPlaceUpdate,
		LastTransitionTime: metav1.NewTime(now),
	}}
	ready := getCondition(pod, corev1.PodReady)
	containersReady := getCondition(pod, corev1.ContainersReady)
	if ready != nil && ready.Status == corev1.ConditionTrue && containersReady != nil && containersReady.Status == corev1.ConditionTrue {
		conds = append(conds, corev1.PodCondition{
			Type:               corev1.PodReady,
			Status:             corev1.ConditionFalse,
			Reason:             ReasonReadinessGatesNotReady,
			Message:            fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but False", pub.InPlaceUpdateReady),
			LastTransitionTime: metav1.NewTime(now),
		})
	}
	return conds
}

// readyConditions is InPlaceUpdateReady=True with the given reason, when the Pod has the readiness
// gate and the condition is not True yet. The kubelet then turns Ready True once the containers
// are ready. The reason is always set: a strategic merge patch would otherwise keep the False
// condition's reason.
func readyConditions(pod *corev1.Pod, now time.Time, reason string) []corev1.PodCondition {
	if !HasReadinessGate(pod) {
		return nil
	}
	if c := getCondition(pod, pub.InPlaceUpdateReady); c != nil && c.Status == corev1.ConditionTrue {
		return nil
	}
	return []corev1.PodCondition{{
		Type:               pub.InPlaceUpdateReady,
		Status:             corev1.ConditionTrue,
		Reason:             reason,
		LastTransitionTime: metav1.NewTime(now),
	}}
}

// SetConditions sets each condition in status, replacing the one of the same type.
func SetConditions(status *corev1.PodStatus, conds ...corev1.PodCondition) {
	for _, c := range conds {
		replaced := false
		for i := range status.Conditions {
			if status.Conditions[i].Type == c.Type {
				status.Conditions[i] = c
				replaced = true
				break
			}
		}
		if !replaced {
			status.Conditions = append(status.Conditions, c)
		}
	}
}

// StatusPatch is a strategic merge patch of the Pod setting the step's Conditions (conditions
// merge by type), for pods/status; nil when the step has no conditions.
func (s *Step) StatusPatch() ([]byte, error) {
	if len(s.Conditions) == 0 {
		return nil, nil
	}
	return json.Marshal(map[string]any{"status": map[string]any{"conditions": s.Conditions}})
}

// ResizePatch is a strategic merge patch of the Pod setting the step's Resize resources, for
// pods/resize; nil when the step resizes nothing.
func (s *Step) ResizePatch() ([]byte, error) {
	if len(s.Resize) == 0 {
		return nil, nil
	}
	type containerPatch struct {
		Name      string                      `json:"name"`
		Resources corev1.ResourceRequirements `json:"resources"`
	}
	var containers []containerPatch
	for _, name := range sortedKeys(s.Resize) {
		containers = append(containers, containerPatch{Name: name, Resources: s.Resize[name]})
	}
	return json.Marshal(map[string]any{"spec": map[string]any{"containers": containers}})
}
