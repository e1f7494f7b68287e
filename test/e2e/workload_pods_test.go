package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// How the Advanced StatefulSet and DaemonSet treat Pods beyond their own creations, held to
// OpenKruise's e2e scenarios: orphans adopted and strays released (through the controllerRef),
// scaleStrategy.maxUnavailable pacing a Parallel scale-up, the specified-delete label, and the
// lifecycle hooks holding a Pod before its deletion.

// patchPod applies a JSON merge patch to the Pod.
func patchPod(t *testing.T, ctx context.Context, ns, name string, patch map[string]any) {
	t.Helper()
	data, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := framework.Kube.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching pod %s with %s: %v", name, data, err)
	}
}

// controllerUID is the UID of the Pod's controller ("" for an orphan).
func controllerUID(p *corev1.Pod) types.UID {
	if ref := metav1.GetControllerOf(p); ref != nil {
		return ref.UID
	}
	return ""
}

// waitReleased waits until the Pod has no controller and is not being deleted: its workload
// released it.
func waitReleased(t *testing.T, ctx context.Context, ns, name string) {
	t.Helper()
	framework.Poll(t, ctx, time.Minute, "pod "+name+" released", func(ctx context.Context) (bool, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return controllerUID(p) == "" && p.DeletionTimestamp == nil, fmt.Errorf("controller %q", controllerUID(p))
	})
}

// TestAdvancedStatefulSetAdoptsOrphans: a set deleted with --cascade=orphan leaves its Pods; the
// same set created again adopts them (same UIDs, its controllerRef), creating and deleting
// nothing, because they already run its revision.
func TestAdvancedStatefulSetAdoptsOrphans(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-adopt")
	spec := framework.NewAdvancedStatefulSet(ns, 2, appsv1.ParallelPodManagement)
	set := framework.CreateAdvancedStatefulSet(t, ctx, spec.DeepCopy())
	before := framework.WaitStatefulSet(t, ctx, set, 2, 2)
	framework.MustKubectl(t, ctx, "", "-n", ns, "delete", "statefulsets.apps.kruise.io/db", "--cascade=orphan")
	framework.Poll(t, ctx, time.Minute, "the Pods orphaned", func(ctx context.Context) (bool, error) {
		pods, err := framework.StatefulSetPods(ctx, set)
		if err != nil {
			return false, err
		}
		for name, p := range pods {
			if controllerUID(p) != "" {
				return false, fmt.Errorf("%s still owned", name)
			}
		}
		return len(pods) == 2, fmt.Errorf("%d pods", len(pods))
	})

	rec := framework.RecordPods(t, ctx, ns)
	again := framework.CreateAdvancedStatefulSet(t, ctx, spec.DeepCopy())
	after := framework.WaitStatefulSet(t, ctx, again, 2, 2)
	events := rec.UpTo(t, ctx, ns)
	framework.CheckSamePods(t, before, after)
	for name, p := range after {
		if controllerUID(p) != again.UID {
			t.Errorf("pod %s controlled by %q, want the new set %s", name, controllerUID(p), again.UID)
		}
	}
	if changed := framework.PodsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("pods created or deleted while adopting: %v", changed)
	}
}

// TestAdvancedStatefulSetAdoptsOrphanBlockingItsOrdinal: an orphan Pod named db-1 with the set's
// labels is adopted rather than blocking ordinal 1; it does not run the set's revision (no claim
// mounted), so the set replaces it with its own db-1.
func TestAdvancedStatefulSetAdoptsOrphanBlockingItsOrdinal(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-orphan")
	orphan := framework.CRRPod(ns, "db-1", false, framework.StubbornContainer("main"))
	orphan.Labels = map[string]string{"app": "db"}
	orphan = framework.CreateCRRPod(t, ctx, orphan)
	rec := framework.RecordPods(t, ctx, ns)
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 2, appsv1.ParallelPodManagement))
	pods := framework.WaitStatefulSet(t, ctx, set, 2, 2)
	events := rec.UpTo(t, ctx, ns)
	adopted := false
	for _, e := range events {
		if e.Pod.UID == orphan.UID && controllerUID(e.Pod) == set.UID {
			adopted = true
		}
	}
	if !adopted {
		t.Errorf("the orphan db-1 (%s) was never adopted by the set", orphan.UID)
	}
	if p := pods["db-1"]; controllerUID(p) != set.UID || len(p.Spec.Volumes) == 0 {
		t.Errorf("db-1 at the end: controller %q, volumes %v; want the set's own Pod with its claim", controllerUID(p), p.Spec.Volumes)
	}
}

