package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	policyv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/policy/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// budgetCounts are the four numbers of a PodUnavailableBudget's status OpenKruise's e2e compares.
type budgetCounts struct{ allowed, desired, current, total int32 }

// waitBudget waits until the budget's status, read through kube-apiserver at
// policy.kruise.io/v1alpha1, counts want.
func waitBudget(t *testing.T, ctx context.Context, ns, name string, want budgetCounts, what string) {
	t.Helper()
	framework.Poll(t, ctx, 30*time.Second, fmt.Sprintf("PodUnavailableBudget %s %s: %+v", name, what, want), func(ctx context.Context) (bool, error) {
		pub, err := framework.Inplace.PolicyV1alpha1().PodUnavailableBudgets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st := pub.Status
		got := budgetCounts{st.UnavailableAllowed, st.DesiredAvailable, st.CurrentAvailable, st.TotalReplicas}
		if got != want || st.ObservedGeneration != pub.Generation {
			return false, fmt.Errorf("status %+v", st)
		}
		return true, nil
	})
}

// podsOnImage counts the CloneSet's Pods whose main container's spec has image.
func podsOnImage(ctx context.Context, cs *v1alpha1.CloneSet, image string) (int, error) {
	pods, err := framework.CloneSetPods(ctx, cs)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range pods {
		if framework.SpecImage(p, "main") == image {
			n++
		}
	}
	return n, nil
}

// testBudgetBlocksInPlaceUpdate is OpenKruise's "PodUnavailableBudget selector cloneSet,
// strategy.type=in-place, update failed image and block" (test/e2e/policy): a budget of
// maxUnavailable 1 over a CloneSet of 2 Pods (InPlaceOnly, maxUnavailable 100%); an image that
// never starts reaches one Pod, and the budget holds the other back — pods/inplaceupdate answers
// 429 and the CloneSet waits, saying so in its FailedUpdate condition — until a good image lets
// the rollout through. Needs PodUnavailableBudgetUpdateGate.
func testBudgetBlocksInPlaceUpdate(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "pub-inplace")
	cs, _ := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{
		Type:           v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType,
		MaxUnavailable: ptr.To(intstr.FromString("100%")),
	})
	pub := &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web-pub"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			MaxUnavailable: ptr.To(intstr.FromInt32(1)),
		},
	}
	if _, err := framework.Inplace.PolicyV1alpha1().PodUnavailableBudgets(ns).Create(ctx, pub, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the PodUnavailableBudget: %v", err)
	}
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 1, current: 2, total: 2}, "counts both Pods")

	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageBad))
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 0, desired: 1, current: 1, total: 2}, "has the updated Pod unavailable")
	framework.Poll(t, ctx, 30*time.Second, "CloneSet FailedUpdate for the budget", func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == v1alpha1.CloneSetConditionFailedUpdate && c.Status == "True" && c.Reason == "PodUnavailableBudget" {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
	framework.WaitCloneSetEvent(t, ctx, cs, "PodUnavailableBudget", "PodUnavailableBudget web-pub allows no more unavailable Pods")
	// The second Pod stays on the old image while the first cannot start (OpenKruise waits 20 s).
	framework.Consistently(t, ctx, 5*time.Second, time.Second, func(ctx context.Context) error {
		if n, err := podsOnImage(ctx, cs, framework.AppImageV1); err != nil || n != 1 {
			return fmt.Errorf("%d pods on %s (%v), want 1: the budget let a second Pod go", n, framework.AppImageV1, err)
		}
		return nil
	})

	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))
	framework.WaitRolledOut(t, ctx, cs, 2)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 1, current: 2, total: 2}, "counts both updated Pods")
}
