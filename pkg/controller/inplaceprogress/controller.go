// Package inplaceprogress is the controller that drives in-place updates of Pods to their end: it
// applies a pending update when its grace period is over, starts each next batch of containers once
// the previous batch is ready, and sets InPlaceUpdateReady back to True. The steps are the engine's
// (package github.com/inplace-dev/inplace/pkg/inplaceupdate); everything it knows is in the Pod,
// so a restarted controller carries on where the last one stopped.
package inplaceprogress

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate/podwriter"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// Name is the controller's name in logs, events and metrics.
const Name = "inplaceupdate"

// Event reasons of this controller.
const (
	ReasonCompleted   = "InPlaceUpdateCompleted"
	ReasonProgressing = "InPlaceUpdateProgressing"
)

// Controller drives in-place updates of Pods.
type Controller struct {
	kube     kubernetes.Interface
	pods     corelisters.PodLister
	synced   cache.InformerSynced
	queue    reconcile.Queue
	recorder record.EventRecorder
	clock    clock.PassiveClock
	// written is the resourceVersion of this controller's last write to each Pod (by UID), until
	// the informer has caught up with it. A step writes twice (the Pod, then its conditions) and
	// the first write's event comes back while the second is on its way: a sync from that cache
	// would compute the second write again on a stale Pod and conflict (409), once per Pod.
	written sync.Map
	// handedOver is when each Pod (by UID) was first found with a completion inplace-daemon is due
	// to write together with its report (leftToDaemon).
	handedOver sync.Map
}

// daemonCompletionWait is how long a completion is left to inplace-daemon (leftToDaemon) before
// this controller writes it itself: the daemon writes it within milliseconds of the kubelet's
// status, so only a daemon that is down or far behind makes the controller step in.
const daemonCompletionWait = 3 * time.Second

// New builds the controller on the shared Pod informer.
func New(kube kubernetes.Interface, pods coreinformers.PodInformer, recorder record.EventRecorder) (*Controller, error) {
	c := &Controller{
		kube:     kube,
		pods:     pods.Lister(),
		synced:   pods.Informer().HasSynced,
		recorder: recorder,
		clock:    clock.RealClock{},
		queue:    reconcile.NewQueue(Name),
	}
	handlers := reconcile.EnqueueIf(c.queue, needsWork)
	enqueue := handlers.Update
	handlers.Update = func(old, pod *corev1.Pod) {
		// Whoever wrote it (this controller or inplace-daemon), a completion is observed here.
		observeCompletion(old, pod, c.clock.Now())
		enqueue(old, pod)
	}
	// A deleted Pod's last write is of no more use.
	handlers.Delete = func(pod *corev1.Pod) { c.forget(pod.UID) }
	if err := reconcile.Watch(pods.Informer(), "pods", handlers); err != nil {
		return nil, err
	}
	return c, nil
}

// needsWork tells the Pods this controller acts on: an in-place update under way, or the
// InPlaceUpdateReady gate without its condition True (a new Pod, or an interrupted update).
func needsWork(pod *corev1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	if inplaceupdate.AnyInProgress(pod) {
		return true
	}
	if !inplaceupdate.HasReadinessGate(pod) {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == pub.InPlaceUpdateReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return true
}

// Run reconciles until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) {
	reconcile.Run(ctx, Name, workers, c.queue, c.sync, c.synced)
}

// sync takes the next step of one Pod's update, and says when to look again if time, not an
// event, is what the Pod waits for (a grace period).
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	pod, ok, err := reconcile.Found(c.pods.Pods(key.Namespace).Get(key.Name))
	if !ok || err != nil {
		return 0, err
	}
	if !needsWork(pod) {
		c.forget(pod.UID)
		return 0, nil
	}
	if c.cacheBehind(pod) {
		// The event of our own last write is on its way and will queue the Pod again.
		return 0, nil
	}
	now := c.clock.Now()
	written, step, err := podwriter.ApplyTo(ctx, c.kube.CoreV1().Pods(pod.Namespace), pod, func(p *corev1.Pod) (*inplaceupdate.Step, error) {
		step, err := inplaceupdate.Progress(p, now)
		if err == nil {
			if wait := c.leftToDaemon(p, step, now); wait > 0 {
				return &inplaceupdate.Step{State: step.State, RequeueAfter: wait,
					Message: "inplace-daemon completes the update with its report"}, nil
			}
		}
		return step, err
	})
	if err != nil {
		steps.WithLabelValues(resultError).Inc()
		return 0, fmt.Errorf("progressing the in-place update of pod %s: %w", key, err)
	}
	if written != nil && written.ResourceVersion != pod.ResourceVersion {
		c.written.Store(pod.UID, written.ResourceVersion)
	}
	if step.Pod != nil || len(step.Conditions) > 0 || len(step.Resize) > 0 {
		observeStep(step)
		reason := ReasonProgressing
		if step.Done {
			reason = ReasonCompleted
		}
		c.recorder.Event(written, corev1.EventTypeNormal, reason, step.Message)
		klog.FromContext(ctx).V(2).Info("Pod in-place update step", "pod", key, "done", step.Done, "message", step.Message)
	}
	return step.RequeueAfter, nil
}

// leftToDaemon says how much longer the completion step is left to inplace-daemon: a completion
// that goes through pods/status (inplaceupdate.CompletesThroughStatus) on a Pod whose daemon
// report is due (inplaceupdate.ReportBehindStatus: the status shows a container the report does
// not) is written by the daemon together with that report, one Pod write instead of two. After
// daemonCompletionWait, or for any other step, 0: this controller writes it.
func (c *Controller) leftToDaemon(pod *corev1.Pod, step *inplaceupdate.Step, now time.Time) time.Duration {
	if !inplaceupdate.CompletesThroughStatus(pod, step) || !inplaceupdate.ReportBehindStatus(pod) {
		c.handedOver.Delete(pod.UID)
		return 0
	}
	first, _ := c.handedOver.LoadOrStore(pod.UID, now)
	return max(first.(time.Time).Add(daemonCompletionWait).Sub(now), 0)
}

func (c *Controller) forget(uid types.UID) {
	c.written.Delete(uid)
	c.handedOver.Delete(uid)
}

// cacheBehind is true when the cached Pod is older than this controller's last write to it.
// Resource versions are compared as kube-apiserver defines them (comparable integers); one that
// does not compare counts as caught up.
func (c *Controller) cacheBehind(pod *corev1.Pod) bool {
	v, ok := c.written.Load(pod.UID)
	if !ok {
		return false
	}
	if cmp, err := resourceversion.CompareResourceVersion(pod.ResourceVersion, v.(string)); err == nil && cmp < 0 {
		return true
	}
	c.written.Delete(pod.UID)
	return false
}
