package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/policy"
	policyv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/policy/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/podbudget"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// budgetHoldWindow is how long a scenario watches that a budget keeps holding the other Pods
// back, once its status counts and the workload's condition or Event showed a refusal: the
// workload syncs again on every change of the failing Pod (its container restarting), within the
// window. Short, as the scenarios share a CI budget (OpenKruise waits 5-20 s).
const budgetHoldWindow = 2 * time.Second

// budgetCounts are the four numbers of a PodUnavailableBudget's status OpenKruise's e2e compares.
type budgetCounts struct{ allowed, desired, current, total int32 }

// createBudget creates, at policy.kruise.io/v1alpha1, the PodUnavailableBudget web-pub of the Pods
// with the labels, maxUnavailable as given.
func createBudget(t *testing.T, ctx context.Context, ns string, labels map[string]string, maxUnavailable intstr.IntOrString) *policyv1alpha1.PodUnavailableBudget {
	t.Helper()
	pub := &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web-pub"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labels},
			MaxUnavailable: &maxUnavailable,
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
	pub := createBudget(t, ctx, ns, map[string]string{"app": "web"}, intstr.FromInt32(1))
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 1, current: 2, total: 2}, "counts both Pods")
	// kubectl finds it through kube-apiserver by OpenKruise's short name, with its columns.
	out := framework.MustKubectl(t, ctx, "", "-n", ns, "get", "pub", pub.Name)
	if want := "NAME      ALLOWED   CURRENT   DESIRED   TOTAL"; !strings.HasPrefix(out, want) || !strings.Contains(out, "web-pub   1         2         1         2") {
		t.Errorf("kubectl get pub:\n%s\nwant the columns %q and 1 2 1 2", out, want)
	}

	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageBad))
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 0, desired: 1, current: 1, total: 2}, "has the updated Pod unavailable")
	waitCloneSetWaitsForBudget(t, ctx, cs)
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

// waitCloneSetWaitsForBudget waits until the CloneSet says that the budget web-pub holds its
// update back: its FailedUpdate condition True with reason PodUnavailableBudget, and a Normal
// Event of that reason naming the budget.
func waitCloneSetWaitsForBudget(t *testing.T, ctx context.Context, cs *v1alpha1.CloneSet) {
	t.Helper()
	framework.Poll(t, ctx, 30*time.Second, "CloneSet FailedUpdate for the budget", func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(cs.Namespace).Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == v1alpha1.CloneSetConditionFailedUpdate && c.Status == "True" && c.Reason == "PodUnavailableBudget" &&
				strings.Contains(c.Message, "PodUnavailableBudget web-pub") {
				return true, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
	framework.WaitCloneSetEvent(t, ctx, cs, "PodUnavailableBudget", "PodUnavailableBudget web-pub allows no more unavailable Pods")
}

// testBudgetBlocksRecreate is OpenKruise's "PodUnavailableBudget selector cloneSet,
// strategy.type=recreate, update failed image and block": as testBudgetBlocksInPlaceUpdate, but
// the CloneSet (ReCreate, maxUnavailable 100%, maxSurge 0) updates by deleting its Pods. The
// budget webhook lets one deletion through and refuses the other with a 429; the replacement
// cannot start, and the CloneSet waits, saying so, with the other Pod — the same Pod, not
// deleted — on the old image, until a good image lets the rollout through.
func testBudgetBlocksRecreate(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "pub-recreate")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{
		Type:           v1alpha1.RecreateCloneSetUpdateStrategyType,
		MaxUnavailable: ptr.To(intstr.FromString("100%")),
		MaxSurge:       ptr.To(intstr.FromInt32(0)),
	})
	pub := createBudget(t, ctx, ns, map[string]string{"app": "web"}, intstr.FromInt32(1))
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 1, current: 2, total: 2}, "counts both Pods")

	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageBad))
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 0, desired: 1, current: 1, total: 2}, "has the recreated Pod unavailable")
	waitCloneSetWaitsForBudget(t, ctx, cs)
	framework.Consistently(t, ctx, budgetHoldWindow, 500*time.Millisecond, func(ctx context.Context) error {
		pods, err := framework.CloneSetPods(ctx, cs)
		if err != nil {
			return err
		}
		var kept []string
		for name, p := range pods {
			if framework.SpecImage(p, "main") == framework.AppImageV1 {
				if b := before[name]; b == nil || b.UID != p.UID {
					return fmt.Errorf("pod %s on %s is new", name, framework.AppImageV1)
				}
				kept = append(kept, name)
			}
		}
		if len(pods) != 2 || len(kept) != 1 {
			return fmt.Errorf("%d pods, %v on %s; want 2, one of them an old one: the budget let a second Pod go", len(pods), kept, framework.AppImageV1)
		}
		return nil
	})

	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))
	_, after := framework.WaitRolledOut(t, ctx, cs, 2)
	for name, p := range after {
		if framework.SpecImage(p, "main") != framework.AppImageV2 || before[name] != nil {
			t.Errorf("pod %s on %s after the rollout, want a new Pod on %s", name, framework.SpecImage(p, "main"), framework.AppImageV2)
		}
	}
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 1, current: 2, total: 2}, "counts both new Pods")
}

