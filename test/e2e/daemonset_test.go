package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// The Advanced DaemonSet on the real cluster's nodes, held to OpenKruise's e2e scenarios
// (test/e2e/apps/daemonset.go): a Pod per eligible node, placement following node labels, image
// changes in place or with a surge Pod, partition. The agent tolerates the second node's taint,
// as node agents tolerate everything, so with INPLACE_NODES=2 (the host pass of make test) each
// of these runs on two nodes.

// TestAdvancedDaemonSetInPlace: one Pod per node; partition (the number of nodes) holds the image
// change back, one less lets exactly one node's Pod update, then no partition lets it reach every
// Pod in place (same UID, the container restarted once, by the kubelet of its own node), each
// with the InPlaceUpdateReady readiness gate. An env change cannot be made in place: every Pod is
// recreated on its node (OpenKruise's "Should upgrade inplace if update image and recreate if
// update others").
func TestAdvancedDaemonSetInPlace(t *testing.T) {
	ctx, ns := framework.Start(t, "ads-inplace")
	n := framework.ReadyNodes(t, ctx)
	framework.NewAdvancedDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(n))
	})
	before := framework.WaitDaemonSet(t, ctx, ns, n, n)
	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })
	held := framework.WaitDaemonSet(t, ctx, ns, n, 0)
	for _, p := range held {
		if framework.SpecImage(&p, "main") != framework.AppImageV1 {
			t.Errorf("with partition %d, pod %s runs %s", n, p.Name, framework.SpecImage(&p, "main"))
		}
	}
	if n > 1 {
		framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To(intstr.FromInt32(n - 1))
		})
		updated := 0
		for _, p := range framework.WaitDaemonSet(t, ctx, ns, n, 1) {
			if framework.SpecImage(&p, "main") == framework.AppImageV2 {
				updated++
			}
		}
		if updated != 1 {
			t.Errorf("with partition %d of %d nodes, %d Pods run %s, want 1", n-1, n, updated, framework.AppImageV2)
		}
	}
	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.Partition = nil })
	after := framework.WaitDaemonSet(t, ctx, ns, n, n)
	framework.ExpectOnePodPerNode(t, ctx, after)
	uids := map[types.UID]bool{}
	for _, p := range before {
		uids[p.UID] = true
	}
	for _, p := range after {
		if !uids[p.UID] {
			t.Errorf("pod %s was recreated: want an in-place update", p.Name)
		}
		if s := framework.FindStatus(&p, "main"); s == nil || s.RestartCount != 1 || s.Image != framework.AppImageV2 {
			t.Errorf("pod %s: container %+v, want %s restarted once", p.Name, s, framework.AppImageV2)
		}
	}
	framework.ExpectInPlaceUpdateReadyGate(t, after)

	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "FOO", Value: "bar"}}
	})
	// The status counts a node updated only once its Pod is at the new revision.
	recreated := framework.WaitDaemonSet(t, ctx, ns, n, n)
	framework.ExpectOnePodPerNode(t, ctx, recreated)
	framework.ExpectInPlaceUpdateReadyGate(t, recreated)
	for _, p := range recreated {
		if uids[p.UID] {
			t.Errorf("pod %s kept for an env change: want it recreated", p.Name)
		}
		if c := p.Spec.Containers[0]; len(c.Env) != 1 || c.Env[0].Value != "bar" || c.Image != framework.AppImageV2 {
			t.Errorf("pod %s: container %s with env %v, want %s with FOO=bar", p.Name, c.Image, c.Env, framework.AppImageV2)
		}
	}
}

