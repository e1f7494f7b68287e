package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarset"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// SidecarSet upgrades on the real cluster, the scenarios of OpenKruise's test/e2e/apps/sidecarset.go
// ("sidecarSet upgrade cold sidecar container image only", partition, maxUnavailable, selector,
// paused, a non-image change): the sidecar "agent" of a CloneSet's Pods is injected by a
// SidecarSet; a change of its image reaches the running Pods in place — same Pods, the agent
// restarted once, the app container never.

const (
	// upgradeSidecar is the sidecar the SidecarSets of these tests inject.
	upgradeSidecar = "agent"
	// settleWindow is how long a test watches that nothing more happens (a paused upgrade, a
	// partition reached): the controller reacts to a change within a second.
	settleWindow = 5 * time.Second
)

// sidecarUpgrade is a CloneSet "web" whose Pods carry the sidecar of SidecarSet set.
type sidecarUpgrade struct {
	ns, set string
	cs      *v1alpha1.CloneSet
	// before are the Pods once injected and Ready, before any upgrade.
	before map[string]*corev1.Pod
}

// newSidecarUpgrade creates a SidecarSet (named after the test's namespace, selecting its Pods
// app=web) with the sidecar agent on appImageV1, changed by mutate, then a CloneSet of n Pods, and
// waits until they are Ready and the SidecarSet counts them.
func newSidecarUpgrade(t *testing.T, ctx context.Context, prefix string, n int32, mutate func(*v1alpha1.SidecarSet)) *sidecarUpgrade {
	t.Helper()
	ns := framework.NewNamespace(t, ctx, prefix)
	set := ssScopedSet(ns, ns, "web")
	set.Spec.Containers = []v1alpha1.SidecarContainer{ssSidecar(corev1.Container{
		Name: upgradeSidecar, Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever,
		Env: []corev1.EnvVar{{Name: "AGENT_MODE", Value: "one"}},
	}, v1alpha1.AfterAppContainerType)}
	if mutate != nil {
		mutate(set)
	}
	ssCreateSet(t, ctx, set)
	probe := ssPod(ns, "probe", "web", corev1.Container{Name: "main", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever})
	ssWaitWebhook(t, ctx, "the Pod webhook to inject SidecarSet "+ns, probe, func(p *corev1.Pod) bool {
		return ssContainer(p.Spec.Containers, upgradeSidecar) != nil
	})
	cs := newUpdateCloneSet(t, ctx, ns, n, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	before := waitCloneSetReady(t, ctx, cs, n)
	for name, p := range before {
		if c := ssContainer(p.Spec.Containers, upgradeSidecar); c == nil || c.Image != framework.AppImageV1 {
			t.Fatalf("pod %s: containers %v, want the sidecar %s on %s", name, ssNames(p.Spec.Containers), upgradeSidecar, framework.AppImageV1)
		}
	}
	waitSidecarSetStatus(t, ctx, ns, n, n, n, n)
	return &sidecarUpgrade{ns: ns, set: ns, cs: cs, before: before}
}

// updateSidecarSet changes the SidecarSet and returns what the update answered, retrying on
// conflicts: inplace-controller writes the SidecarSet's status at any moment.
func updateSidecarSet(t *testing.T, ctx context.Context, name string, change func(*v1alpha1.SidecarSet)) *v1alpha1.SidecarSet {
	t.Helper()
	var updated *v1alpha1.SidecarSet
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := framework.Inplace.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(cur)
		updated, err = framework.Inplace.AppsV1alpha1().SidecarSets().Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("updating SidecarSet %s: %v", name, err)
	}
	return updated
}

func sidecarImage(image string) func(*v1alpha1.SidecarSet) {
	return func(s *v1alpha1.SidecarSet) { s.Spec.Containers[0].Image = image }
}