// testBudgetBlocksSidecarUpgrade is OpenKruise's "PodUnavailableBudget selector SidecarSet, inject
// sidecar container, update failed sidecar image, block": a SidecarSet (maxUnavailable 100%)
// injects its sidecar into a Deployment's 5 Pods under a budget of maxUnavailable 1; a sidecar
// image that never starts reaches one Pod, the budget holds the other 4 back and the SidecarSet
// waits, saying so in an Event, until a good image lets the upgrade through.
func testBudgetBlocksSidecarUpgrade(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "pub-sidecar")
	set := framework.AgentSidecarSet(ns, budgetLabels["app"])
	set.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromString("100%"))
	framework.CreateSidecarSet(t, ctx, set)
	framework.WaitInjects(t, ctx, ns, budgetLabels, set.Name)
	pub := createBudget(t, ctx, ns, pubControllerLabels, intstr.FromInt32(1))
	budgetDeployment(t, ctx, ns, 5)
	for _, p := range waitBudgetPods(t, ctx, ns, 5) {
		if framework.SpecImage(&p, framework.UpgradeSidecar) != framework.AppImageV1 {
			t.Fatalf("pod %s: containers %v, want the sidecar %s injected", p.Name, framework.ContainerNames(p.Spec.Containers), framework.UpgradeSidecar)
		}
	}
	framework.WaitSidecarSetStatus(t, ctx, set.Name, 5, 5, 5, 5)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 4, current: 5, total: 5}, "counts the 5 Pods")

	framework.UpdateSidecarSet(t, ctx, set.Name, framework.SidecarImage(framework.AppImageBad))
	framework.WaitSidecarSetStatus(t, ctx, set.Name, 5, 1, 4, 0)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 0, desired: 4, current: 4, total: 5}, "has the upgraded Pod unavailable")
	framework.WaitEvent(t, ctx, metav1.NamespaceDefault, "SidecarSet", set.Name, "PodUnavailableBudget", "PodUnavailableBudget web-pub allows no more unavailable Pods")
	framework.Consistently(t, ctx, budgetHoldWindow, 500*time.Millisecond, func(ctx context.Context) error {
		pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.FormatLabels(budgetLabels)})
		if err != nil {
			return err
		}
		n := 0
		for _, p := range pods.Items {
			if framework.SpecImage(&p, framework.UpgradeSidecar) == framework.AppImageBad {
				n++
			}
		}
		if n != 1 || len(pods.Items) != 5 {
			return fmt.Errorf("%d of %d sidecars on %s, want 1 of 5: the budget let a second Pod go", n, len(pods.Items), framework.AppImageBad)
		}
		return nil
	})

	framework.UpdateSidecarSet(t, ctx, set.Name, framework.SidecarImage(framework.AppImageV2))
	framework.WaitSidecarSetStatus(t, ctx, set.Name, 5, 5, 5, 5)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 4, current: 5, total: 5}, "counts the 5 upgraded Pods")
}