// TestAdvancedDaemonSetFollowsNodeLabels (OpenKruise "should run and stop complex daemon"): with a
// node selector no node matches, no Pod; labelling the node brings one there, relabelling it takes
// it away, and a template node selector naming the new label (with the RollingUpdate strategy
// type set in the same change) brings one back.
func TestAdvancedDaemonSetFollowsNodeLabels(t *testing.T) {
	ctx, ns := framework.Start(t, "ads-labels")
	key := "inplace-e2e/" + ns
	framework.NewAdvancedDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) { ds.Spec.Template.Spec.NodeSelector = map[string]string{key: "yes"} })
	framework.WaitDaemonSet(t, ctx, ns, 0, 0)
	nodes, err := framework.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) == 0 {
		t.Fatalf("nodes: %v", err)
	}
	node := nodes.Items[0].Name
	label := func(value *string) {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{key: value}}})
		if _, err := framework.Kube.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("labelling node %s: %v", node, err)
		}
	}
	t.Cleanup(func() { label(nil) })
	label(ptr.To("yes"))
	pods := framework.WaitDaemonSet(t, ctx, ns, 1, 1)
	if pods[0].Spec.NodeName != node {
		t.Errorf("pod %s on node %q, want %s", pods[0].Name, pods[0].Spec.NodeName, node)
	}
	label(ptr.To("green"))
	framework.WaitDaemonSet(t, ctx, ns, 0, 0)
	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.NodeSelector = map[string]string{key: "green"}
		ds.Spec.UpdateStrategy.Type = v1alpha1.RollingUpdateDaemonSetStrategyType
	})
	if pods := framework.WaitDaemonSet(t, ctx, ns, 1, 1); pods[0].Spec.NodeName != node {
		t.Errorf("node selector %s=green: pod %s on node %q, want %s", key, pods[0].Name, pods[0].Spec.NodeName, node)
	}
	label(nil)
	framework.WaitDaemonSet(t, ctx, ns, 0, 0)
}

// TestAdvancedDaemonSetSurge: with maxSurge 1 and maxUnavailable 0 a new Pod starts beside the old
// one, which goes only once the new one is available: no node ever lacks a ready agent.
func TestAdvancedDaemonSetSurge(t *testing.T) {
	ctx, ns := framework.Start(t, "ads-surge")
	n, before := framework.ReadyDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.RollingUpdateDaemonSet{
			Type: v1alpha1.StandardRollingUpdateType, MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
		}
	})
	rec := framework.RecordPods(t, ctx, ns)
	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })
	after := framework.WaitDaemonSet(t, ctx, ns, n, n)
	events := rec.UpTo(t, ctx, ns)
	for _, p := range after {
		for _, b := range before {
			if p.UID == b.UID {
				t.Errorf("pod %s kept: the Standard surge update replaces the Pod", p.Name)
			}
		}
	}
	framework.ExpectOnePodPerNode(t, ctx, after)
	nodes := map[string]bool{}
	for _, p := range before {
		nodes[p.Spec.NodeName] = true
	}
	most := 0
	rec.Replay(events, func(ev framework.PodEvent, pods map[string]*corev1.Pod) {
		ready := map[string]int{}
		for _, p := range pods {
			if framework.PodReady(p) {
				ready[p.Spec.NodeName]++
			}
		}
		for node := range nodes {
			if ready[node] == 0 {
				t.Errorf("no agent ready on node %s after the %s of %s (maxUnavailable 0)", node, ev.Typ, ev.Pod.Name)
			}
		}
		most = max(most, len(pods))
	})
	// Nodes surge one at a time (maxSurge 1).
	if most != int(n)+1 {
		t.Errorf("at most %d Pods at once, want %d (one surge Pod)", most, n+1)
	}
}

// TestAdvancedDaemonSetRecreatesDeletedPod: a deleted agent Pod is replaced on its node, the other
// nodes' Pods untouched (OpenKruise's "should run and stop simple daemon").
func TestAdvancedDaemonSetRecreatesDeletedPod(t *testing.T) {
	ctx, ns := framework.Start(t, "ads-delete")
	n, before := framework.ReadyDaemonSet(t, ctx, ns)
	victim := before[0]
	if err := framework.Kube.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	framework.Poll(t, ctx, 2*time.Minute, "a new agent on node "+victim.Spec.NodeName, func(ctx context.Context) (bool, error) {
		pods, err := framework.DaemonPods(ctx, ns)
		if err != nil {
			return false, err
		}
		for _, p := range pods {
			if p.Spec.NodeName == victim.Spec.NodeName && p.UID != victim.UID {
				return true, nil
			}
		}
		return false, fmt.Errorf("pods %d", len(pods))
	})
	expectOnlyReplaced(t, ctx, before, framework.WaitDaemonSet(t, ctx, ns, n, n), victim, "deleted")
}

