package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	policyv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/policy/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/podbudget"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// budgetCounts are the four numbers of a PodUnavailableBudget's status OpenKruise's e2e compares.
type budgetCounts struct{ allowed, desired, current, total int32 }

// createBudget creates, at policy.kruise.io/v1alpha1, the PodUnavailableBudget web-pub of the Pods
// with the labels, maxUnavailable as given.
func createBudget(t *testing.T, ctx context.Context, ns string, labels map[string]string, maxUnavailable int32) *policyv1alpha1.PodUnavailableBudget {
	t.Helper()
	pub := &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web-pub"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			MaxUnavailable: ptr.To(intstr.FromInt32(maxUnavailable)),
		},
	}
	created, err := framework.Inplace.PolicyV1alpha1().PodUnavailableBudgets(ns).Create(ctx, pub, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the PodUnavailableBudget: %v", err)
	}
	return created
}

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
	pub := createBudget(t, ctx, ns, map[string]string{"app": "web"}, 1)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 1, current: 2, total: 2}, "counts both Pods")
	// kubectl finds it through kube-apiserver by OpenKruise's short name, with its columns.
	out := framework.MustKubectl(t, ctx, "", "-n", ns, "get", "pub", pub.Name)
	if want := "NAME      ALLOWED   CURRENT   DESIRED   TOTAL"; !strings.HasPrefix(out, want) || !strings.Contains(out, "web-pub   1         2         1         2") {
		t.Errorf("kubectl get pub:\n%s\nwant the columns %q and 1 2 1 2", out, want)
	}

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

// testBudgetAcrossUpdaters: two CloneSets (5 Pods each) and a SidecarSet injected into all 10
// update them in place at once, each allowed to take all its Pods at once (maxUnavailable 100%),
// under one budget of maxUnavailable 2 over the 10: at every change the Pod watch delivers, at
// most 2 of them are unavailable (not Ready, or an in-place change under way), and all three
// finish. Needs PodUnavailableBudgetUpdateGate.
func testBudgetAcrossUpdaters(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "pub-three")
	// The CloneSets' Pods are app=web-a and app=web-b (the framework finds a CloneSet's Pods by
	// app=<name>); the SidecarSet and the budget select them all by group=web.
	set := framework.AgentSidecarSet(ns, "web")
	set.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"group": "web"}}
	set.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	framework.CreateSidecarSet(t, ctx, set)
	framework.WaitInjects(t, ctx, ns, set.Spec.Selector.MatchLabels, set.Name)
	var sets []*v1alpha1.CloneSet
	for _, name := range []string{"web-a", "web-b"} {
		sets = append(sets, framework.NewUpdateCloneSet(t, ctx, ns, 5, v1alpha1.CloneSetUpdateStrategy{
			Type:           v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
			MaxUnavailable: ptr.To(intstr.FromString("100%")),
		}, func(cs *v1alpha1.CloneSet) {
			cs.Name = name
			cs.Spec.Selector.MatchLabels["app"] = name
			cs.Spec.Template.Labels["app"] = name
			cs.Spec.Template.Labels["group"] = "web"
		}))
	}
	for _, cs := range sets {
		framework.WaitCloneSetReady(t, ctx, cs, 5)
	}
	framework.WaitSidecarSetStatus(t, ctx, ns, 10, 10, 10, 10)
	pub := createBudget(t, ctx, ns, map[string]string{"group": "web"}, 2)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 2, desired: 8, current: 10, total: 10}, "counts the 10 Pods")
	rec := framework.RecordPods(t, ctx, ns)

	for i, cs := range sets {
		sets[i] = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))
	}
	framework.UpdateSidecarSet(t, ctx, set.Name, framework.SidecarImage(framework.AppImageV2))
	for _, cs := range sets {
		framework.WaitRolledOut(t, ctx, cs, 5)
	}
	framework.WaitSidecarSetStatus(t, ctx, ns, 10, 10, 10, 10)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 2, desired: 8, current: 10, total: 10}, "counts the 10 updated Pods")

	events := rec.UpTo(t, ctx, ns)
	most, worst := 0, ""
	rec.Replay(events, func(_ framework.PodEvent, pods map[string]*corev1.Pod) {
		var unavailable []string
		for name, p := range pods {
			if !podbudget.Available(p) {
				unavailable = append(unavailable, name)
			}
		}
		if len(unavailable) > most {
			most, worst = len(unavailable), strings.Join(slices.Sorted(slices.Values(unavailable)), ",")
		}
	})
	t.Logf("%d Pod events, at most %d Pods unavailable at once (%s)", len(events), most, worst)
	if most > 2 {
		t.Errorf("%d Pods unavailable at once (%s), want at most 2 (the budget's maxUnavailable)", most, worst)
	}
	if most == 0 {
		t.Error("no Pod was ever unavailable: the updates did not happen in place")
	}
	if changed := framework.PodsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("pods created or deleted during in-place updates: %v", changed)
	}
}