// testBudgetAcrossUpdaters: two CloneSets (5 Pods each) and a SidecarSet injected into all 10
// update them in place at once, each allowed to take all its Pods at once (maxUnavailable 100%),
// under one budget of maxUnavailable 20% (2) over the 10: at every change the Pod watch delivers,
// at most 2 of them are unavailable (not Ready, or an in-place change under way), and all three
// finish, no Pod recreated. It holds OpenKruise's "PodUnavailableBudget selector two cloneSets,
// strategy.type=in-place, update success image" (first an image that never starts: 2 Pods take
// it, the budget holds the 8 others back and both CloneSets wait) and "selector cloneSet and
// sidecarSet, strategy.type=in-place, update success image" (the CloneSets and the SidecarSet
// then update all 10 Pods, and the budget counts them all available). Needs
// PodUnavailableBudgetUpdateGate.
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
	pub := createBudget(t, ctx, ns, map[string]string{"group": "web"}, intstr.FromString("20%"))
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 2, desired: 8, current: 10, total: 10}, "counts the 10 Pods")
	rec := framework.RecordPods(t, ctx, ns)

	for i, cs := range sets {
		sets[i] = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageBad))
	}
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 0, desired: 8, current: 8, total: 10}, "has the 2 failing Pods unavailable")
	for _, cs := range sets {
		// Each sent its 5 Pods at once, and only 2 of the 10 got through.
		waitCloneSetWaitsForBudget(t, ctx, cs)
	}
	framework.Consistently(t, ctx, budgetHoldWindow, 500*time.Millisecond, func(ctx context.Context) error {
		n := 0
		for _, cs := range sets {
			on, err := podsOnImage(ctx, cs, framework.AppImageV1)
			if err != nil {
				return err
			}
			n += on
		}
		if n != 8 {
			return fmt.Errorf("%d pods on %s, want 8: the budget let a third Pod go", n, framework.AppImageV1)
		}
		return nil
	})

	for i, cs := range sets {
		sets[i] = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))
	}
	framework.UpdateSidecarSet(t, ctx, set.Name, framework.SidecarImage(framework.AppImageV2))
	for _, cs := range sets {
		framework.WaitRolledOut(t, ctx, cs, 5)
	}
	framework.WaitSidecarSetStatus(t, ctx, ns, 10, 10, 10, 10)
	for _, cs := range sets {
		if n, err := podsOnImage(ctx, cs, framework.AppImageV2); err != nil || n != 5 {
			t.Errorf("CloneSet %s: %d Pods on %s (%v), want 5", cs.Name, n, framework.AppImageV2, err)
		}
	}
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

// budgetLabels select the Pods of budgetDeployment, as OpenKruise's PodUnavailableBudgetTester
// labels its base Deployment and selects it with its base budget.
var budgetLabels = map[string]string{"app": "busybox", "pub-controller": "true"}

// pubControllerLabels is the selector of OpenKruise's budgets in its specs (of budgetLabels).
var pubControllerLabels = map[string]string{"pub-controller": "true"}

// budgetDeployment creates an apps/v1 Deployment "busybox" of replicas Pods labelled
// budgetLabels (kube-controller-manager runs it; no inplace workload), changed by the mutators,
// and waits for them Ready.
func budgetDeployment(t *testing.T, ctx context.Context, ns string, replicas int32, mutate ...func(*appsv1.Deployment)) *appsv1.Deployment {
	t.Helper()
	d := newBudgetDeployment(t, ctx, ns, replicas, mutate...)
	waitBudgetPods(t, ctx, ns, int(replicas))
	return d
}

