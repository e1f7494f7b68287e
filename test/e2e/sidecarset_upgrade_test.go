package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// SidecarSet upgrades on the real cluster, the scenarios of OpenKruise's test/e2e/apps/sidecarset.go
// ("sidecarSet upgrade cold sidecar container image only", partition, maxUnavailable, selector,
// paused, a non-image change): the sidecar "agent" of a CloneSet's Pods is injected by a
// SidecarSet; a change of its image reaches the running Pods in place — same Pods, the agent
// restarted once, the app container never.

// TestSidecarSetColdUpgrade: a new sidecar image reaches the 4 Pods in place, one Pod at a time
// (maxUnavailable 1 at every moment the Pod watch shows), in priorityStrategy order: every
// sidecar restarts once on the new image, no app container restarts, the Pods keep their UIDs and
// IPs, the status converges and kubectl shows it.
func TestSidecarSetColdUpgrade(t *testing.T) {
	ctx := framework.Context(t)
	u := framework.NewSidecarUpgrade(t, ctx, "ss-cold", 4, func(s *v1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.PriorityStrategy = &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{
			{Weight: 40, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"prio": "a"}}},
			{Weight: 30, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"prio": "b"}}},
			{Weight: 20, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"prio": "c"}}},
			{Weight: 10, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"prio": "d"}}},
		}}
	})
	// The wanted order is the reverse of the names, so that an order by name or by age fails.
	names := slices.Sorted(func(yield func(string) bool) {
		for name := range u.Before {
			if !yield(name) {
				return
			}
		}
	})
	slices.Reverse(names)
	for i, name := range names {
		framework.MustKubectl(t, ctx, "", "-n", u.Ns, "label", "pod", name, "prio="+string(rune('a'+i)))
	}
	rec := framework.RecordPods(t, ctx, u.Ns)

	framework.UpdateSidecarSet(t, ctx, u.Set, framework.SidecarImage(framework.AppImageV2))
	after := framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV2, 4)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 4, 4, 4, 4)
	framework.CheckSidecarsUpgraded(t, u.Before, after, framework.AppImageV2, 1)
	framework.CheckKubectlSidecarSet(t, ctx, u.Set, "4", "4", "4")

	events := rec.UpTo(t, ctx, u.Ns)
	if changed := framework.PodsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
	var order, leftService []string
	most := 0
	rec.Replay(events, func(_ framework.PodEvent, pods map[string]*corev1.Pod) {
		unavailable := 0
		for name, p := range pods {
			if framework.ConditionStatus(p, pub.InPlaceUpdateReady) == corev1.ConditionFalse && !slices.Contains(leftService, name) {
				leftService = append(leftService, name)
			}
			if framework.SpecImage(p, framework.UpgradeSidecar) == framework.AppImageV2 && !slices.Contains(order, name) {
				order = append(order, name)
			}
			if !framework.PodReady(p) || (framework.SpecImage(p, framework.UpgradeSidecar) == framework.AppImageV2 && !framework.SidecarRunning(p, framework.AppImageV2)) {
				unavailable++
			}
		}
		most = max(most, unavailable)
	})
	if most != 1 {
		t.Errorf("at most %d Pods were unavailable at once during the upgrade, want exactly maxUnavailable 1", most)
	}
	// Each Pod was asked once (the controller never decides from a cache older than its writes).
	metric := fmt.Sprintf(`inplace_controller_sidecarset_pod_upgrades_total{result="started",sidecarset=%q}`, u.Set)
	if got := framework.MetricValue(t, ctx, framework.ProgramAddress(t, "inplace-controller"), metric); got != 4 {
		t.Errorf("%s = %v, want 4", metric, got)
	}
	if !slices.Equal(order, names) {
		t.Errorf("sidecars upgraded in the order %v, want the priorityStrategy's %v", order, names)
	}
	// As in OpenKruise, the Pods stay in service: only the kubelet's readiness moves.
	if len(leftService) > 0 {
		t.Errorf("pods %v were taken out of service (InPlaceUpdateReady False) by a sidecar upgrade without %s", leftService, sidecarcontrol.LeaveServiceAnnotation)
	}
}

