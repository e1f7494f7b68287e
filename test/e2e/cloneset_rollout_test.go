package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// TestCloneSetMaxUnavailable: with maxUnavailable 1, an in-place rollout over 4 Pods never has
// more than one Pod unready at any moment the Pod watch shows, and creates or deletes nothing.
func TestCloneSetMaxUnavailable(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-mu")
	cs, _ := framework.ReadyCloneSet(t, ctx, ns, 4, v1alpha1.CloneSetUpdateStrategy{
		Type:           v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		MaxUnavailable: ptr.To(intstr.FromInt32(1)),
	})
	rec := framework.RecordPods(t, ctx, ns)

	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))
	got, _ := framework.WaitRolledOut(t, ctx, cs, 4)
	// Ready must not flip back later either (the kubelet's status manager writes its cached status
	// over a differing one every 10 s): watch a while longer.
	time.Sleep(11 * time.Second)
	events := rec.UpTo(t, ctx, ns)
	maxUnready, observations := 0, 0
	var worst string
	history := map[string][]bool{}
	transitions := map[string][]string{} // the same, with the conditions that made each one
	rec.Replay(events, func(ev framework.PodEvent, pods map[string]*corev1.Pod) {
		if h := history[ev.Pod.Name]; len(h) == 0 || h[len(h)-1] != framework.PodReady(ev.Pod) {
			history[ev.Pod.Name] = append(h, framework.PodReady(ev.Pod))
			transitions[ev.Pod.Name] = append(transitions[ev.Pod.Name], framework.ReadyTransition(ev.Pod))
		}
		observations++
		var unready []string
		for name, p := range pods {
			if !framework.PodReady(p) {
				unready = append(unready, name)
			}
		}
		if len(unready) > maxUnready {
			maxUnready = len(unready)
			worst = strings.Join(slices.Sorted(slices.Values(unready)), ",")
		}
	})
	t.Logf("%d observations, at most %d Pod(s) unready", observations, maxUnready)
	if maxUnready != 1 {
		t.Errorf("at most %d Pods unready at once (%s), want exactly 1 (maxUnavailable 1)", maxUnready, worst)
	}
	if changed := framework.PodsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("pods created or deleted during an in-place rollout: %v", changed)
	}
	for name, h := range history {
		// Ready went False once and came back once (the first event may show it True still).
		h := h
		if len(h) > 0 && h[0] {
			h = h[1:]
		}
		if !slices.Equal(h, []bool{false, true}) {
			t.Errorf("pod %s: Ready history %v, want one False then True: %s", name, history[name], strings.Join(transitions[name], "; "))
		}
	}
	if len(history) != 4 {
		t.Errorf("Ready history of %d pods, want 4: %v", len(history), history)
	}
	framework.CheckKubectlCounts(t, ctx, got, "4", "4", "4", "4", "4")
}

// TestCloneSetPaused: a paused CloneSet changes no Pod after a template change; unpaused, it rolls
// out.
func TestCloneSetPaused(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-pause")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{
		Type:   v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		Paused: true,
	})
	rec := framework.RecordPods(t, ctx, ns)
	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))

	// The controller saw the change (a new update revision in status), and for a while after
	// that no Pod changes.
	framework.Poll(t, ctx, 30*time.Second, "the new update revision in status", func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return got.Status.ObservedGeneration == got.Generation && got.Status.UpdateRevision != got.Status.CurrentRevision,
			fmt.Errorf("status %+v", got.Status)
	})
	framework.Consistently(t, ctx, 5*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.UpdatedReplicas != 0 {
			return fmt.Errorf("paused: status.updatedReplicas %d", got.Status.UpdatedReplicas)
		}
		return nil
	})
	events := rec.UpTo(t, ctx, ns)
	for _, e := range events {
		b := before[e.Pod.Name]
		if b == nil || e.Pod.UID != b.UID || framework.SpecImage(e.Pod, "main") != framework.AppImageV1 || framework.PodRevision(e.Pod) != framework.PodRevision(b) {
			t.Fatalf("paused: pod %s changed (%s): image %s, revision %s", e.Pod.Name, e.Typ, framework.SpecImage(e.Pod, "main"), framework.PodRevision(e.Pod))
		}
	}

	cs = framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) { cs.Spec.UpdateStrategy.Paused = false })
	_, after := framework.WaitRolledOut(t, ctx, cs, 2)
	framework.CheckSamePods(t, before, after)
}