// waitSidecarSetStatus waits until the SidecarSet observed its generation and counts the Pods so.
func waitSidecarSetStatus(t *testing.T, ctx context.Context, name string, matched, updated, ready, updatedReady int32) *v1alpha1.SidecarSet {
	t.Helper()
	var got *v1alpha1.SidecarSet
	want := v1alpha1.SidecarSetStatus{MatchedPods: matched, UpdatedPods: updated, ReadyPods: ready, UpdatedReadyPods: updatedReady}
	framework.Poll(t, ctx, rolloutTimeout, fmt.Sprintf("SidecarSet %s: matched %d, updated %d, ready %d, updatedReady %d", name, matched, updated, ready, updatedReady),
		func(ctx context.Context) (bool, error) {
			var err error
			if got, err = framework.Inplace.AppsV1alpha1().SidecarSets().Get(ctx, name, metav1.GetOptions{}); err != nil {
				return false, err
			}
			st := got.Status
			if st.ObservedGeneration != got.Generation || st.MatchedPods != want.MatchedPods || st.UpdatedPods != want.UpdatedPods ||
				st.ReadyPods != want.ReadyPods || st.UpdatedReadyPods != want.UpdatedReadyPods {
				return false, fmt.Errorf("generation %d, status %+v", got.Generation, st)
			}
			return true, nil
		})
	return got
}

// sidecarRunning tells whether the Pod's sidecar runs image, ready, and the Pod is Ready.
func sidecarRunning(p *corev1.Pod, image string) bool {
	s := framework.FindStatus(p, upgradeSidecar)
	return framework.SpecImage(p, upgradeSidecar) == image && s != nil && s.Image == image && s.Ready && s.State.Running != nil && framework.PodReady(p)
}