// TestAdvancedDaemonSetReleasesRelabelledPod: an agent relabelled out of the selector is released
// (no controllerRef, still running) and its node gets a new agent.
func TestAdvancedDaemonSetReleasesRelabelledPod(t *testing.T) {
	ctx, ns := framework.Start(t, "ads-release")
	n := framework.ReadyNodes(t, ctx)
	ds := framework.NewAdvancedDaemonSet(t, ctx, ns)
	before := framework.WaitDaemonSet(t, ctx, ns, n, n)
	stray := before[0]
	patchPod(t, ctx, ns, stray.Name, map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "stray"}}})
	waitReleased(t, ctx, ns, stray.Name)
	after := framework.WaitDaemonSet(t, ctx, ns, n, n)
	framework.ExpectOnePodPerNode(t, ctx, after)
	for _, p := range after {
		if p.UID == stray.UID {
			t.Errorf("the released pod %s still counts as an agent", p.Name)
		}
		if controllerUID(&p) != ds.UID {
			t.Errorf("agent %s controlled by %q", p.Name, controllerUID(&p))
		}
	}
}

// TestAdvancedStatefulSetScaleMaxUnavailable: Parallel with scaleStrategy.maxUnavailable 2 scales
// 2 -> 6 two Pods at a time: never more than two of the set's Pods unavailable at once.
func TestAdvancedStatefulSetScaleMaxUnavailable(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-scale-mu")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 2, appsv1.ParallelPodManagement, func(s *v1beta1.StatefulSet) {
		s.Spec.ScaleStrategy = &v1beta1.StatefulSetScaleStrategy{MaxUnavailable: ptr.To(intstr.FromInt32(2))}
		s.Spec.Template.Spec.Containers[0].ReadinessProbe = framework.ReadinessAfter(2)
	}))
	framework.WaitStatefulSet(t, ctx, set, 2, 2)
	rec := framework.RecordPods(t, ctx, ns)
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](6) })
	framework.WaitStatefulSet(t, ctx, set, 6, 6)
	events := rec.UpTo(t, ctx, ns)
	most := 0
	rec.Replay(events, func(_ framework.PodEvent, pods map[string]*corev1.Pod) {
		unready := 0
		for _, p := range pods {
			if !framework.PodReady(p) {
				unready++
			}
		}
		most = max(most, unready)
	})
	if most != 2 {
		t.Errorf("at most %d Pods unready at once while scaling up, want exactly 2 (scaleStrategy.maxUnavailable)", most)
	}
}

// TestAdvancedStatefulSetSpecifiedDelete: a Pod labelled apps.kruise.io/specified-delete is
// deleted and created again under its name (with its claim), whatever the partition; the others
// stay.
func TestAdvancedStatefulSetSpecifiedDelete(t *testing.T) {
	ctx, ns := framework.Start(t, "asts-specified")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 3, appsv1.ParallelPodManagement, func(s *v1beta1.StatefulSet) {
		s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](3)
	}))
	before := framework.WaitStatefulSet(t, ctx, set, 3, 3)
	claims := framework.ClaimUIDs(t, ctx, ns)
	patchPod(t, ctx, ns, "db-1", map[string]any{"metadata": map[string]any{"labels": map[string]any{v1alpha1.SpecifiedDeleteKey: "true"}}})
	var after map[string]*corev1.Pod
	framework.Poll(t, ctx, 2*time.Minute, "db-1 created again", func(ctx context.Context) (bool, error) {
		after = framework.WaitStatefulSet(t, ctx, set, 3, 3)
		return after["db-1"].UID != before["db-1"].UID, fmt.Errorf("db-1 is still %s", before["db-1"].UID)
	})
	if _, ok := after["db-1"].Labels[v1alpha1.SpecifiedDeleteKey]; ok {
		t.Errorf("the new db-1 carries %s", v1alpha1.SpecifiedDeleteKey)
	}
	for _, name := range []string{"db-0", "db-2"} {
		if after[name].UID != before[name].UID {
			t.Errorf("pod %s was recreated too", name)
		}
	}
	if got := framework.ClaimUIDs(t, ctx, ns); fmt.Sprint(got) != fmt.Sprint(claims) {
		t.Errorf("claims %v, were %v: the Pod created again keeps its claim", got, claims)
	}
}

