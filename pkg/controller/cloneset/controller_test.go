package cloneset

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/internal/controllertest"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type fixture struct {
	controllertest.Fakes
	c *Controller
}

func newCloneSet(replicas int32) *v1alpha1.CloneSet {
	return &v1alpha1.CloneSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "cs-uid", Generation: 3},
		Spec: v1alpha1.CloneSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "nginx:1"}}},
			},
			RevisionHistoryLimit: ptr.To[int32](10),
		},
	}
}

// newFixture builds the controller on fake clients; objects go to both the clients and the
// informer caches (the informers are never started).
func newFixture(t *testing.T, cs *v1alpha1.CloneSet, kubeObjs ...runtime.Object) *fixture {
	t.Helper()
	return newFixtureWith(t, false, cs, kubeObjs...)
}

// newFixtureWith is newFixture with image pre-download on or off.
func newFixtureWith(t *testing.T, preDownload bool, cs *v1alpha1.CloneSet, kubeObjs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{Fakes: controllertest.NewFakes(kubeObjs, cs)}
	c, err := New(f.Kube, f.Inplace, f.InplaceInformers.Apps().V1alpha1().CloneSets(), f.KubeInformers.Core().V1().Pods(),
		f.KubeInformers.Core().V1().PersistentVolumeClaims(), f.KubeInformers.Apps().V1().ControllerRevisions(), f.Recorder)
	if err == nil && preDownload {
		err = c.EnableImagePreDownload(f.Kube.AppsV1(), f.InplaceInformers.Apps().V1alpha1().ImagePullJobs())
	}
	if err != nil {
		t.Fatal(err)
	}
	c.Clock = clocktesting.NewFakePassiveClock(testNow)
	f.c = c
	f.Cache(cs)
	for _, o := range kubeObjs {
		f.Cache(o)
	}
	return f
}

func (f *fixture) sync(t *testing.T) time.Duration {
	t.Helper()
	return controllertest.Sync(t, f.c.sync, cache.ObjectName{Namespace: "ns", Name: "web"})
}

func actionsOf[T any](f *fixture, verb, resource string) []T {
	var out []T
	for _, a := range f.Kube.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == "" {
			if x, ok := a.(T); ok {
				out = append(out, x)
			}
		}
	}
	return out
}

func createdPods(f *fixture) []*corev1.Pod {
	var pods []*corev1.Pod
	for _, a := range actionsOf[k8stesting.CreateAction](f, "create", "pods") {
		pods = append(pods, a.GetObject().(*corev1.Pod))
	}
	return pods
}

func deletedPods(f *fixture) []string {
	var names []string
	for _, a := range actionsOf[k8stesting.DeleteAction](f, "delete", "pods") {
		names = append(names, a.GetName())
	}
	return names
}

func lastStatus(t *testing.T, f *fixture) v1alpha1.CloneSetStatus {
	t.Helper()
	var st *v1alpha1.CloneSetStatus
	for _, a := range f.Inplace.Actions() {
		if a.GetVerb() == "update" && a.GetSubresource() == "status" {
			st = &a.(k8stesting.UpdateAction).GetObject().(*v1alpha1.CloneSet).Status
		}
	}
	if st == nil {
		t.Fatal("no status update")
	}
	return *st
}

type podOpt func(*corev1.Pod)

func ready(since time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Spec.NodeName = "node"
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady,
			Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)})
	}
}

func running() podOpt {
	return func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning; p.Spec.NodeName = "node" }
}

func created(at time.Time) podOpt {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(at) }
}

func withLabel(k, v string) podOpt { return func(p *corev1.Pod) { p.Labels[k] = v } }

