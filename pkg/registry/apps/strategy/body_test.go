package strategy

import (
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestBody(t *testing.T) {
	scale := &autoscalingv1.Scale{}
	if got, err := Body[*autoscalingv1.Scale](scale, "a Scale"); err != nil || got != scale {
		t.Fatalf("Body(Scale) = %v, %v; want the Scale itself", got, err)
	}
	_, err := Body[*autoscalingv1.Scale](&corev1.Pod{}, "a Scale")
	if !apierrors.IsBadRequest(err) || err.Error() != "expected a Scale, got *v1.Pod" {
		t.Fatalf("Body(Pod) error = %v, want a 400 naming what was expected and got", err)
	}
}
