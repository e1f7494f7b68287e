// Package containerrecreator is the daemon's side of ContainerRecreateRequests (CRRs): on the
// Pod's node it stops the containers a request names through the CRI, so that the kubelet creates
// them again, and reports each container's progress in the request's status. Who writes what is
// in pkg/containerrecreate: this controller owns status.phase Pending and Recreating and
// status.containerRecreateStates; inplace-controller completes the request (phase Completed,
// completionTime, message, the active label), takes the Pod out of service for
// unreadyGracePeriodSeconds and enforces the deadlines.
//
// The flow, per Pod (the queue key is "<namespace>/<podName>", so one Pod's requests are handled
// by one worker at a time):
//
//  1. The active requests of the Pod (a CRR informer filtered on the server by this node's name
//     and the active label, indexed by Pod) whose pod-uid label is the Pod's UID are sorted with
//     containerrecreate.Order; finished ones are skipped. A Pod that is gone, terminating or has
//     another UID is left alone: inplace-controller completes its requests.
//  2. The first request is the one handled; every other one without a phase is marked Pending,
//     so that it is seen to have reached the node.
//  3. plan (pure) compares, per container, what the runtime runs and the kubelet reports with
//     the instance the request names (statusContext), and says which containers are recreated
//     (Succeeded), which failed, and which running instance to stop now: one container at a
//     time, in the request's order, as OpenKruise's daemon does. Without orderedRecreate the
//     next one is stopped as soon as the previous stop (its preStop hook included) is over;
//     with it, once the previous container runs and is ready again.
//  4. The intent (phase Recreating, the container Recreating with isKilled) is written before
//     the stop, then the container's preStop hook runs and the container is stopped; then plan
//     again, from the request as it is now: one that ended meanwhile (activeDeadlineSeconds)
//     stops no further container. A daemon killed in between never stops a replaced instance:
//     only a running instance that the request names is ever stopped (forceRecreate: once, per
//     isKilled).
//  5. When the request is done (every container Succeeded or Failed, see Done), the next request
//     of the Pod is handled in the same sync: none waits for an unrelated event.
//
// Every wait (unreadyGracePeriodSeconds from when this daemon saw the unready-acquired
// annotation; minStartedSeconds from when it first saw the new instance running) is measured on
// this daemon's clock only, from observations it made itself; no time written by another machine
// or by the runtime is compared with it.
package containerrecreator

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/containerrecreate"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
	appsinformers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Name is the controller's name in logs and the workqueue.
const Name = "containerrecreate"

// Event reasons, on the Pod.
const (
	// ReasonKilling: a container is stopped for a request (the kubelet's reason for a stop).
	ReasonKilling = "Killing"
	// ReasonFailedPreStopHook: a container's preStop hook failed; the container is stopped anyway.
	ReasonFailedPreStopHook = "FailedPreStopHook"
	// ReasonFailedStop: the runtime refused to stop a container; its state is Failed.
	ReasonFailedStop = "FailedStopContainer"
)

// podIndex indexes requests by the key of their Pod, containerrecreate.PodKey.
const podIndex = "pod"

// Config tunes the controller; DefaultConfig has the defaults.
type Config struct {
	// MaxStopGracePeriod caps the grace period (the request's terminationGracePeriodSeconds,
	// preStop hook included) of a stopped container (0: killed at once, no preStop).
	MaxStopGracePeriod time.Duration
	// Recheck is how soon a Pod whose containers are being recreated is looked at again besides
	// its own events (0: 1s).
	Recheck time.Duration
	// Clock is this daemon's clock, on which every wait is measured (nil: the real clock).
	Clock clock.PassiveClock
	// Workers is how many Pods are handled at once, instead of the daemon's --workers (0). A
	// worker waits for the stops it makes (a grace period, a preStop hook), so this bounds how
	// many Pods' containers are recreated in parallel.
	Workers int
}

// DefaultConfig is the default Config.
func DefaultConfig() Config {
	return Config{MaxStopGracePeriod: 30 * time.Second, Recheck: time.Second}
}