// TestSidecarSetNonImageChange: a change beyond images (env) never reaches running Pods: they
// keep their sidecar untouched and are marked SidecarSetUpgradable=False; a new Pod gets the new
// sidecar at creation and counts as updated, and the next image change upgrades it alone.
func TestSidecarSetNonImageChange(t *testing.T) {
	ctx := framework.Context(t)
	u := framework.NewSidecarUpgrade(t, ctx, "ss-env", 2, nil)
	framework.UpdateSidecarSet(t, ctx, u.Set, func(s *v1alpha1.SidecarSet) {
		s.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "AGENT_MODE", Value: "two"}}
	})
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 2, 0, 2, 0)
	framework.Poll(t, ctx, framework.RolloutTimeout, "both Pods marked SidecarSetUpgradable=False", func(ctx context.Context) (bool, error) {
		pods, err := framework.CloneSetPods(ctx, u.Cs)
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
	pods, err := framework.CloneSetPods(ctx, u.Cs)
	if err != nil {
		t.Fatal(err)
	}
	framework.CheckSidecarsUpgraded(t, u.Before, pods, framework.AppImageV1, 0)
	for name, p := range pods {
		if v, _ := framework.EnvValue(framework.FindContainer(p.Spec.Containers, framework.UpgradeSidecar), "AGENT_MODE"); v != "one" {
			t.Errorf("pod %s: sidecar AGENT_MODE=%q, want the injected %q kept", name, v, "one")
		}
	}

	framework.UpdateCloneSet(t, ctx, u.Cs, func(cs *v1alpha1.CloneSet) { cs.Spec.Replicas = ptr.To[int32](3) })
	framework.WaitCloneSetReady(t, ctx, u.Cs, 3)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 3, 1, 3, 1)
	pods, err = framework.CloneSetPods(ctx, u.Cs)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range pods {
		if _, old := u.Before[name]; old {
			continue
		}
		if v, _ := framework.EnvValue(framework.FindContainer(p.Spec.Containers, framework.UpgradeSidecar), "AGENT_MODE"); v != "two" {
			t.Errorf("new pod %s: sidecar AGENT_MODE=%q, want the SidecarSet's %q", name, v, "two")
		}
	}

	// An image change then reaches the new Pod only (OpenKruise: 2 matched, 1 updated, 1 updated
	// and ready, 2 ready); the old Pods keep their sidecar.
	framework.UpdateSidecarSet(t, ctx, u.Set, framework.SidecarImage(framework.AppImageV2))
	pods = framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV2, 1)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 3, 1, 3, 1)
	for name := range u.Before {
		if framework.SpecImage(pods[name], framework.UpgradeSidecar) != framework.AppImageV1 {
			t.Errorf("pod %s: sidecar set to %s, want it kept on %s (not upgradable)", name, framework.SpecImage(pods[name], framework.UpgradeSidecar), framework.AppImageV1)
		}
	}
}