// newBudgetDeployment creates the Deployment of budgetDeployment, without waiting.
func newBudgetDeployment(t *testing.T, ctx context.Context, ns string, replicas int32, mutate ...func(*appsv1.Deployment)) *appsv1.Deployment {
	t.Helper()
	pod := framework.AppPod(ns, "busybox", framework.AppImageV1)
	pod.Labels = budgetLabels
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "busybox", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: budgetLabels},
			Template: corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec},
		},
	}
	for _, m := range mutate {
		m(d)
	}
	d, err := framework.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating Deployment %s: %v", d.Name, err)
	}
	return d
}

// waitBudgetPods waits until n active Pods carry pubControllerLabels (budgetLabels, in the
// namespaces of one Deployment), all Ready, and returns them.
func waitBudgetPods(t *testing.T, ctx context.Context, ns string, n int) []corev1.Pod {
	t.Helper()
	return waitBudgetPodsOn(t, ctx, ns, n, "")
}

// waitBudgetPodsOn is waitBudgetPods of Pods whose main container's spec has image (any, when
// empty).
func waitBudgetPodsOn(t *testing.T, ctx context.Context, ns string, n int, image string) []corev1.Pod {
	t.Helper()
	var active []corev1.Pod
	framework.Poll(t, ctx, framework.PodTimeout, fmt.Sprintf("%d Ready Pods labelled %v on %q", n, pubControllerLabels, image), func(ctx context.Context) (bool, error) {
		pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.FormatLabels(pubControllerLabels)})
		if err != nil {
			return false, err
		}
		active = active[:0]
		ready := 0
		for _, p := range pods.Items {
			if podbudget.Active(&p) {
				active = append(active, p)
				if framework.PodReady(&p) && (image == "" || framework.SpecImage(&p, "main") == image) {
					ready++
				}
			}
		}
		return len(active) == n && ready == n, fmt.Errorf("%d active, %d ready", len(active), ready)
	})
	return active
}

// wantBudgetRefusal checks that err is the budget webhook's refusal: a 429 whose message and
// cause name the budget web-pub.
func wantBudgetRefusal(t *testing.T, what string, err error) {
	t.Helper()
	status, ok := err.(apierrors.APIStatus)
	if !ok || !apierrors.IsTooManyRequests(err) {
		t.Fatalf("%s: %v, want a 429 from the PodUnavailableBudget", what, err)
	}
	s := status.Status()
	if !strings.Contains(s.Message, "PodUnavailableBudget web-pub") || s.Details == nil ||
		!slices.ContainsFunc(s.Details.Causes, func(c metav1.StatusCause) bool { return c.Type == "PodUnavailableBudget" }) {
		t.Errorf("%s: refused with %+v, want the message and a PodUnavailableBudget cause to name web-pub", what, s)
	}
}

// testBudgetNoMatchedPods is OpenKruise's "PodUnavailableBudget selector no matched pods": a
// budget whose selector matches none of a Deployment's Pods counts nothing.
func testBudgetNoMatchedPods(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "pub-none")
	pod := framework.AppPod(ns, "other", framework.AppImageV1)
	pod.Labels = map[string]string{"app": "busybox", "pub-controller": "false"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "busybox", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: pod.Labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: pod.ObjectMeta, Spec: pod.Spec}},
	}
	if _, err := framework.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Deployment busybox: %v", err)
	}
	pub := createBudget(t, ctx, ns, pubControllerLabels, intstr.FromString("25%"))
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{}, "counts no Pod")
}

// twoPodsOneUnit is the base of OpenKruise's webhook specs: budgetDeployment's 2 Pods in ns under a
// budget of maxUnavailable 1, whose status counts them (allowed 1 of 2); it returns the budget and
// the two Pods' names.
func twoPodsOneUnit(t *testing.T, ctx context.Context, ns string) (*policyv1alpha1.PodUnavailableBudget, string, string) {
	t.Helper()
	budgetDeployment(t, ctx, ns, 2)
	pub := createBudget(t, ctx, ns, pubControllerLabels, intstr.FromInt32(1))
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 1, current: 2, total: 2}, "counts both Pods")
	pods := waitBudgetPods(t, ctx, ns, 2)
	return pub, pods[0].Name, pods[1].Name
}