func ownedPod(cs *v1alpha1.CloneSet, name, revision string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: cs.Namespace, UID: types.UID(name + "-uid"),
		Labels:            map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: revision},
		OwnerReferences:   []metav1.OwnerReference{*controllerRef(cs)},
		CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour)),
	}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func updateRevisionName(t *testing.T, cs *v1alpha1.CloneSet) string {
	t.Helper()
	r, err := newRevision(cs, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return r.Name
}

func TestScaleUpCreatesPods(t *testing.T) {
	cs := newCloneSet(3)
	f := newFixture(t, cs)
	f.sync(t)
	rev := updateRevisionName(t, cs)
	pods := createdPods(f)
	if len(pods) != 3 {
		t.Fatalf("created %d pods, want 3", len(pods))
	}
	names := sets.New[string]()
	for _, p := range pods {
		names.Insert(p.Name)
		id := p.Labels[v1alpha1.CloneSetInstanceID]
		if len(id) != 5 || p.Name != "web-"+id {
			t.Errorf("pod %s: instance id %q does not name it", p.Name, id)
		}
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] != rev || p.Labels[podTemplateHashLabel] != rev {
			t.Errorf("pod %s: revision labels %v, want %s", p.Name, p.Labels, rev)
		}
		if p.Labels["app"] != "web" || p.Annotations["a"] != "b" {
			t.Errorf("pod %s: template metadata not copied: %v %v", p.Name, p.Labels, p.Annotations)
		}
		if len(p.Spec.ReadinessGates) != 1 || p.Spec.ReadinessGates[0].ConditionType != pub.InPlaceUpdateReady {
			t.Errorf("pod %s: readiness gates %v", p.Name, p.Spec.ReadinessGates)
		}
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.UID != cs.UID || ref.Kind != "CloneSet" || ref.APIVersion != "apps.kruise.io/v1alpha1" {
			t.Errorf("pod %s: controller ref %+v", p.Name, ref)
		}
		if p.Spec.Containers[0].Image != "nginx:1" {
			t.Errorf("pod %s: spec not from template", p.Name)
		}
	}
	if names.Len() != 3 {
		t.Errorf("pod names not unique: %v", names)
	}
	st := lastStatus(t, f)
	if st.UpdateRevision != rev || st.CurrentRevision != rev || st.LabelSelector != "app=web" || st.ObservedGeneration != 3 {
		t.Errorf("status %+v", st)
	}
}

func TestExpectationsPreventDoubleCreation(t *testing.T) {
	cs := newCloneSet(3)
	f := newFixture(t, cs)
	f.sync(t)
	// The informer has not shown the Pods yet: no second round of creations.
	if d := f.sync(t); d <= 0 || d > expectations.Timeout {
		t.Errorf("requeue after %v, want within the expectations timeout", d)
	}
	if n := len(createdPods(f)); n != 3 {
		t.Fatalf("created %d pods after two syncs, want 3", n)
	}
	// The informer shows them: expectations are met, nothing more to create.
	for _, p := range createdPods(f) {
		f.Cache(p)
	}
	f.sync(t)
	if n := len(createdPods(f)); n != 3 {
		t.Fatalf("created %d pods once the cache caught up, want 3", n)
	}
	// A timed-out expectation no longer blocks: with an empty cache again, the controller acts.
	f2 := newFixture(t, newCloneSet(2))
	f2.sync(t)
	f2.c.Clock = clocktesting.NewFakePassiveClock(testNow.Add(expectations.Timeout + time.Second))
	f2.sync(t)
	if n := len(createdPods(f2)); n != 4 {
		t.Fatalf("created %d pods after the expectations timed out, want 4", n)
	}
}

// arrivingPodLister is the controller's Pod cache, into which a Pod arrives right after the first
// List of the namespace: the informer delivering it while a sync runs.
type arrivingPodLister struct {
	corelisters.PodLister
	arrive func()
}

func (l *arrivingPodLister) Pods(ns string) corelisters.PodNamespaceLister {
	return arrivingPodNamespaceLister{l.PodLister.Pods(ns), l}
}

type arrivingPodNamespaceLister struct {
	corelisters.PodNamespaceLister
	l *arrivingPodLister
}

func (n arrivingPodNamespaceLister) List(selector labels.Selector) ([]*corev1.Pod, error) {
	pods, err := n.PodNamespaceLister.List(selector)
	if arrive := n.l.arrive; arrive != nil {
		n.l.arrive = nil
		arrive()
	}
	return pods, err
}

// A Pod the last sync created reaches the cache while the next sync runs, after it listed the
// Pods: that sync must not count the Pod's expectation as met and the Pod as missing at once, or
// it creates one Pod too many (under CI load a replacement Pod got a new instance id so, and the
// surplus was deleted, leaving the PVCs of the old id unused).
func TestExpectationsAndPodListAgree(t *testing.T) {
	cs := newCloneSet(2)
	f := newFixture(t, cs)
	f.sync(t)
	created := createdPods(f)
	if len(created) != 2 {
		t.Fatalf("created %d pods, want 2", len(created))
	}
	f.Cache(created[0])
	f.c.pods = &arrivingPodLister{PodLister: f.c.pods, arrive: func() { f.Cache(created[1]) }}
	f.sync(t)
	if n := len(createdPods(f)); n != 2 {
		t.Errorf("created %d pods, want still 2: the sync counted %s as created and as missing", n, created[1].Name)
	}
}