// podsOnSidecar are the names of the Pods whose sidecar runs image, sorted.
func podsOnSidecar(pods map[string]*corev1.Pod, image string) []string {
	var names []string
	for name, p := range pods {
		if sidecarRunning(p, image) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// checkSidecarsUpgraded checks the Pods after an upgrade to image: the same Pods (UID, IP) as
// before, the sidecar on image restarted agentRestarts times, the app container never restarted.
func checkSidecarsUpgraded(t *testing.T, before, after map[string]*corev1.Pod, image string, agentRestarts int32) {
	t.Helper()
	checkSamePods(t, before, after)
	for name, p := range after {
		if b := before[name]; b != nil && p.Status.PodIP != b.Status.PodIP {
			t.Errorf("pod %s: IP %s, was %s", name, p.Status.PodIP, b.Status.PodIP)
		}
		if !sidecarRunning(p, image) {
			t.Errorf("pod %s: sidecar %s spec image %s, status %+v, want running %s", name, upgradeSidecar, framework.SpecImage(p, upgradeSidecar), framework.FindStatus(p, upgradeSidecar), image)
		}
		if s := framework.FindStatus(p, upgradeSidecar); s == nil || s.RestartCount != agentRestarts {
			t.Errorf("pod %s: sidecar status %+v, want restartCount %d", name, s, agentRestarts)
		}
		if s := framework.FindStatus(p, "main"); s == nil || s.RestartCount != 0 {
			t.Errorf("pod %s: app container status %+v, want restartCount 0: a sidecar upgrade must not restart it", name, s)
		}
	}
}

// waitSidecarsOn waits until want Pods of the CloneSet run the sidecar image and returns the Pods.
func waitSidecarsOn(t *testing.T, ctx context.Context, u *sidecarUpgrade, image string, want int) map[string]*corev1.Pod {
	t.Helper()
	var pods map[string]*corev1.Pod
	framework.Poll(t, ctx, rolloutTimeout, fmt.Sprintf("%d Pods running sidecar %s on %s", want, upgradeSidecar, image), func(ctx context.Context) (bool, error) {
		var err error
		if pods, err = cloneSetPods(ctx, u.cs); err != nil {
			return false, err
		}
		on := podsOnSidecar(pods, image)
		return len(on) == want, fmt.Errorf("on %s: %v", image, on)
	})
	return pods
}

// expectSidecarsStay watches for settleWindow that exactly the Pods named run the sidecar image
// and no other Pod's sidecar is set to it.
func expectSidecarsStay(t *testing.T, ctx context.Context, u *sidecarUpgrade, image string, names []string, why string) {
	t.Helper()
	deadline := time.Now().Add(settleWindow)
	for time.Now().Before(deadline) {
		pods, err := cloneSetPods(ctx, u.cs)
		if err != nil {
			t.Fatal(err)
		}
		var set []string
		for name, p := range pods {
			if framework.SpecImage(p, upgradeSidecar) == image {
				set = append(set, name)
			}
		}
		sort.Strings(set)
		if !slices.Equal(set, names) {
			t.Fatalf("%s: the sidecars of %v are set to %s, want only %v", why, set, image, names)
		}
		select {
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// checkKubectlSidecarSet checks the row `kubectl get sidecarset NAME` prints: MATCHED UPDATED READY.
func checkKubectlSidecarSet(t *testing.T, ctx context.Context, name string, want ...string) {
	t.Helper()
	lines := framework.TableLines(framework.MustKubectl(t, ctx, "", "get", "sidecarset", name))
	if len(lines) != 2 || len(lines[0]) < 5 || len(lines[1]) < 5 {
		t.Fatalf("kubectl get sidecarset %s: %q", name, lines)
	}
	if got := lines[0][:5]; !slices.Equal(got, []string{"NAME", "MATCHED", "UPDATED", "READY", "AGE"}) {
		t.Errorf("kubectl get sidecarset: columns %v", got)
	}
	if got := lines[1][1:4]; !slices.Equal(got, want) {
		t.Errorf("kubectl get sidecarset %s: MATCHED UPDATED READY = %v, want %v", name, got, want)
	}
}

// TestSidecarSetColdUpgrade: a new sidecar image reaches the 4 Pods in place, one Pod at a time
// (maxUnavailable 1 at every moment the Pod watch shows), in priorityStrategy order: every
// sidecar restarts once on the new image, no app container restarts, the Pods keep their UIDs and
// IPs, the status converges and kubectl shows it.
func TestSidecarSetColdUpgrade(t *testing.T) {
	ctx := framework.Context(t)
	u := newSidecarUpgrade(t, ctx, "ss-cold", 4, func(s *v1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.PriorityStrategy = &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
			{Weight: 40, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"prio": "a"}}},
			{Weight: 30, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"prio": "b"}}},
			{Weight: 20, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"prio": "c"}}},
			{Weight: 10, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"prio": "d"}}},
		}}
	})
	// The wanted order is the reverse of the names, so that an order by name or by age fails.
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range u.before {
			if !yield(name) {
				return
			}
		}
	})
	slices.Reverse(names)
	for i, name := range names {
		framework.MustKubectl(t, ctx, "", "-n", u.ns, "label", "pod", name, "prio="+string(rune('a'+i)))
	}
	rec := recordPods(t, ctx, u.ns)

	updateSidecarSet(t, ctx, u.set, sidecarImage(framework.AppImageV2))
	after := waitSidecarsOn(t, ctx, u, framework.AppImageV2, 4)
	waitSidecarSetStatus(t, ctx, u.set, 4, 4, 4, 4)
	checkSidecarsUpgraded(t, u.before, after, framework.AppImageV2, 1)
	checkKubectlSidecarSet(t, ctx, u.set, "4", "4", "4")

	events := rec.upTo(t, ctx, u.ns)
	if changed := podsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
	var order, leftService []string
	most := 0
	rec.replay(events, func(_ podEvent, pods map[string]*corev1.Pod) {
		unavailable := 0
		for name, p := range pods {
			if framework.ConditionStatus(p, pub.InPlaceUpdateReady) == corev1.ConditionFalse && !slices.Contains(leftService, name) {
				leftService = append(leftService, name)
			}
			if framework.SpecImage(p, upgradeSidecar) == framework.AppImageV2 && !slices.Contains(order, name) {
				order = append(order, name)
			}
			if !framework.PodReady(p) || (framework.SpecImage(p, upgradeSidecar) == framework.AppImageV2 && !sidecarRunning(p, framework.AppImageV2)) {
				unavailable++
			}
		}
		most = max(most, unavailable)
	})
	if most != 1 {
		t.Errorf("at most %d Pods were unavailable at once during the upgrade, want exactly maxUnavailable 1", most)
	}
	// Each Pod was asked once (the controller never decides from a cache older than its writes).
	metric := fmt.Sprintf(`inplace_controller_sidecarset_pod_upgrades_total{result="started",sidecarset=%q}`, u.set)
	if got := controllerMetric(t, ctx, metric); got != 4 {
		t.Errorf("%s = %v, want 4", metric, got)
	}
	if !slices.Equal(order, names) {
		t.Errorf("sidecars upgraded in the order %v, want the priorityStrategy's %v", order, names)
	}
	// As in OpenKruise, the Pods stay in service: only the kubelet's readiness moves.
	if len(leftService) > 0 {
		t.Errorf("pods %v were taken out of service (InPlaceUpdateReady False) by a sidecar upgrade without %s", leftService, sidecarset.LeaveServiceAnnotation)
	}
}

