package daemonset

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

type fixture struct {
	controllertest.Fakes
	c *Controller
}

// newFixture builds the controller on fake clients; the objects go to both the clients and the
// informer caches (the informers are never started).
func newFixture(t *testing.T, ds *v1alpha1.DaemonSet, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{Fakes: controllertest.NewFakes(objs, ds)}
	setInf := f.InplaceInformers.Apps().V1alpha1().DaemonSets()
	core := f.KubeInformers.Core().V1()
	podInf, nodeInf, revInf := core.Pods(), core.Nodes(), f.KubeInformers.Apps().V1().ControllerRevisions()
	c, err := New(f.Kube, f.Inplace, setInf, podInf, nodeInf, revInf, f.Recorder)
	if err != nil {
		t.Fatal(err)
	}
	c.Clock = clocktesting.NewFakePassiveClock(now)
	f.c = c
	add := func(inf cache.SharedIndexInformer, obj any) { controllertest.Add(t, inf.GetIndexer(), obj) }
	add(setInf.Informer(), ds)
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Pod:
			add(podInf.Informer(), o)
		case *corev1.Node:
			add(nodeInf.Informer(), o)
		case *appsv1.ControllerRevision:
			add(revInf.Informer(), o)
		}
	}
	return f
}

func (f *fixture) sync(t *testing.T, ds *v1alpha1.DaemonSet) {
	t.Helper()
	controllertest.Sync(t, f.c.sync, cache.MetaObjectToName(ds))
}

// actions are the names acted on with verb in resource, with the patch if any.
func (f *fixture) actions(verb, resource string) map[string]string {
	return controllertest.Acted(f.Kube.Actions(), verb, resource)
}

func orphanPod(ds *v1alpha1.DaemonSet, nodeName string) *corev1.Pod {
	p := daemonPod(ds, nodeName, "r", true)
	p.OwnerReferences = nil
	return p
}