// TestAdvancedStatefulSetPreDeleteHook: with lifecycle.preDelete finalizersHandler, a scale-down
// moves the Pod that holds the finalizer to PreparingDelete (KruisePodReady False with
// markPodNotReady) and leaves it running until the hook's owner removes the finalizer; then it
// is deleted.
func TestAdvancedStatefulSetPreDeleteHook(t *testing.T) {
	const hold = "inplace-e2e/hold"
	ctx, ns := framework.Start(t, "asts-predelete")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 2, appsv1.ParallelPodManagement, func(s *v1beta1.StatefulSet) {
		s.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{hold}, MarkPodNotReady: true}}
	}))
	framework.WaitStatefulSet(t, ctx, set, 2, 2)
	// The hook's owner (here the test) puts its finalizer on the Pods it wants to hear about.
	patchPod(t, ctx, ns, "db-1", map[string]any{"metadata": map[string]any{"finalizers": []string{hold}}})
	t.Cleanup(func() {
		_, _ = framework.Kube.CoreV1().Pods(ns).Patch(context.Background(), "db-1", types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
	})
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
	framework.Poll(t, ctx, time.Minute, "db-1 PreparingDelete with KruisePodReady False", func(ctx context.Context) (bool, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "db-1", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		state := p.Labels[pub.LifecycleStateKey]
		return state == string(pub.LifecycleStatePreparingDelete) && framework.ConditionStatus(p, pub.KruisePodReadyConditionType) == corev1.ConditionFalse,
			fmt.Errorf("state %q, KruisePodReady %s", state, framework.ConditionStatus(p, pub.KruisePodReadyConditionType))
	})
	framework.Consistently(t, ctx, 2*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "db-1", metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			return fmt.Errorf("db-1 deleted while the preDelete hook holds it: %v", err)
		}
		return nil
	})
	rec := framework.RecordPods(t, ctx, ns)
	patchPod(t, ctx, ns, "db-1", map[string]any{"metadata": map[string]any{"finalizers": nil}})
	framework.WaitStatefulSet(t, ctx, set, 1, 1)
	events := rec.UpTo(t, ctx, ns)
	if !slices.ContainsFunc(events, func(e framework.PodEvent) bool { return e.Pod.Name == "db-1" && e.Typ == watch.Deleted }) {
		t.Errorf("db-1 not deleted once the hook released it")
	}
}

// TestAdvancedDaemonSetPreDeleteHook: with lifecycle.preDelete labelsHandler, an agent whose node
// leaves the template's node selector waits in PreparingDelete while it carries the hook's label,
// and is deleted once the label is removed.
func TestAdvancedDaemonSetPreDeleteHook(t *testing.T) {
	const hold = "inplace-e2e/hold"
	ctx, ns := framework.Start(t, "ads-predelete")
	_, pods := framework.ReadyDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{hold: "true"}}}
	})
	victim := pods[0]
	patchPod(t, ctx, ns, victim.Name, map[string]any{"metadata": map[string]any{"labels": map[string]any{hold: "true"}}})
	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{victim.Spec.NodeName}}},
			}}},
		}}
	})
	framework.Poll(t, ctx, time.Minute, victim.Name+" PreparingDelete", func(ctx context.Context) (bool, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if p.DeletionTimestamp != nil {
			t.Fatalf("%s deleted while the preDelete hook holds it", victim.Name)
		}
		return p.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStatePreparingDelete), fmt.Errorf("state %q", p.Labels[pub.LifecycleStateKey])
	})
	patchPod(t, ctx, ns, victim.Name, map[string]any{"metadata": map[string]any{"labels": map[string]any{hold: nil}}})
	framework.Poll(t, ctx, time.Minute, victim.Name+" deleted once released", func(ctx context.Context) (bool, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return p.DeletionTimestamp != nil, fmt.Errorf("state %q", p.Labels[pub.LifecycleStateKey])
	})
}