// TestSidecarSetNonImageChange: a change beyond images (env) never reaches running Pods: they
// keep their sidecar untouched and are marked SidecarSetUpgradable=False; a new Pod gets the new
// sidecar at creation and counts as updated, and the next image change upgrades it alone.
func TestSidecarSetNonImageChange(t *testing.T) {
	ctx := framework.Context(t)
	u := newSidecarUpgrade(t, ctx, "ss-env", 2, nil)
	updateSidecarSet(t, ctx, u.set, func(s *v1alpha1.SidecarSet) {
		s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "AGENT_MODE", Value: "two"}}
	})
	waitSidecarSetStatus(t, ctx, u.set, 2, 0, 2, 0)
	framework.Poll(t, ctx, rolloutTimeout, "both Pods marked SidecarSetUpgradable=False", func(ctx context.Context) (bool, error) {
		pods, err := cloneSetPods(ctx, u.cs)
		if err != nil {
			return false, err
		}
		var marked []string
		for name, p := range pods {
			if framework.ConditionStatus(p, pub.SidecarSetUpgradable) == corev1.ConditionFalse {
				marked = append(marked, name)
			}
		}
		return len(marked) == 2, fmt.Errorf("marked: %v", marked)
	})
	pods, err := cloneSetPods(ctx, u.cs)
	if err != nil {
		t.Fatal(err)
	}
	checkSidecarsUpgraded(t, u.before, pods, framework.AppImageV1, 0)
	for name, p := range pods {
		if v, _ := ssEnv(ssContainer(p.Spec.Containers, upgradeSidecar), "AGENT_MODE"); v != "one" {
			t.Errorf("pod %s: sidecar AGENT_MODE=%q, want the injected %q kept", name, v, "one")
		}
	}

	updateCloneSet(t, ctx, u.cs, func(cs *v1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](3) })
	waitCloneSetReady(t, ctx, u.cs, 3)
	waitSidecarSetStatus(t, ctx, u.set, 3, 1, 3, 1)
	pods, err = cloneSetPods(ctx, u.cs)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range pods {
		if _, old := u.before[name]; old {
			continue
		}
		if v, _ := ssEnv(ssContainer(p.Spec.Containers, upgradeSidecar), "AGENT_MODE"); v != "two" {
			t.Errorf("new pod %s: sidecar AGENT_MODE=%q, want the SidecarSet's %q", name, v, "two")
		}
	}

	// An image change then reaches the new Pod only (OpenKruise: 2 matched, 1 updated, 1 updated
	// and ready, 2 ready); the old Pods keep their sidecar.
	updateSidecarSet(t, ctx, u.set, sidecarImage(framework.AppImageV2))
	pods = waitSidecarsOn(t, ctx, u, framework.AppImageV2, 1)
	waitSidecarSetStatus(t, ctx, u.set, 3, 1, 3, 1)
	for name := range u.before {
		if framework.SpecImage(pods[name], upgradeSidecar) != framework.AppImageV1 {
			t.Errorf("pod %s: sidecar set to %s, want it kept on %s (not upgradable)", name, framework.SpecImage(pods[name], upgradeSidecar), framework.AppImageV1)
		}
	}
}

