package containerrecreator

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/containerrecreate"
	"github.com/inplace-dev/inplace/pkg/daemon/criruntime"
)

const (
	// conflictRetry is how soon a Pod is looked at again after a status write lost to another
	// writer (the cache then has the newer request).
	conflictRetry = 100 * time.Millisecond
	// defaultGracePeriod is the grace period of a request without terminationGracePeriodSeconds
	// (admission fills it from the Pod), as the Pod's default.
	defaultGracePeriod = 30 * time.Second
	// minStopGracePeriod is the least time a container is given to stop after its preStop hook,
	// as the kubelet's minimumGracePeriodInSeconds.
	minStopGracePeriod = 2 * time.Second
)

// errConflict: a status write lost to another writer.
var errConflict = errors.New("the request changed")

// sync handles the requests of one Pod, one after the other, oldest first. It returns how soon
// to look at the Pod again (0: on its next event only).
func (c *Controller) sync(ctx context.Context, podKey cache.ObjectName) (time.Duration, error) {
	namespace, name, key := podKey.Namespace, podKey.Name, podKey.String() // key: as containerrecreate.PodKey
	logger := klog.FromContext(ctx).WithValues("pod", klog.KRef(namespace, name))
	ctx = klog.NewContext(ctx, logger)

	pod, err := c.getPod(ctx, namespace, name)
	if err != nil {
		return 0, err
	}
	if pod == nil || pod.DeletionTimestamp != nil {
		return 0, nil // inplace-controller completes the requests of a Pod that has gone
	}

	handled := map[types.UID]bool{}
	for {
		requests, err := c.activeRequests(key, pod, handled)
		if err != nil {
			return 0, err
		}
		if len(requests) == 0 {
			return 0, nil
		}
		first := requests[0]
		for _, other := range requests[1:] {
			if other.Status.Phase != "" {
				continue
			}
			status := *other.Status.DeepCopy()
			status.Phase = v1alpha1.ContainerRecreateRequestPending
			if _, err := c.writeStatus(ctx, other, status); errors.Is(err, errConflict) {
				return conflictRetry, nil
			} else if err != nil {
				return 0, err
			}
		}

		after, done, err := c.syncRequest(ctx, first, pod)
		if errors.Is(err, errConflict) {
			return conflictRetry, nil
		} else if err != nil {
			return 0, err
		}
		if !done {
			return after, nil
		}
		// Done: the next request of the Pod goes on at once, not at some later event.
		handled[first.UID] = true
	}
}

// getPod is the Pod from the node's cache, else from the API server (a Pod just created may not
// be in the cache yet); nil when it does not exist.
func (c *Controller) getPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod, err := c.pods.Pods(namespace).Get(name)
	if err == nil {
		return pod, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	pod, err = c.kubeClient.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("getting pod %s/%s: %w", namespace, name, err)
	}
	return pod, nil
}

// activeRequests are the Pod's requests this daemon still has to handle, in the order to handle
// them: not finished, for this very Pod (pod-uid label), not handled in this sync already.
func (c *Controller) activeRequests(key string, pod *corev1.Pod, handled map[types.UID]bool) ([]*v1alpha1.ContainerRecreateRequest, error) {
	objs, err := c.crrIndexer.ByIndex(podIndex, key)
	if err != nil {
		return nil, err
	}
	var requests []*v1alpha1.ContainerRecreateRequest
	for _, obj := range objs {
		r, ok := obj.(*v1alpha1.ContainerRecreateRequest)
		if !ok {
			continue
		}
		r = c.mem.latest(r)
		if handled[r.UID] || containerrecreate.Finished(r) || r.Labels[v1alpha1.ContainerRecreateRequestPodUIDKey] != string(pod.UID) {
			continue
		}
		requests = append(requests, r)
	}
	containerrecreate.Order(requests)
	return requests, nil
}