func TestClaimAdoptsOrphansAndReleases(t *testing.T) {
	ds := testDaemonSet()
	data, err := history.TemplateData(&ds.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	rev := history.Owner{Object: ds, Ref: controllerRef(ds), Labels: ds.Spec.Template.Labels}.NewRevision(data, 1, 0)
	rev.OwnerReferences = nil
	stray := daemonPod(ds, "b", "r", true)
	stray.Labels["app"] = "other"
	f := newFixture(t, ds, node("a", nil), node("b", nil), orphanPod(ds, "a"), stray, rev)
	f.sync(t, ds)
	pods := f.actions("patch", "pods")
	if len(pods) != 2 || !strings.Contains(pods["agent-a-r"], `"controller":true`) || !strings.Contains(pods["agent-b-r"], `"$patch":"delete"`) {
		t.Errorf("pod patches %v: want the orphan on a adopted and the stray on b released", pods)
	}
	if revs := f.actions("patch", "controllerrevisions"); !strings.Contains(revs[rev.Name], `"controller":true`) {
		t.Errorf("revision patches %v: want the orphan revision adopted", revs)
	}
	if created := f.actions("create", "controllerrevisions"); len(created) != 0 {
		t.Errorf("created revisions %v: the adopted one is the template's", created)
	}
	// Node a has its (adopted) Pod; node b lost its Pod to the release.
	if created := f.actions("create", "pods"); len(created) != 1 {
		t.Errorf("created pods %v, want one, on node b", created)
	}
}

func TestClaimByDaemonSetBeingDeleted(t *testing.T) {
	ds := testDaemonSet()
	ds.DeletionTimestamp = ptr.To(metav1.NewTime(now))
	f := newFixture(t, ds, node("a", nil), orphanPod(ds, "a"))
	f.sync(t, ds)
	if p := f.actions("patch", "pods"); len(p) != 0 {
		t.Errorf("patches %v, want none from a DaemonSet being deleted", p)
	}
}

func TestDeleteHeldByPreDelete(t *testing.T) {
	ds := testDaemonSet(func(d *v1alpha1.DaemonSet) {
		d.Spec.Template.Spec.NodeSelector = map[string]string{"role": "edge"}
		d.Spec.Lifecycle = &pub.Lifecycle{PreDelete: &pub.LifecycleHook{FinalizersHandler: []string{"example.io/drain"}}}
	})
	misplaced := daemonPod(ds, "a", "r", true)
	misplaced.Finalizers = []string{"example.io/drain"}
	f := newFixture(t, ds, node("a", map[string]string{"role": "core"}), misplaced)
	f.sync(t, ds)
	if d := f.actions("delete", "pods"); len(d) != 0 {
		t.Errorf("deleted %v, want the Pod held by the preDelete hook", d)
	}
	if p := f.actions("patch", "pods"); !strings.Contains(p[misplaced.Name], `"lifecycle.apps.kruise.io/state":"PreparingDelete"`) {
		t.Errorf("patches %v, want the Pod moved to PreparingDelete", p)
	}
}

// A surge Pod that is ready but not yet available for minReadySeconds keeps the old Pod beside
// it; nothing about either Pod changes when it becomes available, so the sync asks to be run again
// then (as kube's and OpenKruise's DaemonSets do), and that run deletes the old Pod.
func TestSyncRequeuesUntilTheSurgePodIsAvailable(t *testing.T) {
	ds := testDaemonSet(func(d *v1alpha1.DaemonSet) {
		d.Spec.MinReadySeconds = 5
		d.Spec.UpdateStrategy.RollingUpdate.MaxSurge = ptr.To(intstr.FromString("100%"))
		d.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(0))
	})
	data, err := history.TemplateData(&ds.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	rev := history.Owner{Object: ds, Ref: controllerRef(ds), Labels: ds.Spec.Template.Labels}.NewRevision(data, 1, 0)
	old := daemonPod(ds, "a", "old", true)
	old.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	surge := daemonPod(ds, "a", rev.Name, true)
	surge.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Second))
	surge.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-2 * time.Second))
	f := newFixture(t, ds, node("a", nil), old, surge, rev)
	requeue, err := f.c.sync(context.Background(), cache.MetaObjectToName(ds))
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if d := f.actions("delete", "pods"); len(d) != 0 {
		t.Errorf("deleted %v while the surge Pod has been ready 2s of minReadySeconds 5", d)
	}
	if requeue != 3*time.Second {
		t.Errorf("requeue after %v, want 3s: when the surge Pod becomes available", requeue)
	}
	f.c.Clock = clocktesting.NewFakePassiveClock(now.Add(requeue))
	if _, err := f.c.sync(context.Background(), cache.MetaObjectToName(ds)); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if d := f.actions("delete", "pods"); len(d) != 1 || d[old.Name] != "" {
		t.Errorf("deleted %v at the requeue, want the old Pod %s", d, old.Name)
	}
}

// TestCollisionCountKeptWhenCreatingTheRevisionFails: the name of the template's revision is
// taken by another object's revision, so creating it bumps the collision count; creating it under
// the next name then fails. The status still carries the bumped count (as the CloneSet's and the
// Advanced StatefulSet's do), so that the next try does not reuse the taken name.
func TestCollisionCountKeptWhenCreatingTheRevisionFails(t *testing.T) {
	ds := testDaemonSet()
	data, err := history.TemplateData(&ds.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	taken := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns",
		Name: history.RevisionName(ds.Name, history.HashRevision(data, ptr.To[int32](0)))},
		Data: runtime.RawExtension{Raw: []byte(`{"other":true}`)}}
	f := newFixture(t, ds, node("a", nil), taken)
	creates := 0
	f.Kube.PrependReactor("create", "controllerrevisions", func(k8stesting.Action) (bool, runtime.Object, error) {
		creates++
		if creates > 1 { // the try under the bumped name
			return true, nil, errors.New("injected")
		}
		return false, nil, nil
	})
	if _, err := f.c.sync(context.Background(), cache.MetaObjectToName(ds)); err == nil {
		t.Fatal("sync succeeded, want the injected error")
	}
	var st *v1alpha1.DaemonSetStatus
	for _, a := range f.Inplace.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" {
			st = &u.GetObject().(*v1alpha1.DaemonSet).Status
		}
	}
	if st == nil || st.CollisionCount == nil || *st.CollisionCount != 1 {
		t.Fatalf("status written %+v, want collisionCount 1", st)
	}
	if created := f.actions("create", "pods"); len(created) != 0 {
		t.Errorf("created pods %v, want none without a revision", created)
	}
}
