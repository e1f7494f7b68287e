package e2e

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestSidecarSetUpgradableConditionTwoSidecarSets (OpenKruise "multi sidecarSet upgrade sidecar
// container, check pod condition"): two SidecarSets inject agent and logger into the same 2 Pods.
// A changes more than its image (2 matched, 0 updated, 2 ready); B changes its image and upgrades
// both Pods (2/2/2/2); the Pods' SidecarSetUpgradable is False, because of A. A then goes back to
// its env with a new image: it upgrades both Pods too, and SidecarSetUpgradable becomes True.
func TestSidecarSetUpgradableConditionTwoSidecarSets(t *testing.T) {
	ctx, ns := framework.Start(t, "ss-cond")
	nameA, nameB := ns, ns+"-b"
	for name, c := range map[string]string{nameA: "agent", nameB: "logger"} {
		set := framework.ScopedSidecarSet(name, ns, "web")
		set.Spec.Containers = []v1alpha1.SidecarContainer{framework.Sidecar(corev1.Container{
			Name: c, Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever, Env: []corev1.EnvVar{{Name: "MODE", Value: "one"}},
		}, v1alpha1.AfterAppContainerType)}
		framework.CreateSidecarSet(t, ctx, set)
	}
	probe := framework.LabeledPod(ns, "probe", "web", corev1.Container{Name: "main", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever})
	framework.WaitPodWebhook(t, ctx, "the Pod webhook to inject both SidecarSets", probe, func(p *corev1.Pod) bool {
		return framework.FindContainer(p.Spec.Containers, "agent") != nil && framework.FindContainer(p.Spec.Containers, "logger") != nil
	})
	cs, _ := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	framework.WaitSidecarSetStatus(t, ctx, nameA, 2, 2, 2, 2)
	framework.WaitSidecarSetStatus(t, ctx, nameB, 2, 2, 2, 2)

	framework.UpdateSidecarSet(t, ctx, nameA, func(s *v1alpha1.SidecarSet) { s.Spec.Containers[0].Env[0].Value = "two" })
	framework.WaitSidecarSetStatus(t, ctx, nameA, 2, 0, 2, 0)
	framework.UpdateSidecarSet(t, ctx, nameB, framework.SidecarImage(framework.AppImageV2))
	framework.WaitSidecarSetStatus(t, ctx, nameB, 2, 2, 2, 2)
	waitUpgradable(t, ctx, cs, corev1.ConditionFalse)

	framework.UpdateSidecarSet(t, ctx, nameA, func(s *v1alpha1.SidecarSet) {
		s.Spec.Containers[0].Env[0].Value = "one"
		s.Spec.Containers[0].Image = framework.AppImageV2
	})
	framework.WaitSidecarSetStatus(t, ctx, nameA, 2, 2, 2, 2)
	pods := waitUpgradable(t, ctx, cs, corev1.ConditionTrue)
	for name, p := range pods {
		for _, c := range []string{"agent", "logger"} {
			if framework.SpecImage(p, c) != framework.AppImageV2 {
				t.Errorf("pod %s: %s on %s, want %s", name, c, framework.SpecImage(p, c), framework.AppImageV2)
			}
		}
	}
}

// waitUpgradable waits until every Pod of the CloneSet has SidecarSetUpgradable with status, and
// returns the Pods.
func waitUpgradable(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet, status corev1.ConditionStatus) map[string]*corev1.Pod {
	t.Helper()
	var pods map[string]*corev1.Pod
	framework.Poll(t, ctx, framework.RolloutTimeout, fmt.Sprintf("every Pod %s=%s", pub.SidecarSetUpgradable, status), func(ctx context.Context) (bool, error) {
		var err error
		if pods, err = framework.CloneSetPods(ctx, cs); err != nil {
			return false, err
		}
		for name, p := range pods {
			if got := framework.ConditionStatus(p, pub.SidecarSetUpgradable); got != status {
				return false, fmt.Errorf("pod %s: %s", name, got)
			}
		}
		return true, nil
	})
	return pods
}
