package podreadiness

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

var (
	now       = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	crr       = Holder{UserAgent: UserAgentContainerRecreateRequest, Key: "ns/restart"}
	lifecycle = Holder{UserAgent: UserAgentLifecycle, Key: "PreparingUpdate"}
)

func gatedPod() *corev1.Pod {
	return &corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.KruisePodReadyConditionType}}}}
}

// apply writes the desired condition into the Pod, as a successful Update would.
func apply(t *testing.T, pod *corev1.Pod, change func([]Holder) []Holder) bool {
	t.Helper()
	cond, changed := Desired(pod, change, now)
	if c := Condition(pod); c != nil {
		*c = cond
	} else {
		pod.Status.Conditions = append(pod.Status.Conditions, cond)
	}
	return changed
}

func TestHoldersShareTheCondition(t *testing.T) {
	pod := gatedPod()
	if !HasGate(pod) {
		t.Fatal("HasGate false for a gated pod")
	}
	// No condition yet: True, or the Pod would never become Ready.
	if !apply(t, pod, func(h []Holder) []Holder { return h }) || Condition(pod).Status != corev1.ConditionTrue {
		t.Fatalf("condition %+v, want True written", Condition(pod))
	}
	if !apply(t, pod, Hold(crr)) || Condition(pod).Status != corev1.ConditionFalse {
		t.Fatalf("after the CRR holds: %+v, want False", Condition(pod))
	}
	if got := Condition(pod).Message; got != `[{"userAgent":"ContainerRecreateRequest","key":"ns/restart"}]` {
		t.Errorf("message %s, want OpenKruise's holder list", got)
	}
	if apply(t, pod, Hold(crr)) {
		t.Error("holding twice wrote again")
	}
	apply(t, pod, Hold(lifecycle))
	if !Held(pod, crr) || !Held(pod, lifecycle) {
		t.Fatalf("holders %v, want both", Holders(pod))
	}
	// One releasing keeps the Pod out while the other holds.
	apply(t, pod, Release(crr))
	if c := Condition(pod); c.Status != corev1.ConditionFalse || Held(pod, crr) || !Held(pod, lifecycle) {
		t.Fatalf("after the CRR released: %+v", c)
	}
	apply(t, pod, Release(lifecycle))
	if c := Condition(pod); c.Status != corev1.ConditionTrue || c.Message != "" {
		t.Fatalf("after both released: %+v, want True without message", c)
	}
}

// A False condition written by someone who lists no holders is not read as holders; the next
// write replaces it with the holders written through this package.
func TestForeignMessage(t *testing.T) {
	pod := gatedPod()
	pod.Status.Conditions = []corev1.PodCondition{{Type: pub.KruisePodReadyConditionType, Status: corev1.ConditionFalse, Message: "held by hand"}}
	if h := Holders(pod); h != nil {
		t.Fatalf("holders %v of a plain message", h)
	}
	apply(t, pod, Hold(crr))
	if h := Holders(pod); len(h) != 1 || h[0] != crr {
		t.Fatalf("holders %v, want the CRR", h)
	}
}
