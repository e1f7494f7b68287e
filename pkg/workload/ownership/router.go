package ownership

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Router takes the events of the objects a workload kind owns (Pods, ControllerRevisions,
// claims) to the workloads' queue: the workload that controls the object, the one that controlled
// it before, and for an orphan the workloads that may adopt it. The workload controllers
// (CloneSet, Advanced StatefulSet and DaemonSet) each have one for their kind.
type Router[W metav1.Object] struct {
	// Kind is the workload's group, version and kind, as its controllerRefs name it.
	Kind schema.GroupVersionKind
	// Get and List read the workloads from the cache.
	Get  func(namespace, name string) (W, error)
	List func(namespace string) ([]W, error)
	// Selector is a workload's Pod selector.
	Selector func(W) *metav1.LabelSelector
	Queue    reconcile.Queue
}

// NamespaceLister reads one namespace's workloads from the cache: what a generated lister's
// namespace method (CloneSets(namespace), ...) returns.
type NamespaceLister[W any] interface {
	Get(name string) (W, error)
	List(selector labels.Selector) ([]W, error)
}

// NewRouter routes to the workloads of kind, read through namespaced (a generated lister's
// namespace method, wrapped), whose Pods selector selects, onto queue.
func NewRouter[W metav1.Object](kind schema.GroupVersionKind, namespaced func(namespace string) NamespaceLister[W],
	selector func(W) *metav1.LabelSelector, queue reconcile.Queue) *Router[W] {
	return &Router[W]{
		Kind: kind,
		Get:  func(namespace, name string) (W, error) { return namespaced(namespace).Get(name) },
		List: func(namespace string) ([]W, error) {
			return namespaced(namespace).List(labels.Everything())
		},
		Selector: selector,
		Queue:    queue,
	}
}

// Enqueue enqueues a workload (its own events).
func (r *Router[W]) Enqueue(w W) {
	r.Queue.Add(cache.MetaObjectToName(w))
}

// WorkloadHandlers enqueue a workload added or updated; deleted is called for one deleted, to
// forget what the controller keeps of it.
func (r *Router[W]) WorkloadHandlers(deleted func(W)) reconcile.Handlers[W] {
	return reconcile.Handlers[W]{Add: r.Enqueue, Update: func(_, w W) { r.Enqueue(w) }, Delete: deleted}
}

// RevisionHandlers enqueue, on every event of a ControllerRevision, the workload that controls it
// or, for an orphan, those that may adopt it.
func (r *Router[W]) RevisionHandlers() reconcile.Handlers[*appsv1.ControllerRevision] {
	return reconcile.OnChange(func(rev *appsv1.ControllerRevision) { r.EnqueueOwner(rev) })
}

// Owner returns the workload a controllerRef points at, if the cache has it with that UID.
func (r *Router[W]) Owner(namespace string, ref *metav1.OwnerReference) (W, bool) {
	var none W
	if ref == nil || ref.Kind != r.Kind.Kind || ref.APIVersion != r.Kind.GroupVersion().String() {
		return none, false
	}
	w, err := r.Get(namespace, ref.Name)
	if err != nil || w.GetUID() != ref.UID {
		return none, false
	}
	return w, true
}

// EnqueueRef enqueues the workload a controllerRef points at.
func (r *Router[W]) EnqueueRef(namespace string, ref *metav1.OwnerReference) {
	if w, ok := r.Owner(namespace, ref); ok {
		r.Queue.Add(cache.MetaObjectToName(w))
	}
}

// EnqueueAdopters enqueues the workloads whose selector matches an orphan (a Pod or a revision).
func (r *Router[W]) EnqueueAdopters(obj metav1.Object) {
	ws, err := r.List(obj.GetNamespace())
	if err != nil {
		return
	}
	for _, w := range Adopters(obj, ws, r.Selector) {
		r.Queue.Add(cache.MetaObjectToName(w))
	}
}

// EnqueueOwner enqueues the workload that controls obj or, for an orphan, those that may adopt it.
func (r *Router[W]) EnqueueOwner(obj metav1.Object) {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		r.EnqueueRef(obj.GetNamespace(), ref)
	} else {
		r.EnqueueAdopters(obj)
	}
}

// PodObserver is told of a Pod event of a workload before the workload is enqueued (key is the
// workload's), to settle what its expectations wait for.
type PodObserver func(key string, pod *corev1.Pod, deleted bool)

// PodHandlers route the Pod events: the workload of a Pod (observe called first); for an
// orphan, the workloads that may adopt it; for a Pod whose controller changed, the one that had
// it too.
func (r *Router[W]) PodHandlers(observe PodObserver) reconcile.Handlers[*corev1.Pod] {
	return reconcile.Handlers[*corev1.Pod]{
		Add:    func(pod *corev1.Pod) { r.podChanged(nil, pod, false, observe) },
		Update: func(old, pod *corev1.Pod) { r.podChanged(old, pod, false, observe) },
		Delete: func(pod *corev1.Pod) { r.podChanged(nil, pod, true, observe) },
	}
}

func (r *Router[W]) podChanged(old, pod *corev1.Pod, deleted bool, observe PodObserver) {
	ref := metav1.GetControllerOf(pod)
	if old != nil {
		if oldRef := metav1.GetControllerOf(old); oldRef != nil && (ref == nil || ref.UID != oldRef.UID) {
			r.EnqueueRef(pod.Namespace, oldRef)
		}
	}
	if ref == nil {
		if !deleted {
			r.EnqueueAdopters(pod)
		}
		return
	}
	w, ok := r.Owner(pod.Namespace, ref)
	if !ok {
		return
	}
	key := cache.MetaObjectToName(w)
	observe(key.String(), pod, deleted)
	r.Queue.Add(key)
}

// OwnerKey names the workload a controllerRef points at, if the cache has it with that UID.
func (r *Router[W]) OwnerKey(namespace string, ref *metav1.OwnerReference) (cache.ObjectName, bool) {
	w, ok := r.Owner(namespace, ref)
	if !ok {
		return cache.ObjectName{}, false
	}
	return cache.MetaObjectToName(w), true
}