func TestScaleDownOrder(t *testing.T) {
	old := testNow.Add(-2 * time.Hour)
	for _, tc := range []struct {
		name         string
		replicas     int32
		podsToDelete []string
		pods         func(cs *v1alpha1.CloneSet) []*corev1.Pod
		want         []string
	}{
		{
			name: "newest first among ready", replicas: 1,
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return []*corev1.Pod{
					ownedPod(cs, "web-a", "r", ready(old), created(old)),
					ownedPod(cs, "web-b", "r", ready(old), created(old.Add(time.Minute))),
					ownedPod(cs, "web-c", "r", ready(old), created(old.Add(2*time.Minute))),
				}
			},
			want: []string{"web-c", "web-b"},
		},
		{
			name: "not ready before newest", replicas: 2,
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return []*corev1.Pod{
					ownedPod(cs, "web-a", "r", running(), created(old)),
					ownedPod(cs, "web-b", "r", ready(old), created(old.Add(time.Minute))),
					ownedPod(cs, "web-c", "r", ready(old), created(old.Add(2*time.Minute))),
				}
			},
			want: []string{"web-a"},
		},
		{
			name: "unscheduled before not ready", replicas: 1,
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return []*corev1.Pod{
					ownedPod(cs, "web-a", "r", running(), created(old.Add(time.Minute))),
					ownedPod(cs, "web-b", "r", created(old)),
				}
			},
			want: []string{"web-b"},
		},
		{
			name: "podsToDelete and specified-delete first", replicas: 2, podsToDelete: []string{"web-a"},
			pods: func(cs *v1alpha1.CloneSet) []*corev1.Pod {
				return []*corev1.Pod{
					ownedPod(cs, "web-a", "r", ready(old), created(old)),
					ownedPod(cs, "web-b", "r", ready(old), created(old), withLabel(v1alpha1.SpecifiedDeleteKey, "true")),
					ownedPod(cs, "web-c", "r", running(), created(old.Add(time.Minute))),
					ownedPod(cs, "web-d", "r", ready(old), created(old)),
				}
			},
			// Only two asked-for deletions; web-c and web-d make the 2 replicas.
			want: []string{"web-a", "web-b"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newCloneSet(tc.replicas)
			cs.Spec.ScaleStrategy.PodsToDelete = tc.podsToDelete
			var objs []runtime.Object
			for _, p := range tc.pods(cs) {
				objs = append(objs, p)
			}
			f := newFixture(t, cs, objs...)
			f.sync(t)
			if got := sets.New(deletedPods(f)...); !got.Equal(sets.New(tc.want...)) {
				t.Errorf("deleted %v, want %v", sets.List(got), tc.want)
			}
			if n := len(createdPods(f)); n != 0 {
				t.Errorf("created %d pods, want 0", n)
			}
			// Deletions are expected: a second sync before the cache changes deletes nothing more.
			before := len(deletedPods(f))
			f.sync(t)
			if after := len(deletedPods(f)); after != before {
				t.Errorf("second sync deleted %d more pods", after-before)
			}
		})
	}
}

// A Pod asked to be deleted is deleted first and replaced once it is gone, as in OpenKruise: it
// counts towards spec.replicas until then.
func TestSpecifiedDeleteIsReplaced(t *testing.T) {
	cs := newCloneSet(2)
	f := newFixture(t, cs,
		ownedPod(cs, "web-a", "r", ready(testNow), withLabel(v1alpha1.SpecifiedDeleteKey, "true")),
		ownedPod(cs, "web-b", "r", ready(testNow)))
	f.sync(t)
	if got := deletedPods(f); len(got) != 1 || got[0] != "web-a" {
		t.Errorf("deleted %v, want [web-a]", got)
	}
	if n := len(createdPods(f)); n != 0 {
		t.Errorf("created %d pods while web-a still exists, want 0", n)
	}
	f = newFixture(t, cs, ownedPod(cs, "web-b", "r", ready(testNow)))
	f.sync(t)
	if n := len(createdPods(f)); n != 1 {
		t.Errorf("created %d pods once web-a is gone, want 1 replacement", n)
	}
}

