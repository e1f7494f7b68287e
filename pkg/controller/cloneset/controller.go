// Package cloneset is the CloneSet controller: it keeps a CloneSet's Pods at the desired number,
// records each Pod template as a ControllerRevision, and reports the CloneSet's status.
// OpenKruise's CloneSet controller is the behavioural reference.
package cloneset

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/expectations"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
	"github.com/inplace-dev/inplace/pkg/workload/predownload"
)

// Name is the controller's name in logs, events and metrics.
const Name = "cloneset"

// Event reasons of this controller (the workloads' shared ones are in package ownership).
const (
	ReasonFailedUpdatePodInPlaceOnly = "FailedUpdatePodInPlaceOnly"
	ReasonScaleUpLimited             = "ScaleUpLimited"
)

// Controller reconciles CloneSets.
type Controller struct {
	kube    kubernetes.Interface
	inplace clientset.Interface
	sets    listers.CloneSetLister
	pods    corelisters.PodLister
	owned   ownership.Indexes // the Pods and revisions by controller
	claims  corelisters.PersistentVolumeClaimLister
	synced  []cache.InformerSynced
	queue   reconcile.Queue
	// router takes the events of the Pods, claims and revisions to their CloneSet.
	router   *ownership.Router[*v1alpha1.CloneSet]
	recorder record.EventRecorder
	exp      *expectations.Expectations
	clock    clock.PassiveClock
	// predl pre-downloads the images of in-place rollouts; nil when that is off.
	predl *predownload.Writer
}

// New builds the controller on the CloneSet, Pod, PersistentVolumeClaim and ControllerRevision
// informers.
func New(kube kubernetes.Interface, inplace clientset.Interface, setInf informers.CloneSetInformer,
	podInf coreinformers.PodInformer, pvcInf coreinformers.PersistentVolumeClaimInformer,
	revInf appsinformers.ControllerRevisionInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		kube:    kube,
		inplace: inplace,
		sets:    setInf.Lister(),
		pods:    podInf.Lister(),
		claims:  pvcInf.Lister(),
		synced: []cache.InformerSynced{setInf.Informer().HasSynced, podInf.Informer().HasSynced,
			pvcInf.Informer().HasSynced, revInf.Informer().HasSynced},
		recorder: recorder,
		clock:    clock.RealClock{},
		queue:    reconcile.NewQueue(Name),
	}
	// Through c.clock at each call: a test sets its fake clock after New.
	c.exp = expectations.New(func() time.Time { return c.clock.Now() })
	c.router = ownership.NewRouter(v1alpha1.SchemeGroupVersion.WithKind("CloneSet"),
		func(namespace string) ownership.NamespaceLister[*v1alpha1.CloneSet] {
			return c.sets.CloneSets(namespace)
		},
		func(cs *v1alpha1.CloneSet) *metav1.LabelSelector { return cs.Spec.Selector }, c.queue)
	owned, err := ownership.NewIndexes(podInf.Informer(), revInf.Informer())
	if err != nil {
		return nil, err
	}
	c.owned = owned
	if err := reconcile.Watch(setInf.Informer(), "clonesets", c.router.WorkloadHandlers(c.deleteSet)); err != nil {
		return nil, err
	}
	// A Pod seen terminating settles its deletion, whatever the event (seen first when the
	// controller restarts); one seen otherwise settles its creation.
	observe := func(key string, pod *corev1.Pod, deleted bool) {
		if deleted || pod.DeletionTimestamp != nil {
			c.exp.DeletionObserved(key, pod.Name)
		} else {
			c.exp.CreationObserved(key, pod.Name)
		}
	}
	pods := c.router.PodHandlers(observe)
	route := pods.Update
	pods.Update = func(old, pod *corev1.Pod) {
		// A resync: nothing changed.
		if old.ResourceVersion != pod.ResourceVersion {
			route(old, pod)
		}
	}
	if err := reconcile.Watch(podInf.Informer(), "pods", pods); err != nil {
		return nil, err
	}
	if err := reconcile.Watch(pvcInf.Informer(), "persistentvolumeclaims", reconcile.Handlers[*corev1.PersistentVolumeClaim]{
		Add:    func(pvc *corev1.PersistentVolumeClaim) { c.enqueueClaimOwner(pvc, false) },
		Update: func(_, pvc *corev1.PersistentVolumeClaim) { c.enqueueClaimOwner(pvc, false) },
		Delete: func(pvc *corev1.PersistentVolumeClaim) { c.enqueueClaimOwner(pvc, true) },
	}); err != nil {
		return nil, err
	}
	// A revision reaches the CloneSet that controls it (orphan revisions wait for its sync).
	if err := reconcile.Watch(revInf.Informer(), "controllerrevisions", reconcile.OnChange(func(rev *appsv1.ControllerRevision) {
		c.router.EnqueueRef(rev.Namespace, metav1.GetControllerOf(rev))
	})); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) deleteSet(cs *v1alpha1.CloneSet) {
	c.exp.Forget(cache.MetaObjectToName(cs).String())
	if c.predl != nil {
		c.predl.Forget(cache.MetaObjectToName(cs).String())
	}
	c.queue.Add(cache.MetaObjectToName(cs))
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.synced...)
}