// TestSidecarSetUpgradeStrategy: partition "50%" of 4 (OpenKruise "... and partition") upgrades 2
// Pods and stops; paused stops an
// upgrade; resumed, it finishes; updateStrategy.selector limits an upgrade to the labelled Pod,
// and removing it upgrades the others.
func TestSidecarSetUpgradeStrategy(t *testing.T) {
	ctx := framework.Context(t)
	u := framework.NewSidecarUpgrade(t, ctx, "ss-strategy", 4, nil)

	framework.UpdateSidecarSet(t, ctx, u.Set, func(s *v1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("50%"))
		s.Spec.Containers[0].Image = framework.AppImageV2
	})
	pods := framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV2, 2)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 4, 2, 4, 2)
	upgraded := framework.PodsOnSidecar(pods, framework.AppImageV2)
	framework.ExpectSidecarsStay(t, ctx, u, framework.AppImageV2, upgraded, "partition 50% of 4")

	framework.UpdateSidecarSet(t, ctx, u.Set, func(s *v1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Partition = nil
		s.Spec.UpdateStrategy.Paused = true
	})
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 4, 2, 4, 2)
	framework.ExpectSidecarsStay(t, ctx, u, framework.AppImageV2, upgraded, "paused")

	framework.UpdateSidecarSet(t, ctx, u.Set, func(s *v1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Paused = false })
	pods = framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV2, 4)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 4, 4, 4, 4)
	framework.CheckSidecarsUpgraded(t, u.Before, pods, framework.AppImageV2, 1)

	canary := slices.Sorted(func(yield func(string) bool) {
		for name := range pods {
			if !yield(name) {
				return
			}
		}
	})[0]
	framework.MustKubectl(t, ctx, "", "-n", u.Ns, "label", "pod", canary, "canary=true")
	framework.UpdateSidecarSet(t, ctx, u.Set, func(s *v1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		s.Spec.Containers[0].Image = framework.AppImageV3
	})
	framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV3, 1)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 4, 1, 4, 1)
	framework.ExpectSidecarsStay(t, ctx, u, framework.AppImageV3, []string{canary}, "updateStrategy.selector canary=true")

	// Without the selector, the rest follow (OpenKruise "... and selector").
	framework.UpdateSidecarSet(t, ctx, u.Set, func(s *v1alpha1.SidecarSet) { s.Spec.UpdateStrategy.Selector = nil })
	framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV3, 4)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 4, 4, 4, 4)
}

// TestSidecarSetUpgradeWithCloneSetUpdate: a SidecarSet upgrade of the sidecar and a CloneSet
// in-place update of the app container of the same Pods, started together, both finish: each
// container restarted exactly once, on its new image, in the same Pods.
func TestSidecarSetUpgradeWithCloneSetUpdate(t *testing.T) {
	ctx := framework.Context(t)
	u := framework.NewSidecarUpgrade(t, ctx, "ss-both", 4, func(s *v1alpha1.SidecarSet) {
		s.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	})
	rec := framework.RecordPods(t, ctx, u.Ns)
	cs := framework.UpdateCloneSet(t, ctx, u.Cs, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2
		cs.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	})
	framework.UpdateSidecarSet(t, ctx, u.Set, framework.SidecarImage(framework.AppImageV2))

	framework.WaitRolledOut(t, ctx, cs, 4)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 4, 4, 4, 4)
	after := framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV2, 4)
	framework.CheckSamePods(t, u.Before, after)
	for name, p := range after {
		for _, c := range []string{"main", framework.UpgradeSidecar} {
			if s := framework.FindStatus(p, c); s == nil || s.RestartCount != 1 || s.Image != framework.AppImageV2 || !s.Ready {
				t.Errorf("pod %s: container %s status %+v, want restarted exactly once, on %s, ready", name, c, s, framework.AppImageV2)
			}
		}
	}
	if changed := framework.PodsAddedOrDeleted(rec, rec.UpTo(t, ctx, u.Ns)); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
}

