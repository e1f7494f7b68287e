// Package containerrecreaterequest is inplace-controller's ContainerRecreateRequest (CRR)
// controller. inplace-daemon, on the Pod's node, recreates the containers and reports each one's
// state; this controller owns the rest of a request's life (see pkg/containerrecreate for who
// writes what):
//
//   - with strategy.unreadyGracePeriodSeconds, it takes the Pod out of service first (a hold on
//     the KruisePodReady condition, pkg/podreadiness, behind the finalizer
//     crr.apps.kruise.io/unready-acquired), then marks the request with the annotation
//     crr.apps.kruise.io/unready-acquired, which the daemon waits for;
//   - while the request is Recreating (and once Completed), it records the status of the new
//     container instances from the Pod in the annotation crr.apps.kruise.io/sync-container-statuses
//     (v1beta1's status.containerStatusSnapshot);
//   - it completes the request (phase Completed, completionTime, message) when the daemon is done
//     with every container, when the Pod is gone or was recreated, when activeDeadlineSeconds
//     passed, or when no daemon picked the request up within ResponseTimeout;
//   - once completed (or deleted), it releases the Pod's hold, removes the finalizer and the
//     crr.apps.kruise.io/active label, and deletes the request ttlSecondsAfterFinished later.
//
// Every duration is measured on this controller's clock: the deadline and the daemon timeout from
// when this process first saw the request (a restarted controller starts them again: a deadline
// may pass late, never early), the TTL from the completionTime it wrote itself. No timestamp
// written by another machine is compared with it.
package containerrecreaterequest

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/containerrecreate"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	appsinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	appslisters "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Name is the controller's name in logs, events and metrics.
const Name = "containerrecreaterequest"

// DefaultResponseTimeout is how long a request may wait for a daemon to pick it up (OpenKruise's
// value).
const DefaultResponseTimeout = time.Minute

// Event reasons.
const (
	ReasonCompleted        = "Completed"
	ReasonFailed           = "Failed"
	ReasonPodGone          = "PodGone"
	ReasonDeadlineExceeded = "DeadlineExceeded"
	ReasonDaemonTimeout    = "DaemonNotResponding"
	ReasonPodNotReady      = "PodNotReady"
	ReasonPodReadyReleased = "PodReadyReleased"
)

// podIndex indexes requests by their Pod, "<namespace>/<podName>".
const podIndex = "pod"

// Controller drives ContainerRecreateRequests to their end.
type Controller struct {
	kube     kubernetes.Interface
	client   clientset.Interface
	crrs     appslisters.ContainerRecreateRequestLister
	crrIndex cache.Indexer
	pods     corelisters.PodLister
	synced   []cache.InformerSynced
	queue    reconcile.Queue
	recorder record.EventRecorder
	clock    clock.Clock
	// responseTimeout is how long a request may stay without any phase (no daemon took it).
	responseTimeout time.Duration
	// seen is when this process first saw each request, by UID, on its clock.
	seen *firstSeen
}

// New builds the controller on the shared informers of requests and Pods.
func New(kube kubernetes.Interface, client clientset.Interface, crrs appsinformers.ContainerRecreateRequestInformer,
	pods coreinformers.PodInformer, recorder record.EventRecorder, clk clock.Clock, responseTimeout time.Duration) (*Controller, error) {
	if responseTimeout <= 0 {
		responseTimeout = DefaultResponseTimeout
	}
	c := &Controller{
		kube:            kube,
		client:          client,
		crrs:            crrs.Lister(),
		crrIndex:        crrs.Informer().GetIndexer(),
		pods:            pods.Lister(),
		synced:          []cache.InformerSynced{crrs.Informer().HasSynced, pods.Informer().HasSynced},
		recorder:        recorder,
		clock:           clk,
		responseTimeout: responseTimeout,
		seen:            &firstSeen{at: map[types.UID]time.Time{}},
		queue:           reconcile.NewQueue(Name),
	}
	if err := crrs.Informer().AddIndexers(cache.Indexers{podIndex: func(obj any) ([]string, error) {
		if crr, ok := obj.(*v1alpha1.ContainerRecreateRequest); ok {
			return []string{containerrecreate.PodKey(crr)}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing containerrecreaterequests by pod: %w", err)
	}
	if err := reconcile.Watch(crrs.Informer(), "containerrecreaterequests", reconcile.Handlers[*v1alpha1.ContainerRecreateRequest]{
		Add:    c.enqueue,
		Update: func(_, crr *v1alpha1.ContainerRecreateRequest) { c.enqueue(crr) },
		Delete: func(crr *v1alpha1.ContainerRecreateRequest) { c.seen.forget(crr.UID) },
	}); err != nil {
		return nil, err
	}
	// A Pod deleted, recreated under the same name, or starting to terminate ends its requests; its
	// container statuses are the requests' snapshot.
	if err := reconcile.Watch(pods.Informer(), "pods", reconcile.Handlers[*corev1.Pod]{
		Add: c.enqueuePod,
		Update: func(o, n *corev1.Pod) {
			if (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
				!equality.Semantic.DeepEqual(o.Status.ContainerStatuses, n.Status.ContainerStatuses) {
				c.enqueuePod(n)
			}
		},
		Delete: c.enqueuePod,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueue(crr *v1alpha1.ContainerRecreateRequest) {
	c.queue.Add(cache.MetaObjectToName(crr))
}

// enqueuePod enqueues the requests of a Pod.
func (c *Controller) enqueuePod(pod *corev1.Pod) {
	objs, err := c.crrIndex.ByIndex(podIndex, pod.Namespace+"/"+pod.Name)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, o := range objs {
		if crr, ok := o.(*v1alpha1.ContainerRecreateRequest); ok {
			c.enqueue(crr)
		}
	}
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.synced...)
}

// firstSeen remembers when this process first saw each request.
type firstSeen struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

func (s *firstSeen) since(uid types.UID, now time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.at[uid]
	if !ok {
		s.at[uid] = now
		return 0
	}
	return now.Sub(t)
}

func (s *firstSeen) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.at, uid)
}

// isNotFound is true for a 404 (the object is gone: nothing left to do).
func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