// TestAdvancedDaemonSetSurgeMinReadySeconds (OpenKruise "should successfully surging update
// daemonset with minReadySeconds"): with maxSurge 100%, maxUnavailable 0 and minReadySeconds, an
// image change starts a surge Pod beside the old one on every node at once, the old one not
// terminating meanwhile (no node ever without a ready agent, never more than two on a node);
// each old Pod is deleted once its node's new Pod has been Ready for minReadySeconds, not before
// and not much later (no event marks that moment: the controller must look again then). At the
// end each node runs one Pod, the new one. The harness runs it on two nodes; INPLACE_NODES=1 on one.
func TestAdvancedDaemonSetSurgeMinReadySeconds(t *testing.T) {
	const minReady = 5
	ctx, ns := framework.Start(t, "ads-surge-mrs")
	n, before := framework.ReadyDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.MinReadySeconds = minReady
		ds.Spec.UpdateStrategy.RollingUpdate = &v1alpha1.RollingUpdateDaemonSet{
			Type: v1alpha1.StandardRollingUpdateType, MaxSurge: ptr.To(intstr.FromString("100%")), MaxUnavailable: ptr.To(intstr.FromInt32(0)),
		}
	})
	framework.ExpectOnePodPerNode(t, ctx, before)
	oldOn := map[string]string{} // node -> its old Pod
	for _, p := range before {
		oldOn[p.Spec.NodeName] = p.Name
	}
	rec := framework.RecordPods(t, ctx, ns)
	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) { ds.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2 })
	// OpenKruise's scenario gives the old Pods a minute to go.
	framework.Poll(t, ctx, time.Minute, "the old Pods deleted", func(ctx context.Context) (bool, error) {
		pods, err := framework.DaemonPods(ctx, ns)
		if err != nil {
			return false, err
		}
		var left []string
		for _, p := range pods {
			if oldOn[p.Spec.NodeName] == p.Name {
				left = append(left, p.Name+" on "+p.Spec.NodeName)
			}
		}
		return len(left) == 0, fmt.Errorf("old Pods left: %v", left)
	})
	after := framework.WaitDaemonSet(t, ctx, ns, n, n)
	framework.ExpectOnePodPerNode(t, ctx, after)
	events := rec.UpTo(t, ctx, ns)

	// Every node had its surge Pod beside the old one, both live, all nodes at once (100%).
	surged, most := map[string]bool{}, 0
	rec.Replay(events, func(ev framework.PodEvent, pods map[string]*corev1.Pod) {
		on, ready := map[string]int{}, map[string]int{}
		for _, p := range pods {
			on[p.Spec.NodeName]++
			if framework.PodReady(p) {
				ready[p.Spec.NodeName]++
			}
		}
		for node := range oldOn {
			if ready[node] == 0 {
				t.Errorf("no agent ready on node %s after the %s of %s (maxUnavailable 0)", node, ev.Typ, ev.Pod.Name)
			}
			if on[node] > 2 {
				t.Errorf("%d agents on node %s after the %s of %s, want at most 2", on[node], node, ev.Typ, ev.Pod.Name)
			}
			if on[node] == 2 {
				surged[node] = true
			}
		}
		most = max(most, len(pods))
	})
	for node := range oldOn {
		if !surged[node] {
			t.Errorf("node %s never ran its surge Pod beside the old one", node)
		}
	}
	if most != 2*int(n) {
		t.Errorf("at most %d Pods at once, want %d (maxSurge 100%%: every node surges at once)", most, 2*n)
	}

	// Each old Pod went minReadySeconds after its node's new Pod turned Ready. Both times have
	// whole seconds; the deletion is asked at deletionTimestamp - grace period, and the controller
	// counts from the Ready time it reads, so the gap is never below minReadySeconds.
	deleted := map[string]time.Time{}
	for _, e := range events {
		if p := e.Pod; p.DeletionTimestamp != nil && deleted[p.Name].IsZero() {
			grace := time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second
			deleted[p.Name] = p.DeletionTimestamp.Add(-grace)
		}
	}
	for _, p := range after {
		node := p.Spec.NodeName
		if p.Name == oldOn[node] || framework.SpecImage(&p, "main") != framework.AppImageV2 {
			t.Errorf("node %s runs %s (%s), want a new Pod with %s", node, p.Name, framework.SpecImage(&p, "main"), framework.AppImageV2)
			continue
		}
		ready := framework.PodCondition(&p, corev1.PodReady)
		at, ok := deleted[oldOn[node]]
		if ready == nil || !ok {
			t.Errorf("node %s: new Pod %s Ready %+v, old Pod %s deletion seen %v", node, p.Name, ready, oldOn[node], ok)
			continue
		}
		gap := at.Sub(ready.LastTransitionTime.Time)
		t.Logf("node %s: old Pod %s deleted %v after the new Pod %s turned Ready", node, oldOn[node], gap, p.Name)
		if gap < minReady*time.Second || gap > (minReady+3)*time.Second {
			t.Errorf("node %s: old Pod %s deleted %v after the new Pod %s turned Ready, want minReadySeconds (%ds) and at most 3s more",
				node, oldOn[node], gap, p.Name, minReady)
		}
	}
}