// testBudgetBlocksDeletion: OpenKruise's deletion protection of a Deployment's Pods
// (PodUnavailableBudgetDeleteGate): a budget of maxUnavailable 1 over 2 Pods lets one Pod be
// deleted and refuses the second with a 429 naming it, until the first's replacement is Ready; a
// dry-run deletion is checked and takes nothing.
func testBudgetBlocksDeletion(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "pub-delete")
	pub, first, second := twoPodsOneUnit(t, ctx, ns)
	podsAPI := framework.Kube.CoreV1().Pods(ns)

	if err := podsAPI.Delete(ctx, first, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatalf("dry-run deletion of %s: %v", first, err)
	}
	got, err := framework.Inplace.PolicyV1alpha1().PodUnavailableBudgets(ns).Get(ctx, pub.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.UnavailableAllowed != 1 || len(got.Status.DisruptedPods) != 0 {
		t.Fatalf("after a dry-run deletion: status %+v, want the unit left and no Pod recorded", got.Status)
	}

	if err := podsAPI.Delete(ctx, first, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting %s with a unit left: %v", first, err)
	}
	err = podsAPI.Delete(ctx, second, metav1.DeleteOptions{})
	wantBudgetRefusal(t, "deleting "+second+" with no unit left", err)
	if p, err := podsAPI.Get(ctx, second, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
		t.Fatalf("%s after its refused deletion: %v, deletionTimestamp %v; want it there, not terminating", second, err, p.GetDeletionTimestamp())
	}
	// The first Pod's replacement Ready, the unit is back and the second Pod goes.
	framework.Poll(t, ctx, 30*time.Second, "deleting "+second+" once the budget allows it", func(ctx context.Context) (bool, error) {
		err := podsAPI.Delete(ctx, second, metav1.DeleteOptions{})
		return err == nil, err
	})
}

// testBudgetBlocksEvictionDeleteDeployment is OpenKruise's "PodUnavailableBudget selector pods
// and delete deployment ignore": a budget of maxUnavailable 0 refuses the eviction of the
// Deployment's Pod (429 from pods/eviction, naming the budget) until the Pod is annotated
// pub.kruise.io/no-protect; deleting the Deployment itself is not blocked — its Pods go and the
// budget counts none.
func testBudgetBlocksEvictionDeleteDeployment(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "pub-evict")
	pub := createBudget(t, ctx, ns, pubControllerLabels, intstr.FromInt32(0))
	d := budgetDeployment(t, ctx, ns, 1)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 0, desired: 1, current: 1, total: 1}, "counts the Pod")
	pod := waitBudgetPods(t, ctx, ns, 1)[0]
	podsAPI := framework.Kube.CoreV1().Pods(ns)
	evict := func() error {
		return podsAPI.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: ns}})
	}
	wantBudgetRefusal(t, "evicting "+pod.Name, evict())

	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, policy.PodPubNoProtectionAnnotation)
	if _, err := podsAPI.Patch(ctx, pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotating %s no-protect: %v", pod.Name, err)
	}
	if err := evict(); err != nil {
		t.Fatalf("evicting %s annotated %s: %v", pod.Name, policy.PodPubNoProtectionAnnotation, err)
	}
	framework.Poll(t, ctx, 30*time.Second, "the evicted Pod "+pod.Name+" gone", func(ctx context.Context) (bool, error) {
		_, err := podsAPI.Get(ctx, pod.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	// Its replacement is protected again.
	waitBudgetPods(t, ctx, ns, 1)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 0, desired: 1, current: 1, total: 1}, "counts the replacement")

	if err := framework.Kube.AppsV1().Deployments(ns).Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Deployment %s: %v", d.Name, err)
	}
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{}, "counts nothing once the Deployment is deleted")
	waitBudgetPods(t, ctx, ns, 0)
}