func TestScaleUpMaxUnavailable(t *testing.T) {
	for _, tc := range []struct {
		name     string
		max      intstr.IntOrString
		notReady int
		want     int
	}{
		{"room for all", intstr.FromInt32(10), 0, 4},
		{"limited by max", intstr.FromInt32(2), 0, 2},
		{"not-ready pods use the budget", intstr.FromInt32(2), 1, 1},
		{"no budget left", intstr.FromString("20%"), 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newCloneSet(5)
			cs.Spec.ScaleStrategy.MaxUnavailable = &tc.max
			var objs []runtime.Object
			objs = append(objs, ownedPod(cs, "web-r", "r", ready(testNow)))
			for i := range tc.notReady {
				objs = append(objs, ownedPod(cs, fmt.Sprintf("web-n%d", i), "r", running()))
			}
			// 1 ready pod + notReady pods exist; 5 wanted.
			f := newFixture(t, cs, objs...)
			f.sync(t)
			if n := len(createdPods(f)); n != tc.want {
				t.Errorf("created %d pods, want %d", n, tc.want)
			}
		})
	}
}

func TestRevisionNameAndData(t *testing.T) {
	cs := newCloneSet(0)
	f := newFixture(t, cs)
	f.sync(t)
	revs := actionsOf[k8stesting.CreateAction](f, "create", "controllerrevisions")
	if len(revs) != 1 {
		t.Fatalf("created %d revisions, want 1", len(revs))
	}
	r := revs[0].GetObject().(*appsv1.ControllerRevision)
	data, _ := revisionData(cs)
	if r.Name != "web-"+history.HashRevision(data, ptr.To[int32](0)) {
		t.Errorf("revision name %s", r.Name)
	}
	if !strings.HasPrefix(string(r.Data.Raw), `{"spec":{"template":{"$patch":"replace",`) {
		t.Errorf("revision data %s", r.Data.Raw)
	}
	if r.Revision != 1 || r.Labels["app"] != "web" || !metav1.IsControlledBy(r, cs) {
		t.Errorf("revision %+v", r.ObjectMeta)
	}
	tmpl, err := revisionTemplate(r)
	if err != nil || tmpl.Spec.Containers[0].Image != "nginx:1" || tmpl.Labels["app"] != "web" {
		t.Errorf("template from revision %+v, %v", tmpl, err)
	}
	// Same template, different collision count: different name; different template: different name.
	if history.HashRevision(data, ptr.To[int32](1)) == history.HashRevision(data, ptr.To[int32](0)) {
		t.Error("collision count does not change the hash")
	}
	cs2 := cs.DeepCopy()
	cs2.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	if updateRevisionName(t, cs2) == r.Name {
		t.Error("a new template keeps the revision name")
	}
	if long := history.RevisionName(strings.Repeat("x", 300), "h"); len(long) != 223+2 {
		t.Errorf("long name has %d characters", len(long))
	}
}

func TestRevisionCollision(t *testing.T) {
	cs := newCloneSet(0)
	name := updateRevisionName(t, cs)
	// Another object took the name.
	taken := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Data: runtime.RawExtension{Raw: []byte(`{"other":true}`)}}
	f := newFixture(t, cs)
	if _, err := f.Kube.AppsV1().ControllerRevisions("ns").Create(context.Background(), taken, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync(t)
	st := lastStatus(t, f)
	if st.CollisionCount == nil || *st.CollisionCount != 1 {
		t.Fatalf("collisionCount %v, want 1", st.CollisionCount)
	}
	data, _ := revisionData(cs)
	if want := history.RevisionName("web", history.HashRevision(data, ptr.To[int32](1))); st.UpdateRevision != want {
		t.Errorf("updateRevision %s, want %s", st.UpdateRevision, want)
	}
}