// TestAdvancedDaemonSetReplacesFailedPod (OpenKruise "should retry creating failed daemon pods"): a
// daemon Pod whose phase turns Failed is deleted, completely, and its node gets a new one; the
// other nodes' Pods stay.
func TestAdvancedDaemonSetReplacesFailedPod(t *testing.T) {
	ctx, ns := framework.Start(t, "ads-failed")
	n, before := framework.ReadyDaemonSet(t, ctx, ns)
	victim := before[0]
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.Phase = corev1.PodFailed
		_, err = framework.Kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("failing pod %s: %v", victim.Name, err)
	}
	framework.Poll(t, ctx, 2*time.Minute, "the failed pod "+victim.Name+" deleted", func(ctx context.Context) (bool, error) {
		_, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, victim.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("still there (%v)", err)
	})
	expectOnlyReplaced(t, ctx, before, framework.WaitDaemonSet(t, ctx, ns, n, n), victim, "failed")
}

// expectOnlyReplaced checks that after a node's Pod (victim, the first of before) was deleted or
// failed, every node runs one Pod, the victim is gone and the other nodes kept theirs.
func expectOnlyReplaced(t *testing.T, ctx context.Context, before, after []corev1.Pod, victim corev1.Pod, what string) {
	t.Helper()
	framework.ExpectOnePodPerNode(t, ctx, after)
	kept := map[types.UID]bool{}
	for _, p := range after {
		kept[p.UID] = true
	}
	if kept[victim.UID] {
		t.Errorf("the %s pod %s is still counted", what, victim.Name)
	}
	for _, p := range before[1:] {
		if !kept[p.UID] {
			t.Errorf("pod %s on node %s replaced too; only %s %s", p.Name, p.Spec.NodeName, victim.Name, what)
		}
	}
}

