// Package podreadiness shares the KruisePodReady readiness condition among the parties that take
// a Pod out of service (a CloneSet lifecycle hook with markPodNotReady, a ContainerRecreateRequest
// with unreadyGracePeriodSeconds), as OpenKruise does: the condition is False while anyone holds
// it, and its message lists the holders as JSON, e.g.
//
//	[{"userAgent":"ContainerRecreateRequest","key":"default/restart-web"}]
//
// so that one party releasing its hold never puts the Pod back in service while another still
// holds it. The functions here are pure; Patch writes a computed condition.
package podreadiness

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// User agents of the holders inplace writes (OpenKruise's names).
const (
	UserAgentLifecycle                = "Lifecycle"
	UserAgentContainerRecreateRequest = "ContainerRecreateRequest"
)

// Holder is one party holding the Pod out of service.
type Holder struct {
	UserAgent string `json:"userAgent"`
	Key       string `json:"key"`
}

// HasGate tells whether the Pod has the KruisePodReady readiness gate: without it the condition
// does not affect the Pod's readiness.
func HasGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == pub.KruisePodReadyConditionType {
			return true
		}
	}
	return false
}

// Condition is the Pod's KruisePodReady condition, nil when it has none.
func Condition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == pub.KruisePodReadyConditionType {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// Holders are the holders the Pod's condition lists (none when True, missing, or written by
// something that does not list holders).
func Holders(pod *corev1.Pod) []Holder {
	c := Condition(pod)
	if c == nil || c.Status != corev1.ConditionFalse || c.Message == "" {
		return nil
	}
	var holders []Holder
	if err := json.Unmarshal([]byte(c.Message), &holders); err != nil {
		return nil
	}
	return holders
}

// Held tells whether h holds the Pod.
func Held(pod *corev1.Pod, h Holder) bool {
	return slices.Contains(Holders(pod), h)
}

// Hold adds h to the holders.
func Hold(h Holder) func([]Holder) []Holder {
	return func(holders []Holder) []Holder {
		if !slices.Contains(holders, h) {
			holders = append(holders, h)
		}
		return holders
	}
}

// Release removes h from the holders.
func Release(h Holder) func([]Holder) []Holder {
	return func(holders []Holder) []Holder {
		return slices.DeleteFunc(holders, func(x Holder) bool { return x == h })
	}
}

// Desired returns the KruisePodReady condition after change is applied to the Pod's holders, and
// whether it differs from the Pod's: False listing the holders while there are any, else True (a
// Pod with the gate and no condition gets it True, or it would never become Ready).
func Desired(pod *corev1.Pod, change func([]Holder) []Holder, now time.Time) (corev1.PodCondition, bool) {
	holders := change(slices.Clone(Holders(pod)))
	slices.SortFunc(holders, func(a, b Holder) int {
		return cmp.Or(cmp.Compare(a.UserAgent, b.UserAgent), cmp.Compare(a.Key, b.Key))
	})
	want := corev1.PodCondition{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionTrue}
	if len(holders) > 0 {
		msg, _ := json.Marshal(holders) // a slice of plain structs always marshals
		want.Status, want.Reason, want.Message = corev1.ConditionFalse, holders[0].UserAgent, string(msg)
	}
	cur := Condition(pod)
	if cur != nil && cur.Status == want.Status && cur.Message == want.Message {
		return *cur, false
	}
	want.LastTransitionTime = metav1.NewTime(now)
	if cur != nil && cur.Status == want.Status {
		want.LastTransitionTime = cur.LastTransitionTime
	}
	return want, true
}
