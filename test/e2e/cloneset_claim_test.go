package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/test/e2e/framework"
)

// How a CloneSet treats Pods and revisions beyond its own creations, through the controllerRef as
// OpenKruise's CloneSet and kube's ReplicaSet do: orphans its selector matches are adopted, its
// own Pods relabelled out of its selector are released and replaced.

// selectedPods are the live Pods labelled app=name, whoever controls them, by name.
func selectedPods(ctx context.Context, ns, name string) (map[string]*corev1.Pod, error) {
	list, err := framework.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, err
	}
	pods := map[string]*corev1.Pod{}
	for i := range list.Items {
		if p := &list.Items[i]; p.DeletionTimestamp == nil {
			pods[p.Name] = p
		}
	}
	return pods, nil
}

// TestCloneSetAdoptsOrphans: a CloneSet deleted with --cascade=orphan leaves its Pods and its
// revision; the same CloneSet created again adopts both (same Pod UIDs, its controllerRef),
// creating, deleting and updating nothing, because the Pods already run its template: its update
// revision is the orphaned one, not a new one after a name collision.
func TestCloneSetAdoptsOrphans(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-adopt")
	strategy := v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType}
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 2, strategy)
	cs, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, cs.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	revision := cs.Status.UpdateRevision
	framework.MustKubectl(t, ctx, "", "-n", ns, "delete", "clonesets.apps.kruise.io/web", "--cascade=orphan")
	framework.Poll(t, ctx, time.Minute, "the Pods and the revision orphaned", func(ctx context.Context) (bool, error) {
		pods, err := selectedPods(ctx, ns, "web")
		if err != nil {
			return false, err
		}
		for name, p := range pods {
			if controllerUID(p) != "" {
				return false, fmt.Errorf("pod %s still owned", name)
			}
		}
		if len(pods) != 2 {
			return false, fmt.Errorf("%d pods", len(pods))
		}
		r, err := framework.Kube.AppsV1().ControllerRevisions(ns).Get(ctx, revision, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return metav1.GetControllerOf(r) == nil, fmt.Errorf("revision %s still owned", revision)
	})

	rec := framework.RecordPods(t, ctx, ns)
	again := framework.NewUpdateCloneSet(t, ctx, ns, 2, strategy)
	after := framework.WaitCloneSetReady(t, ctx, again, 2)
	events := rec.UpTo(t, ctx, ns)
	framework.CheckSamePods(t, before, after)
	for name, p := range after {
		if controllerUID(p) != again.UID {
			t.Errorf("pod %s controlled by %q, want the new CloneSet %s", name, controllerUID(p), again.UID)
		}
		if got := p.Labels[appsv1.ControllerRevisionHashLabelKey]; got != revision {
			t.Errorf("pod %s at revision %s, want %s as before", name, got, revision)
		}
		b := before[name]
		if b == nil {
			continue // framework.CheckSamePods said so
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.RestartCount != b.Status.ContainerStatuses[0].RestartCount {
				t.Errorf("pod %s container %s restarted while being adopted (restartCount %d)", name, c.Name, c.RestartCount)
			}
		}
	}
	if changed := framework.PodsAddedOrDeleted(rec, events); len(changed) > 0 {
		t.Errorf("pods created or deleted while adopting: %v", changed)
	}
	got, err := framework.Inplace.AppsV1alpha1().CloneSets(ns).Get(ctx, again.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.UpdateRevision != revision || got.Status.CurrentRevision != revision || got.Status.UpdatedReplicas != 2 {
		t.Errorf("status update %s current %s updated %d, want the orphaned revision %s for both and 2 updated",
			got.Status.UpdateRevision, got.Status.CurrentRevision, got.Status.UpdatedReplicas, revision)
	}
	r, err := framework.Kube.AppsV1().ControllerRevisions(ns).Get(ctx, revision, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !metav1.IsControlledBy(r, again) {
		t.Errorf("revision %s controlled by %v, want the new CloneSet (adopted)", revision, r.OwnerReferences)
	}
}

// TestCloneSetReleasesRelabelledPod: a Pod relabelled out of the CloneSet's selector is released
// (no controllerRef, not deleted: it keeps running for whoever relabelled it, e.g. to debug it)
// and the CloneSet creates another in its place.
func TestCloneSetReleasesRelabelledPod(t *testing.T) {
	ctx, ns := framework.Start(t, "clone-release")
	cs, before := framework.ReadyCloneSet(t, ctx, ns, 2, v1alpha1.CloneSetUpdateStrategy{Type: v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType})
	var stray *corev1.Pod
	for _, p := range before {
		stray = p
		break
	}
	patchPod(t, ctx, ns, stray.Name, map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "stray"}}})
	waitReleased(t, ctx, ns, stray.Name)
	after := framework.WaitCloneSetReady(t, ctx, cs, 2)
	if _, ok := after[stray.Name]; ok {
		t.Errorf("the released pod %s still counts as the CloneSet's", stray.Name)
	}
	for name, p := range before {
		if name != stray.Name && (after[name] == nil || after[name].UID != p.UID) {
			t.Errorf("pod %s was replaced; only %s left the CloneSet", name, stray.Name)
		}
	}
	// The stray keeps running, unowned, for a while after: released is not deleted.
	p, err := framework.Kube.CoreV1().Pods(ns).Get(ctx, stray.Name, metav1.GetOptions{})
	if err != nil || p.UID != stray.UID || p.DeletionTimestamp != nil || controllerUID(p) != "" {
		t.Errorf("released pod %s: %v, want it still there, unowned and not terminating", stray.Name, err)
	}
}
