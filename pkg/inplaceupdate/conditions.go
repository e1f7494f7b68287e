package inplaceupdate

import (
	"encoding/json"
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

// UpdateReadySet is true when the Pod has no InPlaceUpdateReady readiness gate or its condition is
// True: the in-place update, if any, has given the Pod back to service.
func UpdateReadySet(pod *corev1.Pod) bool {
	if !HasReadinessGate(pod) {
		return true
	}
	c := getCondition(pod, pub.InPlaceUpdateReady)
	return c != nil && c.Status == corev1.ConditionTrue
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
// InPlaceUpdateReady=False, which the kubelet turns into Ready=False. Nothing when the Pod has no
// InPlaceUpdateReady readiness gate or the condition is already False.
//
// Ready itself is left to the kubelet, unlike OpenKruise, which writes Ready=False along with the
// gate. Ready is the kubelet's condition: its status manager keeps the Pod status it last
// generated (Ready=True) and, every 10 s, writes it back over an API status that differs from it,
// taking Ready from its cache and the gate from the API. A Pod whose kill sync is still waiting
// for the kubelet's next relist (up to ~2 s for a container that started just before) then goes
// Ready False, True (old containers, gate False), False, True: measured in 2 of 6 runs of e2e
// TestCloneSetMaxUnavailable. With the gate alone the kubelet writes Ready=False in the sync that
// kills the old containers, before it kills them; inplace-controller counts a Pod whose gate is
// False as unready from the moment the gate is written.
func unreadyConditions(pod *corev1.Pod, now time.Time) []corev1.PodCondition {
	if !HasReadinessGate(pod) {
		return nil
	}
	if c := getCondition(pod, pub.InPlaceUpdateReady); c != nil && c.Status == corev1.ConditionFalse && c.Reason == ReasonStartInPlaceUpdate {
		return nil
	}
	return []corev1.PodCondition{{
		Type:               pub.InPlaceUpdateReady,
		Status:             corev1.ConditionFalse,
		Reason:             ReasonStartInPlaceUpdate,
		LastTransitionTime: metav1.NewTime(now),
	}}
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
