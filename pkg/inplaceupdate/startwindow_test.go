package inplaceupdate

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// A pods/inplaceupdate request writes InPlaceUpdateReady=False, then its update. Progress must
// not undo the first write while the second is on its way, and must recover the Pod when the
// second never comes.
func TestProgressLeavesAStartingRequestAlone(t *testing.T) {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	gated := func(conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
			Spec: corev1.PodSpec{
				ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}},
				Containers:     []corev1.Container{{Name: "main", Image: "app:v1"}},
			},
			Status: corev1.PodStatus{Conditions: conds},
		}
	}
	starting := func(age time.Duration) corev1.PodCondition {
		return corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse,
			Reason: ReasonStartInPlaceUpdate, LastTransitionTime: metav1.NewTime(now.Add(-age))}
	}
	// updatedBefore: the Pod was updated in place before; that update completed at completedAt.
	updatedBefore := func(pod *corev1.Pod, completedAt time.Time) *corev1.Pod {
		st := &state{InPlaceUpdateState: pub.InPlaceUpdateState{Revision: "r1", UpdateTimestamp: metav1.NewTime(completedAt.Add(-time.Second))},
			CompletedTimestamp: ptrTime(completedAt)}
		writeState(pod, st)
		return pod
	}
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		wantReason  string // "" means no condition written
		wantRequeue time.Duration
	}{
		{"new pod gets True", gated(), ReasonNoInPlaceUpdate, 0},
		{"request being written is left alone", gated(starting(5 * time.Second)), "", StartWindow - 5*time.Second},
		// The request of a second update finds the first one's completed state: it is being
		// written all the same (setting True here made its update conflict, again and again).
		{"request on a pod updated before is left alone", updatedBefore(gated(starting(5*time.Second)), now.Add(-time.Minute)), "", StartWindow - 5*time.Second},
		// The update's own condition, left False when its completion could not set it True.
		{"completed update's own condition is set True", updatedBefore(gated(starting(5*time.Second)), now.Add(-time.Second)), ReasonInPlaceUpdateCompleted, 0},
		// Written by the same request as the update's start: the same second.
		{"completed update's own condition, of its start's second, is set True", updatedBefore(gated(starting(5*time.Second)), now.Add(-4*time.Second)), ReasonInPlaceUpdateCompleted, 0},
		// A request sent in the second the last update completed in (inplace-daemon completes
		// within milliseconds of the kubelet's report; the next request may follow at once).
		{"request in the second of the last completion is left alone", updatedBefore(gated(starting(5*time.Second)), now.Add(-5*time.Second)), "", StartWindow - 5*time.Second},
		{"abandoned request is recovered", gated(starting(StartWindow + time.Second)), ReasonInPlaceUpdateAbandoned, 0},
		{"False for another reason is set True", gated(corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: "Other"}), ReasonNoInPlaceUpdate, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step, err := Progress(tc.pod, now)
			if err != nil {
				t.Fatal(err)
			}
			if step.RequeueAfter != tc.wantRequeue {
				t.Errorf("RequeueAfter = %s, want %s", step.RequeueAfter, tc.wantRequeue)
			}
			if tc.wantReason == "" {
				if len(step.Conditions) != 0 || step.Pod != nil {
					t.Errorf("step writes %v / pod %v, want nothing", step.Conditions, step.Pod != nil)
				}
				return
			}
			if len(step.Conditions) != 1 || step.Conditions[0].Status != corev1.ConditionTrue || step.Conditions[0].Reason != tc.wantReason {
				t.Errorf("conditions %+v, want InPlaceUpdateReady=True reason %s", step.Conditions, tc.wantReason)
			}
		})
	}
}