// testBudgetScaleDownDeployment is OpenKruise's "PodUnavailableBudget selector pods and scale
// down deployment ignore": a budget of maxUnavailable 25% over 4 Pods does not hold back the
// Deployment's scale-down to 0 — its total and desired count follow the replicas down to 0.
func testBudgetScaleDownDeployment(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "pub-scale")
	pub := createBudget(t, ctx, ns, pubControllerLabels, intstr.FromString("25%"))
	d := budgetDeployment(t, ctx, ns, 4)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 3, current: 4, total: 4}, "counts the 4 Pods")

	patch := []byte(`{"spec":{"replicas":0}}`)
	if _, err := framework.Kube.AppsV1().Deployments(ns).Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("scaling Deployment %s to 0: %v", d.Name, err)
	}
	waitBudgetPods(t, ctx, ns, 0)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{}, "counts nothing once the Deployment is scaled to 0")
}

// testBudgetBlocksDirectUpdate: OpenKruise's webhook check of Pod updates
// (PodUnavailableBudgetUpdateGate) for a write that does not go through pods/inplaceupdate: a
// budget of maxUnavailable 1 over a Deployment's 2 Pods lets a label change through uncharged,
// one Pod's image change through, and refuses the second Pod's with a 429 naming the budget.
func testBudgetBlocksDirectUpdate(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "pub-update")
	pub, first, second := twoPodsOneUnit(t, ctx, ns)
	podsAPI := framework.Kube.CoreV1().Pods(ns)
	patchImage := func(name string) error {
		patch := fmt.Sprintf(`{"spec":{"containers":[{"name":"main","image":%q}]}}`, framework.AppImageV2)
		_, err := podsAPI.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}

	if _, err := podsAPI.Patch(ctx, second, types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"front"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling %s: %v", second, err)
	}
	if err := patchImage(first); err != nil {
		t.Fatalf("changing the image of %s with a unit left: %v", first, err)
	}
	got, err := framework.Inplace.PolicyV1alpha1().PodUnavailableBudgets(ns).Get(ctx, pub.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got.Status.UnavailablePods[first]; !ok || len(got.Status.UnavailablePods) != 1 {
		t.Errorf("after the image change of %s: unavailablePods %v, want it alone (the label change charges nothing)", first, got.Status.UnavailablePods)
	}
	wantBudgetRefusal(t, "changing the image of "+second+" with no unit left", patchImage(second))
	p, err := podsAPI.Get(ctx, second, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if image := framework.SpecImage(p, "main"); image != framework.AppImageV1 {
		t.Errorf("%s after its refused image change: image %q, want %s", second, image, framework.AppImageV1)
	}
}

// TestPodUnavailableBudgetWebhookDown: the budget check of deletions and evictions fails closed,
// scoped as docs/podunavailablebudget.md says. With inplace-apiserver stopped, deleting or evicting
// a Pod that names a budget is refused; a Pod that names none, and a protected Pod once annotated
// pub.kruise.io/no-protect, are deleted (kube-apiserver does not call the webhook for them).
func TestPodUnavailableBudgetWebhookDown(t *testing.T) {
	ctx := framework.Context(t)
	ns := framework.NewNamespace(t, ctx, "pub-down")
	_, protected, evicted := twoPodsOneUnit(t, ctx, ns)
	podsAPI := framework.Kube.CoreV1().Pods(ns)
	plain := framework.AppPod(ns, "plain", framework.AppImageV1)
	if _, err := podsAPI.Create(ctx, plain, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating Pod plain: %v", err)
	}

	framework.StartAgainAfter(t, "inplace-apiserver")
	framework.TakeDown(t, ctx, "inplace-apiserver")
	err := podsAPI.Delete(ctx, protected, metav1.DeleteOptions{})
	if err == nil || !strings.Contains(err.Error(), "delete.podunavailablebudget.policy.kruise.io") {
		t.Errorf("deleting %s (it names a budget) with inplace-apiserver down: %v, want the webhook's failure", protected, err)
	}
	err = podsAPI.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: evicted, Namespace: ns}})
	if err == nil || !strings.Contains(err.Error(), "eviction.podunavailablebudget.policy.kruise.io") {
		t.Errorf("evicting %s with inplace-apiserver down: %v, want the webhook's failure", evicted, err)
	}
	if err := podsAPI.Delete(ctx, plain.Name, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting Pod plain (it names no budget) with inplace-apiserver down: %v", err)
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, policy.PodPubNoProtectionAnnotation)
	if _, err := podsAPI.Patch(ctx, protected, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotating %s no-protect with inplace-apiserver down: %v", protected, err)
	}
	if err := podsAPI.Delete(ctx, protected, metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting %s annotated no-protect with inplace-apiserver down: %v", protected, err)
	}

	if err := framework.RunLocalUpHook(t, framework.ApiserverHook); err != nil {
		t.Fatalf("starting inplace-apiserver again: %v", err)
	}
	framework.Poll(t, ctx, 60*time.Second, "APIService Available again", func(ctx context.Context) (bool, error) { return framework.APIServiceAvailable(ctx) })
}

