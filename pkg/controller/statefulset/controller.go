// Package statefulset is the Advanced StatefulSet controller (apps.kruise.io/v1beta1
// StatefulSet): Pods with stable names <set>-<ordinal> and claims <template>-<set>-<ordinal>,
// created and removed in ordinal order (OrderedReady) or all at once (Parallel), rolled to a new
// revision in reverse ordinal order (or by priority), above a partition, maxUnavailable at a
// time, in place through pods/inplaceupdate when the change allows it. OpenKruise's Advanced
// StatefulSet controller and kube's StatefulSet controller are the behavioural references.
package statefulset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1beta1"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
	"github.com/inplace-dev/inplace/pkg/workload/scaffold"

	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
)

// Name is the controller's name in logs, events and metrics.
const Name = "statefulset"

// Event reasons of this controller (the workloads' shared ones are in package ownership).
const (
	ReasonCannotUpdateInPlace = "CannotUpdateInPlace"
	ReasonFailedResize        = "FailedResize"
	ReasonFailedUpdatePVC     = "FailedUpdatePVC"
	ReasonSuccessfulResize    = "SuccessfulResize"
)

// Controller reconciles Advanced StatefulSets.
type Controller struct {
	scaffold.Parts[*v1beta1.StatefulSet]
	sets   listers.StatefulSetLister
	pods   corelisters.PodLister
	claims corelisters.PersistentVolumeClaimLister
	// classes are the StorageClasses, read when claims resize (WatchClaimResize); nil when not.
	classes storagelisters.StorageClassLister
}

// New builds the controller on the StatefulSet (v1beta1), Pod, PersistentVolumeClaim and
// ControllerRevision informers.
func New(kube kubernetes.Interface, inplace clientset.Interface, setInf informers.StatefulSetInformer,
	podInf coreinformers.PodInformer, claimInf coreinformers.PersistentVolumeClaimInformer,
	revInf appsinformers.ControllerRevisionInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{sets: setInf.Lister(), pods: podInf.Lister(), claims: claimInf.Lister()}
	if err := c.Init(scaffold.Config[*v1beta1.StatefulSet]{
		Name: Name, Kind: v1beta1.SchemeGroupVersion.WithKind("StatefulSet"), Resource: "statefulsets",
		Namespaced: func(namespace string) ownership.NamespaceLister[*v1beta1.StatefulSet] {
			return c.sets.StatefulSets(namespace)
		},
		Selector: func(set *v1beta1.StatefulSet) *metav1.LabelSelector { return set.Spec.Selector },
		Kube:     kube, Inplace: inplace, Recorder: recorder,
		Workloads: setInf.Informer(), Pods: podInf.Informer(), Revisions: revInf.Informer(),
		Others: []cache.SharedIndexInformer{claimInf.Informer()},
	}); err != nil {
		return nil, err
	}
	// The expectations settle against the cache in sync; a Pod gone is also noted here (the cache
	// no longer shows it terminating).
	observe := func(key string, pod *corev1.Pod, deleted bool) {
		if deleted {
			c.Exp.DeletionObserved(key, pod.Name)
		}
	}
	if err := reconcile.Watch(podInf.Informer(), "pods", c.Router.PodHandlers(observe)); err != nil {
		return nil, err
	}
	if err := reconcile.Watch(revInf.Informer(), "controllerrevisions", c.Router.RevisionHandlers()); err != nil {
		return nil, err
	}
	return c, nil
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.Queue, c.sync, c.Synced...)
}