// TestCloneSetInPlaceOnly: under InPlaceOnly a template change that cannot go in place is refused
// when written (422 naming spec.template), and Pods left at a revision that cannot be reached in
// place (the change was made under InPlaceIfPossible while paused) are never recreated: the
// FailedUpdate condition and a Warning event say why.
func TestCloneSetInPlaceOnly(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-ipo")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType})

	_, stderr, err := framework.Kubectl(ctx, "", "-n", ns, "patch", "clone/web", "--type=json", "-p",
		`[{"op":"add","path":"/spec/template/spec/containers/0/env","value":[{"name":"GREETING","value":"hello"}]}]`)
	if err == nil || !strings.Contains(stderr, "spec.template") || !strings.Contains(stderr, "InPlaceOnly") {
		t.Fatalf("env change under InPlaceOnly: err %v, stderr %q; want a 422 naming spec.template and InPlaceOnly", err, stderr)
	}

	// Written under InPlaceIfPossible while paused, then InPlaceOnly and unpaused.
	cs = framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType
		cs.Spec.UpdateStrategy.Paused = true
	})
	cs = framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) {
		cs.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "GREETING", Value: "hello"}}
	})
	rec := framework.RecordPods(t, ctx, ns)
	cs = framework.UpdateCloneSet(t, ctx, cs, func(cs *v1alpha1.CloneSet) {
		cs.Spec.UpdateStrategy.Type = v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType
		cs.Spec.UpdateStrategy.Paused = false
	})
	var cond *v1alpha1.CloneSetCondition
	framework.Poll(t, ctx, 30*time.Second, "condition FailedUpdate True", func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for i := range got.Status.Conditions {
			if c := &got.Status.Conditions[i]; c.Type == v1alpha1.CloneSetConditionFailedUpdate && c.Status == corev1.ConditionTrue {
				cond = c
				return got.Status.ObservedGeneration == got.Generation, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", got.Status.Conditions)
	})
	if cond.Reason != "CannotUpdateInPlace" || !strings.Contains(cond.Message, "InPlaceOnly") || !strings.Contains(cond.Message, "env") {
		t.Errorf("condition FailedUpdate: reason %q, message %q; want CannotUpdateInPlace naming InPlaceOnly and the env change", cond.Reason, cond.Message)
	}
	framework.WaitCloneSetEvent(t, ctx, cs, "FailedUpdatePodInPlaceOnly", "cannot be made in place")
	// And it stays so: the Pod watch records any change during this observation window.
	time.Sleep(3 * time.Second)
	events := rec.UpTo(t, ctx, ns)
	if changed := framework.PodsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("InPlaceOnly created or deleted pods: %v", changed)
	}
	pods, err := framework.CloneSetPods(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range pods {
		if b := before[name]; b == nil || b.UID != p.UID || len(p.Spec.Containers[0].Env) != 0 {
			t.Errorf("pod %s changed under InPlaceOnly (env %v)", name, p.Spec.Containers[0].Env)
		}
	}
}