// syncRequest handles one request: it writes the container states, stops the containers due now
// and says how soon to look again, and whether the request is done (Done).
func (c *Controller) syncRequest(ctx context.Context, r *v1alpha1.ContainerRecreateRequest, pod *corev1.Pod) (time.Duration, bool, error) {
	logger := klog.FromContext(ctx).WithValues("containerRecreateRequest", klog.KObj(r))
	ctx = klog.NewContext(ctx, logger)

	// One container is stopped at a time (plan); once its stop is over (its preStop hook, its
	// grace period), plan again at once: the next container is due then, unless orderedRecreate
	// waits for this one to run again. Each round stops another instance (or makes a container
	// Failed), so this ends.
	var p planResult
	for round := 0; ; round++ {
		if round > 0 {
			// The stop took its time: the request may have ended meanwhile (inplace-controller
			// completed it at activeDeadlineSeconds, or it was deleted); the containers after the
			// one stopped are then left alone. A status write from a stale version would fail
			// anyway (409), this also covers a stop planned with no write before it.
			// Only the end is read from the cache: it may not show this daemon's own writes of the
			// round yet (two in a row: the intent, then a failed stop), so the request this
			// sync wrote last stays the one it goes on from.
			fresh := c.refresh(r)
			if fresh == nil || fresh.DeletionTimestamp != nil || fresh.Status.Phase == v1alpha1.ContainerRecreateRequestCompleted {
				logger.V(2).Info("Request ended while a container was stopped, stopping no more containers")
				return 0, true, nil
			}
			// The kubelet may have reported the stopped container meanwhile.
			if fresh, err := c.pods.Pods(pod.Namespace).Get(pod.Name); err == nil && fresh.UID == pod.UID {
				pod = fresh
			}
		}
		containers, err := c.runtime.ListPodContainers(ctx, string(pod.UID))
		if err != nil {
			return 0, false, err
		}
		var running []string
		for _, rc := range containers {
			if rc.State == criruntime.StateRunning {
				running = append(running, rc.ID)
			}
		}
		in := planInput{
			crr: r, pod: pod, containers: containers, runtimeName: c.runtime.Name(), now: c.cfg.Clock.Now(),
			runningSince: c.mem.observeRunning(pod.UID, running),
			stopped:      c.mem.stoppedIDs(),
		}
		if _, ok := r.Annotations[v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]; ok {
			in.unreadySince = c.mem.observeUnready(r.UID)
		}
		p = plan(in)

		// The intent first: a daemon killed after this write and before the stop does not stop
		// a replaced instance when it starts again (plan only stops the instance the request
		// names).
		if r, err = c.writeStatus(ctx, r, p.status); err != nil {
			return 0, false, err
		}
		if r, err = c.stopAndReport(ctx, r, pod, p.stops); err != nil {
			return 0, false, err
		}
		if len(p.stops) == 0 {
			break
		}
	}

	if done, msg := containerrecreate.Done(r); done {
		logger.V(2).Info("Containers recreated", "message", msg)
		return 0, true, nil
	}
	after := p.after
	if p.waiting {
		after = minPositive(after, c.cfg.Recheck)
	}
	return after, false, nil
}

// refresh is the request as the daemon's cache shows it; nil when the cache no longer has it
// (deleted, or no longer active: inplace-controller completed it).
func (c *Controller) refresh(r *v1alpha1.ContainerRecreateRequest) *v1alpha1.ContainerRecreateRequest {
	obj, ok, err := c.crrIndexer.GetByKey(r.Namespace + "/" + r.Name)
	if err != nil || !ok {
		return nil
	}
	cached, ok := obj.(*v1alpha1.ContainerRecreateRequest)
	if !ok || cached.UID != r.UID {
		return nil
	}
	return cached
}

// stopAndReport stops the containers and writes those the runtime did not stop as Failed.
func (c *Controller) stopAndReport(ctx context.Context, r *v1alpha1.ContainerRecreateRequest, pod *corev1.Pod,
	stops []stopAction) (*v1alpha1.ContainerRecreateRequest, error) {
	if len(stops) == 0 {
		return r, nil
	}
	failures := c.stopContainers(ctx, r, pod, stops)
	if len(failures) == 0 {
		return r, nil
	}
	status := *r.Status.DeepCopy()
	for i := range status.ContainerRecreateStates {
		s := &status.ContainerRecreateStates[i]
		if err, ok := failures[s.Name]; ok {
			if cause := errors.Unwrap(err); cause != nil {
				err = cause // the runtime's answer, without criruntime's "stopping container <id>"
			}
			*s = state(s.Name, v1alpha1.ContainerRecreateRequestFailed, msgStopFailedPrefix+err.Error(), false)
		}
	}
	return c.writeStatus(ctx, r, status)
}