// TestAdoptsOrphanRevision: the revision of the CloneSet's template left by a CloneSet deleted
// with --cascade=orphan (no controllerRef, the template's labels) is adopted and is the update
// revision: no new revision, no collision. A revision under the same name that is not an orphan
// it selects stays a collision (TestRevisionCollision).
func TestAdoptsOrphanRevision(t *testing.T) {
	cs := newCloneSet(1)
	orphan, err := newRevision(cs, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	orphan.OwnerReferences = nil
	orphan.UID = "orphan-uid"
	f := newFixture(t, cs, orphan, ownedPod(cs, "web-a", orphan.Name, ready(testNow)))
	f.sync(t)
	patches := actionsOf[k8stesting.PatchAction](f, "patch", "controllerrevisions")
	if len(patches) != 1 || patches[0].GetName() != orphan.Name || !strings.Contains(string(patches[0].GetPatch()), `"controller":true`) {
		t.Fatalf("revision patches %v, want %s adopted", patches, orphan.Name)
	}
	if n := len(actionsOf[k8stesting.CreateAction](f, "create", "controllerrevisions")); n != 0 {
		t.Errorf("created %d revisions, want 0 (the orphan is the template's)", n)
	}
	st := lastStatus(t, f)
	if st.UpdateRevision != orphan.Name || st.CurrentRevision != orphan.Name || ptr.Deref(st.CollisionCount, 0) != 0 || st.UpdatedReplicas != 1 {
		t.Errorf("status update %s current %s collisions %v updated %d, want %s, no collision, 1 updated",
			st.UpdateRevision, st.CurrentRevision, st.CollisionCount, st.UpdatedReplicas, orphan.Name)
	}
}

func TestRevisionReuseAndHistory(t *testing.T) {
	cs := newCloneSet(0)
	cs.Spec.RevisionHistoryLimit = ptr.To[int32](2)
	var objs []runtime.Object
	mk := func(i int) *appsv1.ControllerRevision {
		c := cs.DeepCopy()
		c.Spec.Template.Spec.Containers[0].Image = fmt.Sprintf("nginx:old%d", i)
		r, _ := newRevision(c, int64(i), 0)
		r.UID = types.UID(r.Name)
		return r
	}
	var old []*appsv1.ControllerRevision
	for i := 1; i <= 6; i++ {
		old = append(old, mk(i))
		objs = append(objs, old[i-1])
	}
	// A pod still at revision 1 (the oldest) keeps it; status says revision 2 is current.
	cs.Status.CurrentRevision = old[1].Name
	cs.Spec.Replicas = ptr.To[int32](1)
	objs = append(objs, ownedPod(cs, "web-a", old[0].Name, ready(testNow)))
	f := newFixture(t, cs, objs...)
	f.sync(t)
	// Live: 1 (pod), 2 (current), new update. History 3..6 with limit 2: delete 3 and 4.
	var deleted []string
	for _, a := range actionsOf[k8stesting.DeleteAction](f, "delete", "controllerrevisions") {
		deleted = append(deleted, a.GetName())
	}
	if want := []string{old[2].Name, old[3].Name}; !sets.New(deleted...).Equal(sets.New(want...)) {
		t.Errorf("deleted revisions %v, want %v", deleted, want)
	}
	st := lastStatus(t, f)
	if st.CurrentRevision != old[1].Name || st.UpdateRevision != updateRevisionName(t, cs) {
		t.Errorf("current %s update %s", st.CurrentRevision, st.UpdateRevision)
	}
	created := actionsOf[k8stesting.CreateAction](f, "create", "controllerrevisions")
	if len(created) != 1 || created[0].GetObject().(*appsv1.ControllerRevision).Revision != 7 {
		t.Errorf("want one new revision numbered 7")
	}

	// Going back to the template of revision 5 renumbers it instead of creating one.
	cs5 := cs.DeepCopy()
	cs5.Spec.Template.Spec.Containers[0].Image = "nginx:old5"
	f5 := newFixture(t, cs5, objs...)
	f5.sync(t)
	if n := len(actionsOf[k8stesting.CreateAction](f5, "create", "controllerrevisions")); n != 0 {
		t.Errorf("created %d revisions, want 0", n)
	}
	ups := actionsOf[k8stesting.UpdateAction](f5, "update", "controllerrevisions")
	if len(ups) != 1 || ups[0].GetObject().(*appsv1.ControllerRevision).Revision != 7 ||
		ups[0].GetObject().(*appsv1.ControllerRevision).Name != old[4].Name {
		t.Errorf("want revision 5 renumbered to 7, got %d updates", len(ups))
	}
}

func TestStatus(t *testing.T) {
	cs := newCloneSet(4)
	cs.Spec.MinReadySeconds = 30
	cs.Spec.UpdateStrategy.Partition = ptr.To(intstr.FromString("50%"))
	cs.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpExists}}}
	cs.Spec.Template.Labels["tier"] = "front"
	rev := updateRevisionName(t, cs)
	withTier := withLabel("tier", "front")
	now := metav1.NewTime(testNow)
	f := newFixture(t, cs,
		ownedPod(cs, "web-a", rev, withTier, ready(testNow.Add(-time.Minute))),    // updated, available
		ownedPod(cs, "web-b", rev, withTier, ready(testNow.Add(-10*time.Second))), // updated, ready only
		ownedPod(cs, "web-c", "old", withTier, ready(testNow.Add(-time.Hour))),    // old, available
		ownedPod(cs, "web-d", "old", withTier, running()),                         // old, not ready
		ownedPod(cs, "web-e", "old", withTier, ready(testNow), func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
	)
	requeue := f.sync(t)
	st := lastStatus(t, f)
	want := v1alpha1.CloneSetStatus{
		ObservedGeneration: 3, Replicas: 4, ReadyReplicas: 3, AvailableReplicas: 2,
		UpdatedReplicas: 2, UpdatedReadyReplicas: 2, UpdatedAvailableReplicas: 1, ExpectedUpdatedReplicas: 2,
		UpdateRevision: rev, CurrentRevision: rev, CollisionCount: ptr.To[int32](0),
		LabelSelector: "app=web,tier",
	}
	if !apiequality.Semantic.DeepEqual(st, want) {
		t.Errorf("status\n got %+v\nwant %+v", st, want)
	}
	if requeue != 20*time.Second {
		t.Errorf("requeue after %v, want 20s (web-b becomes available)", requeue)
	}
	// Unchanged status is not written again.
	cs2 := cs.DeepCopy()
	cs2.Status = st
	f.Cache(cs2)
	f.Inplace.ClearActions()
	f.sync(t)
	for _, a := range f.Inplace.Actions() {
		if a.GetSubresource() == "status" {
			t.Errorf("status written although unchanged")
		}
	}
}