// TestCloneSetInPlaceUpdateHook: with an inPlaceUpdate lifecycle hook (labelsHandler,
// markPodNotReady) the Pod waits in PreparingUpdate, out of service and not updated, until the
// hook label is removed; then it is updated in place (Updated), and Normal once the label is back.
func TestCloneSetInPlaceUpdateHook(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-hook")
	const hold = "example.io/hold"
	cs := framework.NewUpdateCloneSet(t, ctx, ns, 1, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType},
		func(cs *v1alpha1.CloneSet) {
			cs.Spec.Template.Labels[hold] = "true"
			cs.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{
				LabelsHandler: map[string]string{hold: "true"}, MarkPodNotReady: true}}
		})
	// Ready needs KruisePodReady True, which the controller sets on the new Pod.
	before := framework.WaitCloneSetReady(t, ctx, cs, 1)
	var name string
	for name = range before {
	}
	if s := before[name].Labels[pub.LifecycleStateKey]; s != string(pub.LifecycleStateNormal) {
		t.Errorf("new pod in lifecycle state %q, want Normal", s)
	}

	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))
	stateIs := func(want pub.LifecycleStateType, extra func(*corev1.Pod) error) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if s := pub.LifecycleStateType(p.Labels[pub.LifecycleStateKey]); s != want {
				return false, fmt.Errorf("state %q", s)
			}
			if extra != nil {
				if err := extra(p); err != nil {
					return false, err
				}
			}
			return true, nil
		}
	}
	held := func(p *corev1.Pod) error {
		if framework.SpecImage(p, "main") != framework.AppImageV1 || framework.ConditionStatus(p, pub.KruisePodReadyConditionType) != corev1.ConditionFalse || framework.PodReady(p) {
			return fmt.Errorf("image %s, KruisePodReady %s, ready %v; want %s, False, false",
				framework.SpecImage(p, "main"), framework.ConditionStatus(p, pub.KruisePodReadyConditionType), framework.PodReady(p), framework.AppImageV1)
		}
		return nil
	}
	framework.Poll(t, ctx, 30*time.Second, "pod "+name+" PreparingUpdate, not ready, not updated", stateIs(pub.LifecycleStatePreparingUpdate, held))
	// It waits there while the hook label stays.
	framework.Consistently(t, ctx, 3*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		if ok, err := stateIs(pub.LifecycleStatePreparingUpdate, held)(ctx); !ok {
			return fmt.Errorf("while the hook holds: %v", err)
		}
		return nil
	})

	framework.MustKubectl(t, ctx, "", "-n", ns, "label", "pod", name, hold+"-")
	updated := func(p *corev1.Pod) error {
		s := framework.FindStatus(p, "main")
		if p.UID != before[name].UID || s == nil || s.Image != framework.AppImageV2 || s.RestartCount != 1 || !framework.PodReady(p) ||
			framework.ConditionStatus(p, pub.KruisePodReadyConditionType) != corev1.ConditionTrue {
			return fmt.Errorf("uid %s, status %+v, ready %v, KruisePodReady %s", p.UID, s, framework.PodReady(p), framework.ConditionStatus(p, pub.KruisePodReadyConditionType))
		}
		return nil
	}
	framework.Poll(t, ctx, framework.RolloutTimeout, "pod "+name+" updated in place and Updated", stateIs(pub.LifecycleStateUpdated, updated))

	framework.MustKubectl(t, ctx, "", "-n", ns, "label", "pod", name, hold+"=true")
	framework.Poll(t, ctx, 30*time.Second, "pod "+name+" Normal again", stateIs(pub.LifecycleStateNormal, updated))
	got, _ := framework.WaitRolledOut(t, ctx, cs, 1)
	framework.CheckKubectlCounts(t, ctx, got, "1", "1", "1", "1", "1")
}

// TestCloneSetControllerKilledMidRollout: inplace-controller SIGKILLed in the middle of an in-place
// rollout and started again finishes the rollout, creating and deleting no Pod.
func TestCloneSetControllerKilledMidRollout(t *testing.T) {
	ctx := framework.Context(t)
	framework.StartAgainAfter(t, "inplace-controller")
	ns := framework.NewNamespace(t, ctx, "clone-kill")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 4, v1alpha1.CloneSetUpdateStrategy{
		Type:           v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		MaxUnavailable: ptr.To(intstr.FromInt32(1)),
	})
	rec := framework.RecordPods(t, ctx, ns)
	controller := framework.CurrentProgram(t, "inplace-controller")

	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))
	framework.KillControllerMidway(t, ctx, controller, cs, "main", framework.AppImageV2, "rollout")
	got, after := framework.WaitRolledOut(t, ctx, cs, 4)
	framework.CheckSamePods(t, before, after)
	for name, p := range after {
		if s := framework.FindStatus(p, "main"); s == nil || s.RestartCount != 1 {
			t.Errorf("pod %s: container status %+v, want restartCount 1", name, s)
		}
	}
	if changed := framework.PodsAddedOrDeleted(rec, rec.UpTo(t, ctx, ns)); len(changed) > 0 {
		t.Errorf("pods created or deleted: %v", changed)
	}
	framework.CheckKubectlCounts(t, ctx, got, "4", "4", "4", "4", "4")
}