// TestSidecarSetControllerKilledMidUpgrade: inplace-controller SIGKILLed in the middle of a
// sidecar upgrade and started again finishes it, creating and deleting no Pod, every sidecar
// restarted once.
func TestSidecarSetControllerKilledMidUpgrade(t *testing.T) {
	ctx := framework.Context(t)
	framework.StartAgainAfter(t, "inplace-controller")
	u := framework.NewSidecarUpgrade(t, ctx, "ss-kill", 4, nil)
	rec := framework.RecordPods(t, ctx, u.Ns)
	controller := framework.CurrentProgram(t, "inplace-controller")

	framework.UpdateSidecarSet(t, ctx, u.Set, framework.SidecarImage(framework.AppImageV2))
	framework.KillControllerMidway(t, ctx, controller, u.Cs, framework.UpgradeSidecar, framework.AppImageV2, "upgrade")
	after := framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV2, 4)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 4, 4, 4, 4)
	framework.CheckSidecarsUpgraded(t, u.Before, after, framework.AppImageV2, 1)
	if changed := framework.PodsAddedOrDeleted(rec, rec.UpTo(t, ctx, u.Ns)); len(changed) > 0 {
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
	ctx, ns := framework.Start(t, "ss-hot")
	set := framework.ScopedSidecarSet(ns, ns, "web")
	mesh := framework.Sidecar(corev1.Container{Name: "mesh", Image: framework.AppImageV1, ImagePullPolicy: corev1.PullNever}, v1alpha1.AfterAppContainerType)
	mesh.UpgradeStrategy = v1alpha1.SidecarContainerUpgradeStrategy{UpgradeType: v1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: emptyImage}
	set.Spec.Containers = []v1alpha1.SidecarContainer{mesh}
	set.Spec.UpdateStrategy.MaxUnavailable = ptr.To(intstr.FromInt32(2))
	framework.CreateSidecarSet(t, ctx, set)
	framework.WaitInjects(t, ctx, ns, set.Spec.Selector.MatchLabels, set.Name)
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	framework.WaitSidecarSetStatus(t, ctx, ns, 2, 2, 2, 2)
	for name, p := range before {
		if hp := hotPairOf(t, p); hp.working != "mesh-1" || hp.image1 != framework.AppImageV1 || hp.image2 != emptyImage {
			t.Fatalf("pod %s injected with %+v, want mesh-1 working on %s and mesh-2 on %s", name, hp, framework.AppImageV1, emptyImage)
		}
	}
	rec := framework.RecordPods(t, ctx, ns)

	steps := []struct {
		image, working string
	}{{framework.AppImageV2, "mesh-2"}, {framework.AppImageV3, "mesh-1"}}
	for _, step := range steps {
		framework.UpdateSidecarSet(t, ctx, ns, framework.SidecarImage(step.image))
		var pods map[string]*corev1.Pod
		framework.Poll(t, ctx, framework.RolloutTimeout, fmt.Sprintf("both Pods hot-upgraded to %s, %s working", step.image, step.working), func(ctx context.Context) (bool, error) {
			var err error
			if pods, err = framework.CloneSetPods(ctx, cs); err != nil {
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
		got := framework.WaitSidecarSetStatus(t, ctx, ns, 2, 2, 2, 2)
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

	events := rec.UpTo(t, ctx, ns)
	if changed := framework.PodsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
	var gaps []string
	rec.Replay(events, func(ev framework.PodEvent, pods map[string]*corev1.Pod) {
		p := pods[ev.Pod.Name]
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
	after, err := framework.CloneSetPods(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	framework.CheckSamePods(t, before, after)
	for name, p := range after {
		if s := framework.FindStatus(p, "main"); s == nil || s.RestartCount != 0 {
			t.Errorf("pod %s: app container %+v, want restartCount 0", name, s)
		}
	}
}

// TestSidecarSetUpgradeLeavesService: a SidecarSet annotated
// apps.kruise.io/sidecarset-upgrade-leave-service takes each Pod out of service
// (InPlaceUpdateReady False, reason StartSidecarSetUpgrade) while its sidecar restarts, and puts it
// back once the new sidecar runs.
func TestSidecarSetUpgradeLeavesService(t *testing.T) {
	ctx := framework.Context(t)
	u := framework.NewSidecarUpgrade(t, ctx, "ss-leave", 2, func(s *v1alpha1.SidecarSet) {
		s.Annotations = map[string]string{sidecarcontrol.LeaveServiceAnnotation: "true"}
	})
	rec := framework.RecordPods(t, ctx, u.Ns)
	framework.UpdateSidecarSet(t, ctx, u.Set, framework.SidecarImage(framework.AppImageV2))
	after := framework.WaitSidecarsOn(t, ctx, u, framework.AppImageV2, 2)
	framework.WaitSidecarSetStatus(t, ctx, u.Set, 2, 2, 2, 2)
	framework.CheckSidecarsUpgraded(t, u.Before, after, framework.AppImageV2, 1)

	left := map[string]bool{}
	rec.Replay(rec.UpTo(t, ctx, u.Ns), func(ev framework.PodEvent, pods map[string]*corev1.Pod) {
		for _, c := range ev.Pod.Status.Conditions {
			if c.Type == pub.InPlaceUpdateReady && c.Status == corev1.ConditionFalse && c.Reason == "StartSidecarSetUpgrade" {
				left[ev.Pod.Name] = true
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