// writeStatus writes the request's status over the version given, unless it is that status
// already; it returns the request as written.
func (c *Controller) writeStatus(ctx context.Context, r *v1alpha1.ContainerRecreateRequest,
	status v1alpha1.ContainerRecreateRequestStatus) (*v1alpha1.ContainerRecreateRequest, error) {
	if equality.Semantic.DeepEqual(r.Status, status) {
		return r, nil
	}
	update := r.DeepCopy()
	update.Status = status
	written, err := c.inplaceClient.AppsV1alpha1().ContainerRecreateRequests(r.Namespace).UpdateStatus(ctx, update, metav1.UpdateOptions{})
	switch {
	case apierrors.IsConflict(err):
		klog.FromContext(ctx).V(2).Info("Request changed meanwhile, looking again", "containerRecreateRequest", klog.KObj(r))
		return nil, errConflict
	case apierrors.IsNotFound(err):
		return nil, errConflict // deleted: the informer tells
	case err != nil:
		return nil, fmt.Errorf("writing the status of ContainerRecreateRequest %s/%s: %w", r.Namespace, r.Name, err)
	}
	c.mem.recordWrite(r.ResourceVersion, written)
	klog.FromContext(ctx).V(2).Info("Wrote request status", "containerRecreateRequest", klog.KObj(r),
		"phase", status.Phase, "states", status.ContainerRecreateStates)
	return written, nil
}

// stopContainers runs the preStop hook of each container and stops it, one after the other
// (plan names one at a time); it returns the containers (by name) the runtime did not stop,
// with why.
func (c *Controller) stopContainers(ctx context.Context, r *v1alpha1.ContainerRecreateRequest, pod *corev1.Pod, stops []stopAction) map[string]error {
	grace := defaultGracePeriod
	if s := r.Spec.Strategy; s != nil && s.TerminationGracePeriodSeconds != nil && *s.TerminationGracePeriodSeconds >= 0 {
		grace = time.Duration(*s.TerminationGracePeriodSeconds) * time.Second
	}
	grace = min(grace, c.cfg.MaxStopGracePeriod)

	failures := map[string]error{}
	for _, s := range stops {
		c.mem.markStopped(s.id) // before the stop: a sync from a stale cache never repeats it
		if err := c.stopContainer(ctx, r, pod, &r.Spec.Containers[s.index], s.id, grace); err != nil {
			failures[s.name] = err
		}
	}
	return failures
}

// stopContainer runs the container's preStop hook within the grace period, then stops it with
// what is left of it (at least minStopGracePeriod, at most MaxStopGracePeriod). A failed hook
// is reported and the container stopped anyway, as the kubelet does.
func (c *Controller) stopContainer(ctx context.Context, r *v1alpha1.ContainerRecreateRequest, pod *corev1.Pod,
	spec *v1alpha1.ContainerRecreateRequestContainer, id string, grace time.Duration) error {
	logger := klog.FromContext(ctx).WithValues("container", spec.Name, "containerID", c.runtime.Name()+"://"+id)
	logger.Info("Stopping container", "gracePeriod", grace)
	c.recorder.Eventf(pod, corev1.EventTypeNormal, ReasonKilling, "Stopping container %s by ContainerRecreateRequest %s", spec.Name, r.Name)

	start := c.cfg.Clock.Now()
	if spec.PreStop != nil && grace > 0 {
		if err := c.runPreStop(ctx, pod, spec, id, grace); err != nil {
			logger.Info("PreStop hook failed, stopping the container anyway", "err", err)
			c.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonFailedPreStopHook,
				"PreStop hook of container %s failed (ContainerRecreateRequest %s): %v", spec.Name, r.Name, err)
		}
	}
	timeout := min(max(grace-c.cfg.Clock.Since(start), minStopGracePeriod), c.cfg.MaxStopGracePeriod)
	if err := c.runtime.StopContainer(ctx, id, timeout); err != nil {
		c.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonFailedStop,
			"Stopping container %s by ContainerRecreateRequest %s failed: %v", spec.Name, r.Name, err)
		return err
	}
	return nil
}