// TestSidecarSetUpgradeStrategy: partition "50%" of 4 (OpenKruise "... and partition") upgrades 2
// Pods and stops; paused stops an
// upgrade; resumed, it finishes; updateStrategy.selector limits an upgrade to the labelled Pod,
// and removing it upgrades the others.
func TestSidecarSetUpgradeStrategy(t *testing.T) {
	ctx := framework.Context(t)
	u := newSidecarUpgrade(t, ctx, "ss-strategy", 4, nil)

	updateSidecarSet(t, ctx, u.set, func(s *v1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("50%"))
		s.Spec.Containers[0].Image = framework.AppImageV2
	})
	pods := waitSidecarsOn(t, ctx, u, framework.AppImageV2, 2)
	waitSidecarSetStatus(t, ctx, u.set, 4, 2, 4, 2)
	upgraded := podsOnSidecar(pods, framework.AppImageV2)
	expectSidecarsStay(t, ctx, u, framework.AppImageV2, upgraded, "partition 50% of 4")

	updateSidecarSet(t, ctx, u.set, func(s *v1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Partition = nil
		s.Spec.UpdateStrategy.Paused = true
	})
	waitSidecarSetStatus(t, ctx, u.set, 4, 2, 4, 2)
	expectSidecarsStay(t, ctx, u, framework.AppImageV2, upgraded, "paused")

	updateSidecarSet(t, ctx, u.set, func(s *v1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Paused = false })
	pods = waitSidecarsOn(t, ctx, u, framework.AppImageV2, 4)
	waitSidecarSetStatus(t, ctx, u.set, 4, 4, 4, 4)
	checkSidecarsUpgraded(t, u.before, pods, framework.AppImageV2, 1)

	canary := slices.Sorted(func(yield func(string) bool) {
		for name := range pods {
			if !yield(name) {
				return
			}
		}
	})[0]
	framework.MustKubectl(t, ctx, "", "-n", u.ns, "label", "pod", canary, "canary=true")
	updateSidecarSet(t, ctx, u.set, func(s *v1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		s.Spec.Containers[0].Image = framework.AppImageV3
	})
	waitSidecarsOn(t, ctx, u, framework.AppImageV3, 1)
	waitSidecarSetStatus(t, ctx, u.set, 4, 1, 4, 1)
	expectSidecarsStay(t, ctx, u, framework.AppImageV3, []string{canary}, "updateStrategy.selector canary=true")

	// Without the selector, the rest follow (OpenKruise "... and selector").
	updateSidecarSet(t, ctx, u.set, func(s *v1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Selector = nil })
	waitSidecarsOn(t, ctx, u, framework.AppImageV3, 4)
	waitSidecarSetStatus(t, ctx, u.set, 4, 4, 4, 4)
}