// TestAdvancedDaemonSetRollingUpdatePreDeleteHook (OpenKruise "should upgrade one by one on steps if
// there is pre-delete hook"): with maxUnavailable 1 and a preDelete labelsHandler hook every Pod
// carries (from the template), a change that recreates the Pods moves exactly one of them to
// PreparingDelete and deletes none; released (the label removed) it is deleted, its node gets a
// Pod at the new revision, and on two nodes the other node's Pod is the one waiting next: one node
// at a time.
func TestAdvancedDaemonSetRollingUpdatePreDeleteHook(t *testing.T) {
	const hold = "inplace-e2e/hold"
	ctx, ns := framework.Start(t, "ads-roll-predelete")
	n, before := framework.ReadyDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{LabelsHandler: map[string]string{hold: "true"}}}
		ds.Spec.Template.Labels[hold] = "true"
		ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	})
	oldNames := map[string]bool{}
	for _, p := range before {
		oldNames[p.Name] = true
	}
	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "FOO", Value: "bar"}}
	})
	var hash string
	framework.Poll(t, ctx, 30*time.Second, "the status at the new generation", func(ctx context.Context) (bool, error) {
		ds, err := framework.Inplace.AppsV1alpha1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		hash = ds.Status.DaemonSetHash
		return ds.Status.ObservedGeneration == ds.Generation, fmt.Errorf("observed generation %d of %d", ds.Status.ObservedGeneration, ds.Generation)
	})
	state := func(p *corev1.Pod) pub.LifecycleStateType {
		return pub.LifecycleStateType(p.Labels[pub.LifecycleStateKey])
	}
	var held corev1.Pod
	framework.Poll(t, ctx, time.Minute, "one agent PreparingDelete", func(ctx context.Context) (bool, error) {
		list, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			return false, err
		}
		preparing := 0
		for _, p := range list.Items {
			if !oldNames[p.Name] || p.DeletionTimestamp != nil {
				t.Fatalf("pod %s created or deleted (deletion %v) while the preDelete hook holds the old ones", p.Name, p.DeletionTimestamp)
			}
			if state(&p) == pub.LifecycleStatePreparingDelete {
				preparing++
				held = p
			}
		}
		if preparing > 1 {
			t.Fatalf("%d agents PreparingDelete at once, want one (maxUnavailable 1)", preparing)
		}
		return preparing == 1 && len(list.Items) == len(before), fmt.Errorf("%d of %d pods PreparingDelete", preparing, len(list.Items))
	})
	patchPod(t, ctx, ns, held.Name, map[string]any{"metadata": map[string]any{"labels": map[string]any{hold: nil}}})
	framework.Poll(t, ctx, time.Minute, held.Name+" deleted once released", func(ctx context.Context) (bool, error) {
		_, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, held.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("still there (%v)", err)
	})
	framework.Poll(t, ctx, time.Minute, "a new agent on "+held.Spec.NodeName+" and, on two nodes, the next one held", func(ctx context.Context) (bool, error) {
		pods, err := framework.DaemonPods(ctx, ns)
		if err != nil {
			return false, err
		}
		var updated []string
		replaced, next := false, int32(0)
		for _, p := range pods {
			if p.Labels[appsv1.ControllerRevisionHashLabelKey] == hash {
				updated = append(updated, p.Name+" on "+p.Spec.NodeName)
				replaced = replaced || (p.Spec.NodeName == held.Spec.NodeName && framework.PodReady(&p))
			} else if state(&p) == pub.LifecycleStatePreparingDelete {
				next++
			}
		}
		if len(updated) > 1 {
			t.Fatalf("agents %v at the new revision while the hook holds the next one: want one node at a time", updated)
		}
		return replaced && next == min(n-1, 1), fmt.Errorf("at the new revision %v, %d waiting", updated, next)
	})
}

// TestAdvancedDaemonSetInPlaceResize (OpenKruise InplaceVPA "should upgrade resources and image
// one by one"): an image and a resource change together update every Pod of the Advanced
// DaemonSet in place: same Pod, main restarted once (for its image) on the new image, the new
// resources in spec and status.
func TestAdvancedDaemonSetInPlaceResize(t *testing.T) {
	ctx, ns := framework.Start(t, "ads-resize")
	n, before := framework.ReadyDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Resources = *resizeOld.DeepCopy()
	})
	uids := map[types.UID]bool{}
	for _, p := range before {
		uids[p.UID] = true
	}
	framework.UpdateDaemonSet(t, ctx, ns, func(ds *v1alpha1.DaemonSet) {
		ds.Spec.Template.Spec.Containers[0].Image = framework.AppImageV2
		ds.Spec.Template.Spec.Containers[0].Resources = *resizeNew.DeepCopy()
	})
	after := framework.WaitDaemonSet(t, ctx, ns, n, n)
	for _, p := range after {
		if !uids[p.UID] {
			t.Errorf("pod %s was recreated: want an in-place update", p.Name)
		}
		s := framework.FindStatus(&p, "main")
		if s == nil || s.RestartCount != 1 || s.Image != framework.AppImageV2 {
			t.Errorf("pod %s: container %+v, want %s restarted once", p.Name, s, framework.AppImageV2)
			continue
		}
		if spec := p.Spec.Containers[0].Resources; !sameResources(&spec, &resizeNew) || !sameResources(s.Resources, &spec) {
			t.Errorf("pod %s resources: spec %+v, status %+v; want both %+v", p.Name, spec, s.Resources, resizeNew)
		}
	}
}
