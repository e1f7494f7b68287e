package e2e

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"

	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// testWorkloadVerticalScaling: a CloneSet (InPlaceIfPossible) whose template's cpu request
// changes resizes its Pods in place (same UIDs) with InPlaceWorkloadVerticalScaling on,
// inplace's default; with the gate off, OpenKruise's default, it recreates them (new UIDs). Either
// way the Pods end with the new request.
func testWorkloadVerticalScaling(t *testing.T, ctx context.Context, inPlace bool) {
	ns := framework.NewNamespace(t, ctx, "fg-vertical")
	cpu := func(q string) func(*v1alpha1.CloneSet) {
		return func(cs *v1alpha1.CloneSet) {
			cs.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")},
			}
		}
	}
	cs := framework.NewUpdateCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType}, cpu("50m"))
	before := framework.WaitCloneSetReady(t, ctx, cs, 2)
	cs = framework.UpdateCloneSet(t, ctx, cs, cpu("100m"))
	_, after := framework.WaitRolledOut(t, ctx, cs, 2)
	if inPlace {
		framework.CheckSamePods(t, before, after)
	} else {
		for uid := range podUIDs(before) {
			if podUIDs(after)[uid] {
				t.Errorf("a Pod (UID %s) was resized in place with InPlaceWorkloadVerticalScaling off: want it recreated", uid)
			}
		}
	}
	for name, p := range after {
		if got := p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.String() != "100m" {
			t.Errorf("pod %s: cpu request %s, want 100m", name, got.String())
		}
	}
}