// TestCloneSetMaxSurge: a ReCreate rollout with maxSurge 1 and maxUnavailable 0 over 3 Pods
// creates each new Pod before an old one goes: at every watched moment at most 4 Pods exist and at
// least 3 are Ready once the rollout started; at the end 3 new Pods.
func TestCloneSetMaxSurge(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-surge")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 3, v1alpha1.CloneSetUpdateStrategy{
		Type:           v1alpha1.RecreateCloneSetUpdateStrategyType,
		MaxSurge:       ptr.To(intstr.FromInt32(1)),
		MaxUnavailable: ptr.To(intstr.FromInt32(0)),
	})
	rec := framework.RecordPods(t, ctx, ns)

	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))
	_, after := framework.WaitRolledOut(t, ctx, cs, 3)
	for name := range after {
		if before[name] != nil {
			t.Errorf("pod %s was kept: ReCreate replaces every Pod", name)
		}
	}
	events := rec.UpTo(t, ctx, ns)
	maxPods, minReady := 0, 3
	rec.Replay(events, func(_ framework.PodEvent, pods map[string]*corev1.Pod) {
		ready := 0
		for _, p := range pods {
			if framework.PodReady(p) {
				ready++
			}
		}
		maxPods, minReady = max(maxPods, len(pods)), min(minReady, ready)
	})
	t.Logf("%d events: at most %d Pods, at least %d Ready", len(events), maxPods, minReady)
	if maxPods != 4 {
		t.Errorf("at most %d Pods at once, want 4 (3 replicas + maxSurge 1)", maxPods)
	}
	if minReady < 3 {
		t.Errorf("only %d Pods Ready at some moment, want at least 3 (maxUnavailable 0)", minReady)
	}
	if changed := framework.PodsAddedOrDeleted(rec, events); len(changed) != 6 {
		t.Errorf("pods created and deleted: %v, want 3 of each", changed)
	}
}

// TestCloneSetScatterStrategy: partition 2 of 4 with priorityStrategy favouring the two Pods
// labelled prio=high, which are also the two of zone=a; scatterStrategy zone=a spreads zone a over
// the update order, so the two Pods updated are one of zone a and one of zone b (priority alone
// would pick both zone a Pods).
func TestCloneSetScatterStrategy(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-scatter")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 4, v1alpha1.CloneSetUpdateStrategy{
		Type:           v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType,
		Partition:      ptr.To(intstr.FromInt32(2)),
		MaxUnavailable: ptr.To(intstr.FromInt32(2)),
		PriorityStrategy: &pub.UpdatePriorityStrategy{WeightPriority: []pub.UpdatePriorityWeightTerm{{
			Weight: 100, MatchSelector: metav1.LabelSelector{MatchLabels: map[string]string{"prio": "high"}},
		}}},
		ScatterStrategy: pub.UpdateScatterStrategy{{Key: "zone", Value: "a"}},
	})
	names := slices.Sorted(maps.Keys(before))
	zoneA := map[string]bool{names[0]: true, names[1]: true}
	for _, name := range names {
		labels := "zone=b"
		if zoneA[name] {
			labels = "zone=a prio=high"
		}
		framework.MustKubectl(t, ctx, "", append([]string{"-n", ns, "label", "pod", name}, strings.Fields(labels)...)...)
	}

	cs = framework.UpdateCloneSet(t, ctx, cs, framework.SetImage(framework.AppImageV2))
	var updated []string
	framework.Poll(t, ctx, framework.RolloutTimeout, "2 of 4 Pods updated", func(ctx context.Context) (bool, error) {
		got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pods, err := framework.CloneSetPods(ctx, got)
		if err != nil {
			return false, err
		}
		updated = nil
		for name, p := range pods {
			if framework.PodSettledAt(t, p, got.Status.UpdateRevision) {
				updated = append(updated, name)
			}
		}
		slices.Sort(updated)
		return len(updated) == 2 && got.Status.UpdatedReadyReplicas == 2, fmt.Errorf("updated %v, status %+v", updated, got.Status)
	})
	inA := 0
	for _, name := range updated {
		if zoneA[name] {
			inA++
		}
	}
	if inA != 1 {
		t.Errorf("updated %v (zone a: %v): want one Pod of zone a and one of zone b", updated, slices.Sorted(maps.Keys(zoneA)))
	}
}