// TestAdvancedStatefulSetInPlaceUpdateHook: with an inPlaceUpdate hook (labelsHandler) a Pod waits
// in PreparingUpdate, not updated, while it carries the hook's label; once the label is removed
// it is updated in place (same UID) and Updated, and Normal again when the label is back.
func TestAdvancedStatefulSetInPlaceUpdateHook(t *testing.T) {
	const hold = "inplace-e2e/hold"
	ctx, ns := framework.Start(t, "asts-hook")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 1, appsv1.OrderedReadyPodManagement, func(s *v1beta1.StatefulSet) {
		s.Spec.Template.Labels[hold] = "true"
		s.Spec.Lifecycle = &pub.Lifecycle{InPlaceUpdate: &pub.LifecycleHook{LabelsHandler: map[string]string{hold: "true"}}}
	}))
	before := framework.WaitStatefulSet(t, ctx, set, 1, 1)["db-0"]
	if s := before.Labels[pub.LifecycleStateKey]; s != string(pub.LifecycleStateNormal) {
		t.Errorf("new pod in lifecycle state %q, want Normal", s)
	}
	set = framework.UpdateAdvancedStatefulSet(t, ctx, set, func(s *v1beta1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })
	state := func(ctx context.Context) (*corev1.Pod, pub.LifecycleStateType, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
		if err != nil {
			return nil, "", err
		}
		return p, pub.LifecycleStateType(p.Labels[pub.LifecycleStateKey]), nil
	}
	framework.Poll(t, ctx, time.Minute, "db-0 PreparingUpdate", func(ctx context.Context) (bool, error) {
		_, s, err := state(ctx)
		return s == pub.LifecycleStatePreparingUpdate, fmt.Errorf("state %q (%v)", s, err)
	})
	framework.Consistently(t, ctx, 2*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		p, s, err := state(ctx)
		if err != nil || s != pub.LifecycleStatePreparingUpdate || framework.SpecImage(p, "main") != framework.AppImageV1 {
			return fmt.Errorf("while the hook holds: state %q, err %v", s, err)
		}
		return nil
	})
	patchPod(t, ctx, ns, "db-0", map[string]any{"metadata": map[string]any{"labels": map[string]any{hold: nil}}})
	framework.Poll(t, ctx, time.Minute, "db-0 updated in place, Updated", func(ctx context.Context) (bool, error) {
		p, s, err := state(ctx)
		if err != nil {
			return false, err
		}
		c := framework.FindStatus(p, "main")
		return s == pub.LifecycleStateUpdated && p.UID == before.UID && c != nil && c.Image == framework.AppImageV2,
			fmt.Errorf("state %q, uid %s, container %+v", s, p.UID, c)
	})
	patchPod(t, ctx, ns, "db-0", map[string]any{"metadata": map[string]any{"labels": map[string]any{hold: "true"}}})
	framework.WaitStatefulSet(t, ctx, set, 1, 1)
	framework.Poll(t, ctx, time.Minute, "db-0 Normal again", func(ctx context.Context) (bool, error) {
		_, s, err := state(ctx)
		return s == pub.LifecycleStateNormal, fmt.Errorf("state %q (%v)", s, err)
	})
}

// TestAdvancedStatefulSetPreNormalHook: with a preNormal hook (labelsHandler) a new Pod stays
// PreparingNormal, and with OrderedReady holds the next ordinal, until the hook's label is on it.
func TestAdvancedStatefulSetPreNormalHook(t *testing.T) {
	const done = "inplace-e2e/registered"
	ctx, ns := framework.Start(t, "asts-prenormal")
	set := framework.CreateAdvancedStatefulSet(t, ctx, framework.NewAdvancedStatefulSet(ns, 2, appsv1.OrderedReadyPodManagement, func(s *v1beta1.StatefulSet) {
		s.Spec.Lifecycle = &pub.Lifecycle{PreNormal: &pub.LifecycleHook{LabelsHandler: map[string]string{done: "true"}}}
	}))
	framework.Poll(t, ctx, time.Minute, "db-0 running, PreparingNormal", func(ctx context.Context) (bool, error) {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		s := p.Labels[pub.LifecycleStateKey]
		return framework.PodReady(p) && s == string(pub.LifecycleStatePreparingNormal), fmt.Errorf("ready %v, state %q", framework.PodReady(p), s)
	})
	framework.Consistently(t, ctx, 2*time.Second, 200*time.Millisecond, func(ctx context.Context) error {
		if pods, err := framework.StatefulSetPods(ctx, set); err != nil || len(pods) != 1 {
			return fmt.Errorf("pods %v (%v) while db-0 is PreparingNormal: OrderedReady holds db-1", slices.Sorted(maps.Keys(pods)), err)
		}
		return nil
	})
	patchPod(t, ctx, ns, "db-0", map[string]any{"metadata": map[string]any{"labels": map[string]any{done: "true"}}})
	framework.Poll(t, ctx, time.Minute, "db-1 created once db-0 is Normal", func(ctx context.Context) (bool, error) {
		pods, err := framework.StatefulSetPods(ctx, set)
		if err != nil {
			return false, err
		}
		p0, p1 := pods["db-0"], pods["db-1"]
		return p0 != nil && p1 != nil && p0.Labels[pub.LifecycleStateKey] == string(pub.LifecycleStateNormal), fmt.Errorf("pods %v", slices.Sorted(maps.Keys(pods)))
	})
}
