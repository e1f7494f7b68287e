// Package daemonset is the Advanced DaemonSet controller (apps.kruise.io/v1alpha1 DaemonSet): one
// Pod on every node the template's node selector, affinity and tolerations allow (kube's own
// scheduling predicates decide), rolled to a new revision node by node: recreated (Standard), with
// a surge Pod beside the old one (maxSurge), or in place through pods/inplaceupdate
// (InPlaceIfPossible), limited to the nodes rollingUpdate.selector matches, keeping partition Pods
// old. OpenKruise's Advanced DaemonSet and kube's DaemonSet controllers are the references.
package daemonset

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/expectations"
	"github.com/inplace-dev/inplace/pkg/controller/ownership"
	"github.com/inplace-dev/inplace/pkg/controller/predownload"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Name is the controller's name in logs, events and metrics.
const Name = "daemonset"

// Controller reconciles Advanced DaemonSets.
type Controller struct {
	kube     kubernetes.Interface
	inplace  clientset.Interface
	sets     listers.DaemonSetLister
	owned    ownership.Indexes // the Pods and revisions by controller
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]
	recorder record.EventRecorder
	exp      *expectations.Expectations
	now      func() time.Time
	// predl pre-downloads the images of a rollout (EnableImagePreDownload); nil when off.
	predl *predownload.Writer
}

// New builds the controller on the DaemonSet, Pod, Node and ControllerRevision informers.
func New(kube kubernetes.Interface, inplace clientset.Interface, setInf informers.DaemonSetInformer,
	podInf coreinformers.PodInformer, nodeInf coreinformers.NodeInformer,
	revInf appsinformers.ControllerRevisionInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		kube:    kube,
		inplace: inplace,
		sets:    setInf.Lister(),
		nodes:   nodeInf.Lister(),
		synced: []cache.InformerSynced{setInf.Informer().HasSynced, podInf.Informer().HasSynced,
			nodeInf.Informer().HasSynced, revInf.Informer().HasSynced},
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
			if ds, ok := reconcile.ObjectOf[*v1alpha1.DaemonSet](obj); ok {
				c.exp.Forget(cache.MetaObjectToName(ds).String())
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("watching daemonsets: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(nil, obj, false) },
		UpdateFunc: func(old, obj any) { c.podChanged(old, obj, false) },
		DeleteFunc: func(obj any) { c.podChanged(nil, obj, true) },
	}); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	// A node added, relabelled, tainted or removed may change where every DaemonSet runs.
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.enqueueAll() },
		UpdateFunc: func(old, cur any) { c.nodeChanged(old, cur) },
		DeleteFunc: func(any) { c.enqueueAll() },
	}); err != nil {
		return nil, fmt.Errorf("watching nodes: %w", err)
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
	if ds, ok := obj.(*v1alpha1.DaemonSet); ok {
		c.queue.Add(cache.MetaObjectToName(ds))
	}
}

func (c *Controller) enqueueAll() {
	sets, err := c.sets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range sets {
		c.queue.Add(cache.MetaObjectToName(ds))
	}
}

// nodeChanged enqueues every DaemonSet when what decides placement changed: labels, taints,
// schedulability or readiness (a node's heartbeats alone change nothing).
func (c *Controller) nodeChanged(old, cur any) {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	if !maps.Equal(o.Labels, n.Labels) || !equality.Semantic.DeepEqual(o.Spec.Taints, n.Spec.Taints) ||
		o.Spec.Unschedulable != n.Spec.Unschedulable {
		c.enqueueAll()
	}
}

// owner returns the DaemonSet a controllerRef points at, if the cache has it with that UID.
func (c *Controller) owner(namespace string, ref *metav1.OwnerReference) *v1alpha1.DaemonSet {
	if ref == nil || ref.Kind != "DaemonSet" || ref.APIVersion != v1alpha1.SchemeGroupVersion.String() {
		return nil
	}
	ds, err := c.sets.DaemonSets(namespace).Get(ref.Name)
	if err != nil || ds.UID != ref.UID {
		return nil
	}
	return ds
}

// podChanged enqueues the DaemonSet of a Pod; for an orphan, the DaemonSets that may adopt it; for
// a Pod whose controller changed, the one that had it too.
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
	ds := c.owner(pod.Namespace, ref)
	if ds == nil {
		return
	}
	key := cache.MetaObjectToName(ds)
	if deleted {
		c.exp.DeletionObserved(key.String(), pod.Name)
	} else {
		c.exp.CreationObserved(key.String(), creationKey(pod))
	}
	c.queue.Add(key)
}

func (c *Controller) enqueueRef(namespace string, ref *metav1.OwnerReference) {
	if ds := c.owner(namespace, ref); ds != nil {
		c.queue.Add(cache.MetaObjectToName(ds))
	}
}

// enqueueAdopters enqueues the DaemonSets whose selector matches an orphan (a Pod or a revision).
func (c *Controller) enqueueAdopters(obj metav1.Object) {
	sets, err := c.sets.DaemonSets(obj.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range ownership.Adopters(obj, sets, func(ds *v1alpha1.DaemonSet) *metav1.LabelSelector { return ds.Spec.Selector }) {
		c.queue.Add(cache.MetaObjectToName(ds))
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