// Controller is the daemon's CRR controller of one node.
type Controller struct {
	cfg           Config
	kubeClient    kubernetes.Interface
	inplaceClient clientset.Interface
	crrIndexer    cache.Indexer
	crrsSynced    cache.InformerSynced
	pods          corelisters.PodLister
	podsSynced    cache.InformerSynced
	runtime       criruntime.Runtime
	recorder      record.EventRecorder
	queue         reconcile.Queue
	mem           *memory
	// httpClient runs httpGet preStop hooks: like the kubelet's, it does not verify certificates
	// nor keep connections.
	httpClient *http.Client
}

// New builds the controller on an informer of this node's active requests (filtered on the
// server by the node-name and active labels) and one of this node's Pods. recorder may be nil
// (no events).
func New(crrInformer appsinformers.ContainerRecreateRequestInformer, podInformer coreinformers.PodInformer,
	kubeClient kubernetes.Interface, inplaceClient clientset.Interface, runtime criruntime.Runtime,
	recorder record.EventRecorder, cfg Config) (*Controller, error) {
	if cfg.Recheck <= 0 {
		cfg.Recheck = DefaultConfig().Recheck
	}
	cfg.MaxStopGracePeriod = max(cfg.MaxStopGracePeriod, 0)
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if recorder == nil {
		recorder = &record.FakeRecorder{} // discards events
	}
	informer := crrInformer.Informer()
	if err := informer.AddIndexers(cache.Indexers{podIndex: func(obj any) ([]string, error) {
		if r, ok := obj.(*v1alpha1.ContainerRecreateRequest); ok {
			return []string{containerrecreate.PodKey(r)}, nil
		}
		return nil, nil
	}}); err != nil {
		return nil, fmt.Errorf("indexing requests by Pod: %w", err)
	}
	c := &Controller{
		cfg:           cfg,
		kubeClient:    kubeClient,
		inplaceClient: inplaceClient,
		crrIndexer:    informer.GetIndexer(),
		crrsSynced:    informer.HasSynced,
		pods:          podInformer.Lister(),
		podsSynced:    podInformer.Informer().HasSynced,
		runtime:       runtime,
		recorder:      recorder,
		queue:         reconcile.NewQueue(Name),
		mem:           newMemory(cfg.Clock),
		httpClient: &http.Client{Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's lifecycle handlers
			DisableKeepAlives: true,
		}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
	}

	// Every change of a request may let the Pod's next request start (the one before it was
	// completed, deleted or lost its active label), so each one queues its Pod.
	if err := reconcile.Watch(informer, "containerrecreaterequests", reconcile.Handlers[*v1alpha1.ContainerRecreateRequest]{
		Add:    c.enqueueRequest,
		Update: func(_, r *v1alpha1.ContainerRecreateRequest) { c.enqueueRequest(r) },
		Delete: func(r *v1alpha1.ContainerRecreateRequest) {
			c.mem.forgetRequest(r.UID)
			c.enqueueRequest(r)
		},
	}); err != nil {
		return nil, err
	}
	// The kubelet writes the Pod status when a container starts and turns ready: the Pods with
	// active requests are looked at again then.
	if err := reconcile.Watch(podInformer.Informer(), "pods", reconcile.Handlers[*corev1.Pod]{
		Add:    c.enqueuePod,
		Update: func(_, pod *corev1.Pod) { c.enqueuePod(pod) },
		Delete: func(pod *corev1.Pod) {
			c.mem.forgetPod(pod.UID)
			c.enqueuePod(pod)
		},
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Controller) enqueueRequest(r *v1alpha1.ContainerRecreateRequest) {
	c.queue.Add(cache.ObjectName{Namespace: r.Namespace, Name: r.Spec.PodName}) // containerrecreate.PodKey
}

// enqueuePod queues a Pod that has active requests.
func (c *Controller) enqueuePod(pod *corev1.Pod) {
	key := cache.MetaObjectToName(pod)
	requests, err := c.crrIndexer.ByIndex(podIndex, key.String())
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	if len(requests) > 0 {
		c.queue.Add(key)
	}
}

// Run reconciles Pods with the given number of workers until ctx ends, then waits for the
// workers to finish.
func (c *Controller) Run(ctx context.Context, workers int) {
	if c.cfg.Workers > 0 {
		workers = c.cfg.Workers
	}
	klog.FromContext(ctx).Info("Starting controller", "controller", Name, "runtime", c.runtime.Name(), "endpoint", c.runtime.Endpoint())
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.crrsSynced, c.podsSynced)
}
