// Package cloneset is the CloneSet controller: it keeps a CloneSet's Pods at the desired number,
// records each Pod template as a ControllerRevision, and reports the CloneSet's status.
// OpenKruise's CloneSet controller is the behavioural reference.
package cloneset

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/expectations"
	"github.com/inplace-dev/inplace/pkg/controller/manager"
	"github.com/inplace-dev/inplace/pkg/controller/ownership"
	"github.com/inplace-dev/inplace/pkg/controller/predownload"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Name is the controller's name in logs, events and metrics.
const Name = "cloneset"

// Controller reconciles CloneSets.
type Controller struct {
	kube     kubernetes.Interface
	inplace  clientset.Interface
	sets     listers.CloneSetLister
	pods     corelisters.PodLister
	owned    ownership.Indexes // the Pods and revisions by controller
	claims   corelisters.PersistentVolumeClaimLister
	synced   []cache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[cache.ObjectName]
	recorder record.EventRecorder
	exp      *expectations.Expectations
	now      func() time.Time
	// predl pre-downloads the images of in-place rollouts; nil when that is off.
	predl *predownload.Writer
}

// New builds the controller on the shared CloneSet, Pod, PersistentVolumeClaim and
// ControllerRevision informers, and the ImagePullJob informer with cc.ImagePreDownload.
func New(cc *manager.Context) (*Controller, error) {
	setInf := cc.InplaceInformers.Apps().V1alpha1().CloneSets()
	podInf := cc.KubeInformers.Core().V1().Pods()
	pvcInf := cc.KubeInformers.Core().V1().PersistentVolumeClaims()
	revInf := cc.KubeInformers.Apps().V1().ControllerRevisions()
	if cc.RolloutMetrics {
		exposeRollouts(setInf.Lister())
	}
	c := &Controller{
		kube:    cc.KubeClient,
		inplace: cc.InplaceClient,
		sets:    setInf.Lister(),
		pods:    podInf.Lister(),
		claims:  pvcInf.Lister(),
		synced: []cache.InformerSynced{setInf.Informer().HasSynced, podInf.Informer().HasSynced,
			pvcInf.Informer().HasSynced, revInf.Informer().HasSynced},
		recorder: cc.Recorder,
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
		DeleteFunc: c.deleteSet,
	}); err != nil {
		return nil, fmt.Errorf("watching clonesets: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}); err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	if _, err := pvcInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.enqueueClaimOwner(obj, false) },
		UpdateFunc: func(_, obj any) { c.enqueueClaimOwner(obj, false) },
		DeleteFunc: func(obj any) { c.enqueueClaimOwner(obj, true) },
	}); err != nil {
		return nil, fmt.Errorf("watching persistentvolumeclaims: %w", err)
	}
	if _, err := revInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueRevisionOwner,
		UpdateFunc: func(_, obj any) { c.enqueueRevisionOwner(obj) },
		DeleteFunc: c.enqueueRevisionOwner,
	}); err != nil {
		return nil, fmt.Errorf("watching controllerrevisions: %w", err)
	}
	if cc.ImagePreDownload {
		if err := c.watchImagePullJobs(cc); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Controller) enqueueSet(obj any) {
	if cs, ok := obj.(*v1alpha1.CloneSet); ok {
		c.queue.Add(cache.MetaObjectToName(cs))
	}
}

func (c *Controller) deleteSet(obj any) {
	cs, ok := reconcile.ObjectOf[*v1alpha1.CloneSet](obj)
	if !ok {
		return
	}
	c.exp.Forget(cache.MetaObjectToName(cs).String())
	if c.predl != nil {
		c.predl.Forget(cache.MetaObjectToName(cs).String())
	}
	c.queue.Add(cache.MetaObjectToName(cs))
}

// resolveControllerRef returns the CloneSet a controllerRef points at, if the cache has it with
// the same UID.
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *v1alpha1.CloneSet {
	if ref == nil || ref.Kind != "CloneSet" || ref.APIVersion != v1alpha1.SchemeGroupVersion.String() {
		return nil
	}
	cs, err := c.sets.CloneSets(namespace).Get(ref.Name)
	if err != nil || cs.UID != ref.UID {
		return nil
	}
	return cs
}

// enqueueOrphan enqueues the CloneSets whose selector matches a Pod without a controller, so that
// one adopts it.
func (c *Controller) enqueueOrphan(pod *corev1.Pod) {
	sets, err := c.sets.CloneSets(pod.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, cs := range ownership.Adopters(pod, sets, func(cs *v1alpha1.CloneSet) *metav1.LabelSelector { return cs.Spec.Selector }) {
		c.queue.Add(cache.MetaObjectToName(cs))
	}
}

func (c *Controller) addPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// Seen for the first time already terminating (a restart): a deletion.
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if cs := c.resolveControllerRef(pod.Namespace, ref); cs != nil {
			key := cache.MetaObjectToName(cs)
			c.exp.CreationObserved(key.String(), pod.Name)
			c.queue.Add(key)
		}
		return
	}
	c.enqueueOrphan(pod)
}

func (c *Controller) updatePod(oldObj, newObj any) {
	oldPod, ok1 := oldObj.(*corev1.Pod)
	pod, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == pod.ResourceVersion {
		return
	}
	oldRef, ref := metav1.GetControllerOf(oldPod), metav1.GetControllerOf(pod)
	if oldRef != nil && (ref == nil || oldRef.UID != ref.UID) {
		if cs := c.resolveControllerRef(oldPod.Namespace, oldRef); cs != nil {
			c.queue.Add(cache.MetaObjectToName(cs))
		}
	}
	if ref != nil {
		if cs := c.resolveControllerRef(pod.Namespace, ref); cs != nil {
			key := cache.MetaObjectToName(cs)
			if pod.DeletionTimestamp != nil {
				c.exp.DeletionObserved(key.String(), pod.Name)
			}
			c.queue.Add(key)
		}
		return
	}
	c.enqueueOrphan(pod)
}

func (c *Controller) deletePod(obj any) {
	pod, ok := reconcile.ObjectOf[*corev1.Pod](obj)
	if !ok {
		return
	}
	if cs := c.resolveControllerRef(pod.Namespace, metav1.GetControllerOf(pod)); cs != nil {
		key := cache.MetaObjectToName(cs)
		c.exp.DeletionObserved(key.String(), pod.Name)
		c.queue.Add(key)
	}
}

func (c *Controller) enqueueRevisionOwner(obj any) {
	rev, ok := reconcile.ObjectOf[*appsv1.ControllerRevision](obj)
	if !ok {
		return
	}
	if cs := c.resolveControllerRef(rev.Namespace, metav1.GetControllerOf(rev)); cs != nil {
		c.queue.Add(cache.MetaObjectToName(cs))
	}
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.synced...)
}