// TestSidecarSetUpgradeWithCloneSetUpdate: a SidecarSet upgrade of the sidecar and a CloneSet
// in-place update of the app container of the same Pods, started together, both finish: each
// container restarted exactly once, on its new image, in the same Pods.
func TestSidecarSetUpgradeWithCloneSetUpdate(t *testing.T) {
	ctx := framework.Context(t)
	u := newSidecarUpgrade(t, ctx, "ss-both", 4, func(s *v1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	})
	rec := recordPods(t, ctx, u.ns)
	cs := updateCloneSet(t, ctx, u.cs, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2
		cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	})
	updateSidecarSet(t, ctx, u.set, sidecarImage(framework.AppImageV2))

	waitRolledOut(t, ctx, cs, 4)
	waitSidecarSetStatus(t, ctx, u.set, 4, 4, 4, 4)
	after := waitSidecarsOn(t, ctx, u, framework.AppImageV2, 4)
	checkSamePods(t, u.before, after)
	for name, p := range after {
		for _, c := range []string{"main", upgradeSidecar} {
			if s := framework.FindStatus(p, c); s == nil || s.RestartCount != 1 || s.Image != framework.AppImageV2 || !s.Ready {
				t.Errorf("pod %s: container %s status %+v, want restarted exactly once, on %s, ready", name, c, s, framework.AppImageV2)
			}
		}
	}
	if changed := podsAddedOrDeleted(rec, rec.upTo(t, ctx, u.ns)); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
}

// TestSidecarSetControllerKilledMidUpgrade: inplace-controller SIGKILLed in the middle of a
// sidecar upgrade and started again finishes it, creating and deleting no Pod, every sidecar
// restarted once.
func TestSidecarSetControllerKilledMidUpgrade(t *testing.T) {
	ctx := framework.Context(t)
	t.Cleanup(func() {
		if !framework.CurrentProgram(t, "inplace-controller").Alive() {
			_ = framework.RunLocalUpHook(t, framework.ControllerHook)
		}
	})
	u := newSidecarUpgrade(t, ctx, "ss-kill", 4, nil)
	rec := recordPods(t, ctx, u.ns)
	controller := framework.CurrentProgram(t, "inplace-controller")

	updateSidecarSet(t, ctx, u.set, sidecarImage(framework.AppImageV2))
	var started int
	framework.Poll(t, ctx, rolloutTimeout, "the sidecar upgrade to start", func(ctx context.Context) (bool, error) {
		pods, err := cloneSetPods(ctx, u.cs)
		if err != nil {
			return false, err
		}
		started = 0
		for _, p := range pods {
			if framework.SpecImage(p, upgradeSidecar) == framework.AppImageV2 {
				started++
			}
		}
		return started > 0, nil
	})
	controller.Stop(t, ctx, syscall.SIGKILL, 10*time.Second)
	t.Logf("inplace-controller (pid %d) killed with %d of 4 Pods started", controller.Pid, started)
	if started == 4 {
		t.Fatal("the upgrade was over before inplace-controller was killed")
	}
	if err := framework.RunLocalUpHook(t, framework.ControllerHook); err != nil {
		t.Fatalf("%s: %v", framework.ControllerHook, err)
	}
	after := waitSidecarsOn(t, ctx, u, framework.AppImageV2, 4)
	waitSidecarSetStatus(t, ctx, u.set, 4, 4, 4, 4)
	checkSidecarsUpgraded(t, u.before, after, framework.AppImageV2, 1)
	if changed := podsAddedOrDeleted(rec, rec.upTo(t, ctx, u.ns)); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
}

// emptyImage is the hotUpgradeEmptyImage of the hot-upgrade tests: the local pause image.
const emptyImage = "inplace.local/pause:1.0"

// hotPair is what the Pod runs of the hot-upgrade sidecar mesh: which container works (the
// annotation), the images of mesh-1 and mesh-2 in the spec, and whether each runs a non-empty
// image, ready.
type hotPair struct {
	working        string
	image1, image2 string
	serving        []string
}

