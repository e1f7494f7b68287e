// Package statefulset is the Advanced StatefulSet controller (apps.kruise.io/v1beta1
// StatefulSet): Pods with stable names <set>-<ordinal> and claims <template>-<set>-<ordinal>,
// created and removed in ordinal order (OrderedReady) or all at once (Parallel), rolled to a new
// revision in reverse ordinal order (or by priority), above a partition, maxUnavailable at a
// time, in place through pods/inplaceupdate when the change allows it. OpenKruise's Advanced
// StatefulSet controller and kube's StatefulSet controller are the behavioural references.
package statefulset

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/controller/expectations"
	"github.com/inplace-dev/inplace/pkg/controller/ownership"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1beta1"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"

	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
)

// Name is the controller's name in logs, events and metrics.
const Name = "statefulset"

// Controller reconciles Advanced StatefulSets.
type Controller struct {
	kube    kubernetes.Interface
	inplace clientset.Interface
	sets    listers.StatefulSetLister
	pods    corelisters.PodLister
	owned   ownership.Indexes // the Pods and revisions by controller
	claims  corelisters.PersistentVolumeClaimLister
	// classes are the StorageClasses, read when claims resize (WatchClaimResize); nil when not.
	classes  storagelisters.StorageClassLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]
	recorder record.EventRecorder
	exp      *expectations.Expectations
	now      func() time.Time
}

// New builds the controller on the StatefulSet (v1beta1), Pod, PersistentVolumeClaim and
// ControllerRevision informers.
func New(kube kubernetes.Interface, inplace clientset.Interface, setInf informers.StatefulSetInformer,
	podInf coreinformers.PodInformer, claimInf coreinformers.PersistentVolumeClaimInformer,
	revInf appsinformers.ControllerRevisionInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		kube:    kube,
		inplace: inplace,
		sets:    setInf.Lister(),
		pods:    podInf.Lister(),
		claims:  claimInf.Lister(),
		synced: []cache.InformerSynced{setInf.Informer().HasSynced, podInf.Informer().HasSynced,
			claimInf.Informer().HasSynced, revInf.Informer().HasSynced},
		recorder: recorder,
		now:      time.Now,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: Name}),
	}
	c.exp = expectations.New(func() time.Time { return c.now() })
	owned, err := ownership.NewIndexes(podInf.Informer(), revInf.Informer())
	if err != nil {
		return nil, err
	}
	c.owned = owned
	if _, err := setInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueSet,
		UpdateFunc: func(_, obj any) { c.enqueueSet(obj) },
		DeleteFunc: func(obj any) {
			if set, ok := reconcile.ObjectOf[*v1beta1.StatefulSet](obj); ok {
				c.exp.Forget(cache.MetaObjectToName(set).String())
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("watching statefulsets: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(nil, obj, false) },
		UpdateFunc: func(old, obj any) { c.podChanged(old, obj, false) },
		DeleteFunc: func(obj any) { c.podChanged(nil, obj, true) },
	}); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	if _, err := revInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueOwner,
		UpdateFunc: func(_, obj any) { c.enqueueOwner(obj) },
		DeleteFunc: c.enqueueOwner,
	}); err != nil {
		return nil, fmt.Errorf("watching controllerrevisions: %w", err)
	}
	return c, nil
}

func (c *Controller) enqueueSet(obj any) {
	if set, ok := obj.(*v1beta1.StatefulSet); ok {
		c.queue.Add(cache.MetaObjectToName(set))
	}
}

// owner returns the StatefulSet a controllerRef points at, if the cache has it with that UID.
func (c *Controller) owner(namespace string, ref *metav1.OwnerReference) *v1beta1.StatefulSet {
	if ref == nil || ref.Kind != "StatefulSet" || ref.APIVersion != v1beta1.SchemeGroupVersion.String() {
		return nil
	}
	set, err := c.sets.StatefulSets(namespace).Get(ref.Name)
	if err != nil || set.UID != ref.UID {
		return nil
	}
	return set
}

// podChanged enqueues the StatefulSet of a Pod; for an orphan, the StatefulSets that may adopt it;
// for a Pod whose controller changed, the one that had it too. The expectations settle against the
// cache in sync; a Pod gone is also noted here (the cache no longer shows it terminating).
func (c *Controller) podChanged(old, obj any, deleted bool) {
	pod, ok := reconcile.ObjectOf[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(pod)
	if oldPod, ok := old.(*corev1.Pod); ok {
		if oldRef := metav1.GetControllerOf(oldPod); oldRef != nil && (ref == nil || ref.UID != oldRef.UID) {
			c.enqueueRef(pod.Namespace, oldRef)
		}
	}
	if ref == nil {
		if !deleted {
			c.enqueueAdopters(pod)
		}
		return
	}
	set := c.owner(pod.Namespace, ref)
	if set == nil {
		return
	}
	key := cache.MetaObjectToName(set)
	if deleted {
		c.exp.DeletionObserved(key.String(), pod.Name)
	}
	c.queue.Add(key)
}

func (c *Controller) enqueueRef(namespace string, ref *metav1.OwnerReference) {
	if set := c.owner(namespace, ref); set != nil {
		c.queue.Add(cache.MetaObjectToName(set))
	}
}

// enqueueAdopters enqueues the StatefulSets whose selector matches an orphan (a Pod or a revision).
func (c *Controller) enqueueAdopters(obj metav1.Object) {
	sets, err := c.sets.StatefulSets(obj.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, set := range ownership.Adopters(obj, sets, func(set *v1beta1.StatefulSet) *metav1.LabelSelector { return set.Spec.Selector }) {
		c.queue.Add(cache.MetaObjectToName(set))
	}
}

func (c *Controller) enqueueOwner(obj any) {
	m, ok := reconcile.ObjectOf[metav1.Object](obj)
	if !ok {
		return
	}
	if ref := metav1.GetControllerOf(m); ref != nil {
		c.enqueueRef(m.GetNamespace(), ref)
	} else {
		c.enqueueAdopters(m)
	}
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.synced...)
}
