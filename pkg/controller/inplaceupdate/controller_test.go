package inplaceupdate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

func TestNeedsWork(t *testing.T) {
	gate := []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}}
	cond := func(s corev1.ConditionStatus) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: pub.InPlaceUpdateReady, Status: s}}
	}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"plain pod", corev1.Pod{}, false},
		{"gate without condition (new pod)", corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: gate}}, true},
		{"gate with condition False", corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: gate}, Status: corev1.PodStatus{Conditions: cond(corev1.ConditionFalse)}}, true},
		{"gate with condition True", corev1.Pod{Spec: corev1.PodSpec{ReadinessGates: gate}, Status: corev1.PodStatus{Conditions: cond(corev1.ConditionTrue)}}, false},
		{"grace period pending", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{pub.InPlaceUpdateGraceKey: "{}"}}}, true},
		{"being deleted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now}, Spec: corev1.PodSpec{ReadinessGates: gate}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := needsWork(&tc.pod); got != tc.want {
				t.Errorf("needsWork = %v, want %v", got, tc.want)
			}
		})
	}
}