func hotPairOf(t *testing.T, p *corev1.Pod) hotPair {
	t.Helper()
	hp := hotPair{image1: framework.SpecImage(p, "mesh-1"), image2: framework.SpecImage(p, "mesh-2")}
	working := map[string]string{}
	if raw := p.Annotations["kruise.io/sidecarset-working-hotupgrade-container"]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &working); err != nil {
			t.Fatalf("pod %s: working-container annotation %q: %v", p.Name, raw, err)
		}
	}
	hp.working = working["mesh"]
	for _, name := range []string{"mesh-1", "mesh-2"} {
		if s := framework.FindStatus(p, name); s != nil && s.Ready && s.State.Running != nil && s.Image != emptyImage {
			hp.serving = append(hp.serving, name)
		}
	}
	return hp
}

// TestSidecarSetHotUpgrade (OpenKruise "sidecarSet upgrade hot sidecar container image only"):
// the pair mesh-1 (working) and mesh-2 (empty image) is injected; an upgrade v1 -> v2 starts v2
// in mesh-2, which becomes the working container, then mesh-1 goes back to the empty image; v2 ->
// v3 the other way round. At every moment the Pod watch shows, one of the pair runs a non-empty
// image and is ready; the app container never restarts; the Pods stay.
func TestSidecarSetHotUpgrade(t *testing.T) {
	ctx := framework.Context(t)
	ns := framework.NewNamespace(t, ctx, "ss-hot")
	set := ssScopedSet(ns, ns, "web")
	mesh := ssSidecar(corev1.Container{Name: "mesh", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever}, v1alpha1.AfterAppContainerType)
	mesh.UpgradeStrategy = v1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: v1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: emptyImage}
	set.Spec.Containers = []v1alpha1.SidecarContainer{mesh}
	set.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	ssCreateSet(t, ctx, set)
	probe := ssPod(ns, "probe", "web", corev1.Container{Name: "main", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever})
	ssWaitWebhook(t, ctx, "the Pod webhook to inject SidecarSet "+ns, probe, func(p *corev1.Pod) bool {
		return ssContainer(p.Spec.Containers, "mesh-2") != nil
	})
	cs := newUpdateCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	before := waitCloneSetReady(t, ctx, cs, 2)
	waitSidecarSetStatus(t, ctx, ns, 2, 2, 2, 2)
	for name, p := range before {
		if hp := hotPairOf(t, p); hp.working != "mesh-1" || hp.image1 != framework.AppImageV1 || hp.image2 != emptyImage {
			t.Fatalf("pod %s injected with %+v, want mesh-1 working on %s and mesh-2 on %s", name, hp, framework.AppImageV1, emptyImage)
		}
	}
	rec := recordPods(t, ctx, ns)

	steps := []struct {
		image, working string
	}{{framework.AppImageV2, "mesh-2"}, {framework.AppImageV3, "mesh-1"}}
	for _, step := range steps {
		updateSidecarSet(t, ctx, ns, sidecarImage(step.image))
		var pods map[string]*corev1.Pod
		framework.Poll(t, ctx, rolloutTimeout, fmt.Sprintf("both Pods hot-upgraded to %s, %s working", step.image, step.working), func(ctx context.Context) (bool, error) {
			var err error
			if pods, err = cloneSetPods(ctx, cs); err != nil {
				return false, err
			}
			for name, p := range pods {
				hp := hotPairOf(t, p)
				idle := map[string]string{"mesh-1": hp.image1, "mesh-2": hp.image2}
				if hp.working != step.working || idle[step.working] != step.image || !slices.Equal(hp.serving, []string{step.working}) ||
					idle[map[string]string{"mesh-1": "mesh-2", "mesh-2": "mesh-1"}[step.working]] != emptyImage || !framework.PodReady(p) {
					return false, fmt.Errorf("pod %s: %+v", name, hp)
				}
			}
			return true, nil
		})
		got := waitSidecarSetStatus(t, ctx, ns, 2, 2, 2, 2)
		for name, p := range pods {
			if v := p.Annotations["version.sidecarset.kruise.io/"+step.working]; v == "" || v == "0" {
				t.Errorf("pod %s: version of the working %s is %q, want the SidecarSet's resourceVersion", name, step.working, v)
			}
			other := map[string]string{"mesh-1": "mesh-2", "mesh-2": "mesh-1"}[step.working]
			if v := p.Annotations["version.sidecarset.kruise.io/"+other]; v != "0" {
				t.Errorf("pod %s: version of the idle %s is %q, want 0", name, other, v)
			}
		}
		t.Logf("SidecarSet %s at resourceVersion %s: %s works on %s", ns, got.ResourceVersion, step.working, step.image)
	}

	events := rec.upTo(t, ctx, ns)
	if changed := podsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
	var gaps []string
	rec.replay(events, func(ev podEvent, pods map[string]*corev1.Pod) {
		p := pods[ev.pod.Name]
		if p == nil {
			return
		}
		if hp := hotPairOf(t, p); len(hp.serving) == 0 {
			gaps = append(gaps, fmt.Sprintf("pod %s at %s: %+v", p.Name, p.ResourceVersion, hp))
		}
	})
	if len(gaps) > 0 {
		t.Errorf("moments with no ready sidecar of the pair: %v", gaps)
	}
	after, err := cloneSetPods(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	checkSamePods(t, before, after)
	for name, p := range after {
		if s := framework.FindStatus(p, "main"); s == nil || s.RestartCount != 0 {
			t.Errorf("pod %s: app container %+v, want restartCount 0", name, s)
		}
	}
}

