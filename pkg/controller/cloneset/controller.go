// Package cloneset is the CloneSet controller: it keeps a CloneSet's Pods at the desired number,
// records each Pod template as a ControllerRevision, and reports the CloneSet's status.
// OpenKruise's CloneSet controller is the behavioural reference.
package cloneset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
	"github.com/inplace-dev/inplace/pkg/workload/scaffold"
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
	scaffold.Parts[*v1alpha1.CloneSet]
	sets   listers.CloneSetLister
	pods   corelisters.PodLister
	claims corelisters.PersistentVolumeClaimLister
}

// New builds the controller on the CloneSet, Pod, PersistentVolumeClaim and ControllerRevision
// informers.
func New(kube kubernetes.Interface, inplace clientset.Interface, setInf informers.CloneSetInformer,
	podInf coreinformers.PodInformer, pvcInf coreinformers.PersistentVolumeClaimInformer,
	revInf appsinformers.ControllerRevisionInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{sets: setInf.Lister(), pods: podInf.Lister(), claims: pvcInf.Lister()}
	if err := c.Init(scaffold.Config[*v1alpha1.CloneSet]{
		Name: Name, Kind: v1alpha1.SchemeGroupVersion.WithKind("CloneSet"), Resource: "clonesets",
		Namespaced: func(namespace string) ownership.NamespaceLister[*v1alpha1.CloneSet] {
			return c.sets.CloneSets(namespace)
		},
		Selector: func(cs *v1alpha1.CloneSet) *metav1.LabelSelector { return cs.Spec.Selector },
		Kube:     kube, Inplace: inplace, Recorder: recorder,
		Workloads: setInf.Informer(), Pods: podInf.Informer(), Revisions: revInf.Informer(),
		Others:  []cache.SharedIndexInformer{pvcInf.Informer()},
		Deleted: c.deleteSet,
	}); err != nil {
		return nil, err
	}
	// A Pod seen terminating settles its deletion, whatever the event (seen first when the
	// controller restarts); one seen otherwise settles its creation.
	observe := func(key string, pod *corev1.Pod, deleted bool) {
		if deleted || pod.DeletionTimestamp != nil {
			c.Exp.DeletionObserved(key, pod.Name)
		} else {
			c.Exp.CreationObserved(key, pod.Name)
		}
	}
	pods := c.Router.PodHandlers(observe)
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
		c.Router.EnqueueRef(rev.Namespace, metav1.GetControllerOf(rev))
	})); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) deleteSet(cs *v1alpha1.CloneSet) {
	c.Forget(cache.MetaObjectToName(cs).String())
	c.Queue.Add(cache.MetaObjectToName(cs))
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.Queue, c.sync, c.Synced...)
}
