// Package availability says, as OpenKruise's workload controllers count, whether a Pod updated in
// place is ready and available: what a workload's status counters and update budgets are made of.
// The CloneSet controller uses it; the Advanced StatefulSet and DaemonSet controllers, whose Pods
// go through the same in-place updates and lifecycle hooks, are to count the same way. Pure logic
// over Pods.
package availability

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
)

func readyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// Ready is OpenKruise's "update ready": the Pod runs, is Ready, and no in-place update holds its
// InPlaceUpdateReady gate False. The gate counts from the moment inplace writes it False, before
// the kubelet turns Ready False (inplaceupdate leaves Ready to the kubelet), so a rollout's
// maxUnavailable budget sees the Pod leave at once.
func Ready(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	if c := readyCondition(pod); c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	for i := range pod.Status.Conditions {
		if c := pod.Status.Conditions[i]; c.Type == pub.InPlaceUpdateReady && c.Status == corev1.ConditionFalse {
			return false
		}
	}
	return true
}

// Available tells whether a Pod has been Ready for minReadySeconds at now, and if it is ready but
// not yet available, how long until it is (for the caller to look again then). As in OpenKruise
// only a Pod in lifecycle state Normal (or none) can be available: one a hook still holds
// (PreparingNormal, Updated, ...) is not, ready or not, so a rollout does not look done while a
// hook holds a Pod.
func Available(pod *corev1.Pod, minReadySeconds int32, now time.Time) (bool, time.Duration) {
	if s := lifecycle.State(pod); s != "" && s != pub.LifecycleStateNormal {
		return false, 0
	}
	if !Ready(pod) {
		return false, 0
	}
	c := readyCondition(pod)
	if minReadySeconds <= 0 {
		return true, 0
	}
	at := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second)
	if !at.After(now) {
		return true, 0
	}
	return false, at.Sub(now)
}