// testBudgetTargetRefDeployment is OpenKruise's "PodUnavailableBudget targetReference pods, update
// failed image and block": a budget of maxUnavailable 1 over Deployment busybox by targetRef (2
// Pods; maxUnavailable 50%, maxSurge 0). A failing image takes one Pod and the other stays; a good
// image rolls both. Then the label unavailable-pod.kruise.io/data counts a Pod unavailable: the
// labelled Pod's image change passes, while the other Pod's label and image change are refused,
// until the budget protects only DELETE; removing the label gives the unit back.
func testBudgetTargetRefDeployment(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "pub-target")
	pub := &policyv1alpha1.PodUnavailableBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web-pub"},
		Spec: policyv1alpha1.PodUnavailableBudgetSpec{
			TargetReference: &policyv1alpha1.TargetReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "busybox"},
			MaxUnavailable:  ptr.To(intstr.FromInt32(1)),
		},
	}
	pubs := framework.Inplace.PolicyV1alpha1().PodUnavailableBudgets(ns)
	pub, err := pubs.Create(ctx, pub, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the PodUnavailableBudget: %v", err)
	}
	d := budgetDeployment(t, ctx, ns, 2, func(d *appsv1.Deployment) {
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromString("50%")), MaxSurge: ptr.To(intstr.FromInt32(0))}
	})
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 1, current: 2, total: 2}, "counts both Pods")
	deployments := framework.Kube.AppsV1().Deployments(ns)
	setImage := func(image string) {
		framework.Modify(t, ctx, deployments, d.Name, func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image })
	}

	setImage(framework.AppImageBad)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 0, desired: 1, current: 1, total: 2}, "has the failing Pod unavailable")
	framework.Consistently(t, ctx, budgetHoldWindow, 500*time.Millisecond, func(ctx context.Context) error {
		pods, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.FormatLabels(budgetLabels)})
		if err != nil {
			return err
		}
		var old []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && framework.SpecImage(&p, "main") == framework.AppImageV1 {
				old = append(old, p.Name)
			}
		}
		if len(old) != 1 {
			return fmt.Errorf("pods %v on %s, want 1", old, framework.AppImageV1)
		}
		return nil
	})

	setImage(framework.AppImageV2)
	pods := waitBudgetPodsOn(t, ctx, ns, 2, framework.AppImageV2)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 1, current: 2, total: 2}, "counts both new Pods")

	podsAPI := framework.Kube.CoreV1().Pods(ns)
	label := func(name, value string) error {
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, policy.PubUnavailablePodLabelPrefix+"data", value)
		_, err := podsAPI.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	patchImage := func(name string) error {
		patch := fmt.Sprintf(`{"spec":{"containers":[{"name":"main","image":%q}]}}`, framework.AppImageV1)
		_, err := podsAPI.Patch(ctx, name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	first, second := pods[0].Name, pods[1].Name
	if err := label(first, `"true"`); err != nil {
		t.Fatalf("labelling %s unavailable: %v", first, err)
	}
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 0, desired: 1, current: 1, total: 2}, "has the labelled Pod unavailable")
	if err := patchImage(first); err != nil {
		t.Fatalf("changing the image of %s, unavailable already: %v", first, err)
	}
	wantBudgetRefusal(t, "labelling "+second+" unavailable with no unit left", label(second, `"true"`))
	wantBudgetRefusal(t, "changing the image of "+second+" with no unit left", patchImage(second))

	framework.Modify(t, ctx, pubs, pub.Name, func(p *policyv1alpha1.PodUnavailableBudget) {
		metav1.SetMetaDataAnnotation(&p.ObjectMeta, policyv1alpha1.PubProtectOperationAnnotation, string(policyv1alpha1.PubDeleteOperation))
	})
	// The Charger reads the budget from inplace-apiserver's store: the change holds at once, or
	// within its cache's moment.
	framework.Poll(t, ctx, 30*time.Second, "changing the image of "+second+" once the budget protects only DELETE", func(ctx context.Context) (bool, error) {
		err := patchImage(second)
		return err == nil, err
	})
	for _, name := range []string{first, second} {
		p, err := podsAPI.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if image := framework.SpecImage(p, "main"); image != framework.AppImageV1 {
			t.Errorf("pod %s: image %s, want %s", name, image, framework.AppImageV1)
		}
	}
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 0, desired: 1, current: 1, total: 2}, "has the labelled Pod unavailable still")
	if err := label(first, "null"); err != nil {
		t.Fatalf("removing the label of %s: %v", first, err)
	}
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 1, desired: 1, current: 2, total: 2}, "counts both Pods once the label is gone")
}