// controllerMetric reads one sample of inplace-controller's /metrics (0 when absent).
func controllerMetric(t *testing.T, ctx context.Context, sample string) float64 {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+framework.ProgramAddress(t, "inplace-controller")+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("reading inplace-controller's metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if value, ok := strings.CutPrefix(line, sample+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				t.Fatalf("metric line %q: %v", line, err)
			}
			return v
		}
	}
	return 0
}

// TestSidecarSetUpgradeLeavesService: a SidecarSet annotated
// apps.kruise.io/sidecarset-upgrade-leave-service takes each Pod out of service
// (InPlaceUpdateReady False, reason StartSidecarSetUpgrade) while its sidecar restarts, and puts it
// back once the new sidecar runs.
func TestSidecarSetUpgradeLeavesService(t *testing.T) {
	ctx := framework.Context(t)
	u := newSidecarUpgrade(t, ctx, "ss-leave", 2, func(s *v1alpha1.SidecarSet) {
		s.Annotations = map[string]string{sidecarset.LeaveServiceAnnotation: "true"}
	})
	rec := recordPods(t, ctx, u.ns)
	updateSidecarSet(t, ctx, u.set, sidecarImage(framework.AppImageV2))
	after := waitSidecarsOn(t, ctx, u, framework.AppImageV2, 2)
	waitSidecarSetStatus(t, ctx, u.set, 2, 2, 2, 2)
	checkSidecarsUpgraded(t, u.before, after, framework.AppImageV2, 1)

	left := map[string]bool{}
	rec.replay(rec.upTo(t, ctx, u.ns), func(ev podEvent, pods map[string]*corev1.Pod) {
		for _, c := range ev.pod.Status.Conditions {
			if c.Type == pub.InPlaceUpdateReady && c.Status == corev1.ConditionFalse && c.Reason == "StartSidecarSetUpgrade" {
				left[ev.pod.Name] = true
			}
		}
	})
	for name, p := range after {
		if !left[name] {
			t.Errorf("pod %s never left service (InPlaceUpdateReady False, StartSidecarSetUpgrade) during its sidecar upgrade", name)
		}
		if framework.ConditionStatus(p, pub.InPlaceUpdateReady) != corev1.ConditionTrue {
			t.Errorf("pod %s: InPlaceUpdateReady %s after the upgrade, want True", name, framework.ConditionStatus(p, pub.InPlaceUpdateReady))
		}
	}
}