func TestClaimPods(t *testing.T) {
	cs := newCloneSet(2)
	rev := updateRevisionName(t, cs)
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: "ns", UID: "o-uid",
		Labels: map[string]string{"app": "web", appsv1.ControllerRevisionHashLabelKey: rev}}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	stray := ownedPod(cs, "stray", "r")
	stray.Labels["app"] = "other"
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns", UID: "x-uid",
		Labels: map[string]string{"app": "web"}, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs-uid", Controller: ptr.To(true)}}}}
	f := newFixture(t, cs, orphan, stray, other, ownedPod(cs, "web-a", rev))
	f.sync(t)
	patches := actionsOf[k8stesting.PatchAction](f, "patch", "pods")
	got := map[string]string{}
	for _, p := range patches {
		got[p.GetName()] = string(p.GetPatch())
	}
	if len(got) != 2 || !strings.Contains(got["orphan"], `"controller":true`) || !strings.Contains(got["stray"], `"$patch":"delete"`) {
		t.Errorf("patches %v: want adoption of orphan and release of stray", got)
	}
	// web-a and the adopted orphan make 2: nothing to create.
	if n := len(createdPods(f)); n != 0 {
		t.Errorf("created %d pods, want 0", n)
	}
	pod, err := f.Kube.CoreV1().Pods("ns").Get(context.Background(), "orphan", metav1.GetOptions{})
	if err != nil || !metav1.IsControlledBy(pod, cs) {
		t.Errorf("orphan not adopted: %v", err)
	}
}

// In a namespace being deleted, Pod creation is refused: the controller stops trying and reports
// no failure.
func TestScaleUpInTerminatingNamespace(t *testing.T) {
	cs := newCloneSet(4)
	f := newFixture(t, cs)
	f.Kube.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		err := apierrors.NewForbidden(corev1.Resource("pods"), "x", fmt.Errorf("namespace ns is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
		return true, nil, err
	})
	f.sync(t)
	if n := len(actionsOf[k8stesting.CreateAction](f, "create", "pods")); n != 1 {
		t.Errorf("%d creations tried, want 1 (then stop)", n)
	}
	for _, e := range strings.Split(events(f), "\n") {
		if strings.Contains(e, "FailedCreate") {
			t.Errorf("event %q", e)
		}
	}
}