// testBudgetTwoDeployments is OpenKruise's "PodUnavailableBudget selector two deployments,
// deployment.strategy.maxUnavailable=25% and maxSurge=25%, pub.spec.maxUnavailable=25%, and
// update success image": two Deployments of 5 Pods under one budget of maxUnavailable 25% (3 of
// 10) roll out a new image — the ReplicaSet controller's deletions beyond the budget are refused
// and retried — to the end; scaling one to 0 brings the budget down to its 5 Pods, and deleting
// the other to nothing.
func testBudgetTwoDeployments(t *testing.T, ctx context.Context) {
	ns := framework.NewNamespace(t, ctx, "pub-two-deploy")
	pub := createBudget(t, ctx, ns, pubControllerLabels, intstr.FromString("25%"))
	var ds []*appsv1.Deployment
	for _, name := range []string{"busybox-1", "busybox-2"} {
		ds = append(ds, newBudgetDeployment(t, ctx, ns, 5, func(d *appsv1.Deployment) {
			d.Name = name
			l := map[string]string{"app": name, "pub-controller": "true"}
			d.Spec.Selector = &metav1.LabelSelector{MatchLabels: l}
			d.Spec.Template.Labels = l
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%"))}
		}))
	}
	waitBudgetPods(t, ctx, ns, 10)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 3, desired: 7, current: 10, total: 10}, "counts the 10 Pods")

	deployments := framework.Kube.AppsV1().Deployments(ns)
	for _, d := range ds {
		framework.Modify(t, ctx, deployments, d.Name, func(d *appsv1.Deployment) {
			d.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2
		})
	}
	waitBudgetPodsOn(t, ctx, ns, 10, framework.AppImageV2)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 3, desired: 7, current: 10, total: 10}, "counts the 10 new Pods")

	framework.Modify(t, ctx, deployments, ds[0].Name, func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](0) })
	waitBudgetPods(t, ctx, ns, 5)
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{allowed: 2, desired: 3, current: 5, total: 5}, "counts the 5 Pods of "+ds[1].Name)
	if err := deployments.Delete(ctx, ds[1].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting Deployment %s: %v", ds[1].Name, err)
	}
	waitBudget(t, ctx, ns, pub.Name, budgetCounts{}, "counts nothing once the Deployments are gone")
}
