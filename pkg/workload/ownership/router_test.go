package ownership

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// routerFixture routes to two ReplicaSets (standing for any workload kind) selecting app=a and
// app=b in namespace ns.
func routerFixture(t *testing.T) (*Router[*appsv1.ReplicaSet], reconcile.Queue, *appsv1.ReplicaSet, *appsv1.ReplicaSet) {
	t.Helper()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	set := func(name string) *appsv1.ReplicaSet {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
			Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
		if err := indexer.Add(rs); err != nil {
			t.Fatal(err)
		}
		return rs
	}
	a, b := set("a"), set("b")
	sets := appslisters.NewReplicaSetLister(indexer)
	queue := reconcile.NewQueue("router-test")
	t.Cleanup(queue.ShutDown)
	r := NewRouter(appsv1.SchemeGroupVersion.WithKind("ReplicaSet"),
		func(namespace string) NamespaceLister[*appsv1.ReplicaSet] { return sets.ReplicaSets(namespace) },
		func(rs *appsv1.ReplicaSet) *metav1.LabelSelector { return rs.Spec.Selector }, queue)
	return r, queue, a, b
}

// drain returns the names queued, sorted, and empties the queue.
func drain(queue reconcile.Queue) []string {
	var names []string
	for queue.Len() > 0 {
		key, _ := queue.Get()
		names = append(names, key.Name)
		queue.Done(key)
		queue.Forget(key)
	}
	slices.Sort(names)
	return names
}

func controlledPod(name, app string, owner *appsv1.ReplicaSet) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": app}}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
	}
	return p
}

// A Pod's events reach its controller (observed first), an orphan's the workloads that may adopt
// it, and a Pod whose controller changed reaches the one that had it too.
func TestRouterPodHandlers(t *testing.T) {
	r, queue, a, b := routerFixture(t)
	var observed []string
	h := r.PodHandlers(func(key string, pod *corev1.Pod, deleted bool) {
		observed = append(observed, key+"/"+pod.Name+map[bool]string{true: " deleted", false: ""}[deleted])
	})

	h.Add(controlledPod("p1", "a", a))
	if got := drain(queue); !slices.Equal(got, []string{"a"}) {
		t.Errorf("add of a's Pod queued %v, want [a]", got)
	}
	h.Add(controlledPod("orphan", "b", nil))
	if got := drain(queue); !slices.Equal(got, []string{"b"}) {
		t.Errorf("add of an orphan app=b queued %v, want its adopter [b]", got)
	}
	h.Update(controlledPod("p1", "a", a), controlledPod("p1", "a", b))
	if got := drain(queue); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("controller change queued %v, want the old and new controllers [a b]", got)
	}
	stale := a.DeepCopy()
	stale.UID = "uid-gone" // a controllerRef to an earlier ReplicaSet of the same name
	h.Delete(controlledPod("p2", "a", stale))
	if got := drain(queue); len(got) != 0 {
		t.Errorf("a Pod of a workload no longer there queued %v, want nothing", got)
	}
	h.Delete(controlledPod("p1", "a", b))
	drain(queue)
	want := []string{"ns/a/p1", "ns/b/p1", "ns/b/p1 deleted"}
	if !slices.Equal(observed, want) {
		t.Errorf("observed %v, want %v", observed, want)
	}
}

// A workload's own events enqueue it (a deletion goes to deleted); a revision's reach its
// controller or, for an orphan, its adopters.
func TestRouterWorkloadAndRevisionHandlers(t *testing.T) {
	r, queue, a, b := routerFixture(t)
	var forgotten []string
	w := r.WorkloadHandlers(func(rs *appsv1.ReplicaSet) { forgotten = append(forgotten, rs.Name) })
	w.Add(a)
	w.Update(b, b)
	w.Delete(a)
	if got := drain(queue); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("workload events queued %v, want [a b]", got)
	}
	if !slices.Equal(forgotten, []string{"a"}) {
		t.Errorf("deleted called for %v, want [a]", forgotten)
	}

	rev := r.RevisionHandlers()
	owned := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "r1", Namespace: "ns", Labels: map[string]string{"app": "a"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(b, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}}}
	rev.Add(owned)
	if got := drain(queue); !slices.Equal(got, []string{"b"}) {
		t.Errorf("a revision of b queued %v, want its controller [b]", got)
	}
	orphan := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "r2", Namespace: "ns", Labels: map[string]string{"app": "a"}}}
	rev.Delete(orphan)
	if got := drain(queue); !slices.Equal(got, []string{"a"}) {
		t.Errorf("an orphan revision app=a queued %v, want its adopter [a]", got)
	}
}
