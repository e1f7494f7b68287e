package containerrecreaterequest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/containerrecreate"
	"github.com/inplace-dev/inplace/pkg/podreadiness"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
)

// unreadyFinalizer keeps a request that holds its Pod out of service until the hold is released
// (OpenKruise's name: the same string as the annotation).
const unreadyFinalizer = v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey

// Messages of completed requests (OpenKruise's words where it has them).
const (
	msgPodGone          = "pod has gone"
	msgDeadlineExceeded = "recreating has exceeded the activeDeadlineSeconds"
)

// sync takes the next step of one request and says when to look again if time, not an event, is
// what it waits for.
func (c *Controller) sync(ctx context.Context, key cache.ObjectName) (time.Duration, error) {
	crr, err := c.crrs.ContainerRecreateRequests(key.Namespace).Get(key.Name)
	if isNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	ctx = klog.NewContext(ctx, klog.FromContext(ctx).WithValues("containerrecreaterequest", klog.KObj(crr)))
	now := c.clock.Now()
	age := c.seen.since(crr.UID, now)
	pod, err := c.pod(crr)
	if err != nil {
		return 0, err
	}

	if crr.DeletionTimestamp == nil && pod != nil && (crr.Status.Phase == v1alpha1.ContainerRecreateRequestRecreating ||
		crr.Status.Phase == v1alpha1.ContainerRecreateRequestCompleted) {
		// Also once completed: the kubelet's report of the new instance may come after the
		// daemon's, which completes the request.
		if crr, err = c.syncSnapshot(ctx, crr, pod); err != nil || crr == nil {
			return 0, err
		}
	}
	if crr.DeletionTimestamp != nil || crr.Status.Phase == v1alpha1.ContainerRecreateRequestCompleted {
		return c.finish(ctx, crr, pod, now)
	}
	if reason, message, ok := c.ending(crr, pod, age); ok {
		if (reason == ReasonCompleted || reason == ReasonFailed) && c.olderActive(crr) {
			// The daemon handles a Pod's requests oldest first, so an older one still open is
			// about to be completed: completing in that order too keeps the API's story straight
			// (a request whose containers an older one already replaced is done at once).
			return olderActiveRetry, nil
		}
		return 0, c.complete(ctx, crr, reason, message, now)
	}
	if err := c.acquireUnready(ctx, crr, pod, now); err != nil {
		return 0, err
	}
	return c.nextDeadline(crr, age), nil
}

// olderActiveRetry is how soon a done request waiting for an older one of its Pod is looked at again.
const olderActiveRetry = 200 * time.Millisecond

// olderActive tells whether an older request of the same Pod (same pod-uid label) is not
// Completed yet.
func (c *Controller) olderActive(crr *v1alpha1.ContainerRecreateRequest) bool {
	uid := crr.Labels[v1alpha1.ContainerRecreateRequestPodUIDKey]
	if uid == "" {
		return false
	}
	others, err := c.crrs.ContainerRecreateRequests(crr.Namespace).List(labels.SelectorFromSet(labels.Set{
		v1alpha1.ContainerRecreateRequestPodUIDKey: uid}))
	if err != nil {
		return false
	}
	for _, o := range others {
		if o.UID != crr.UID && o.DeletionTimestamp == nil && o.Status.Phase != v1alpha1.ContainerRecreateRequestCompleted &&
			containerrecreate.Compare(o, crr) < 0 {
			return true
		}
	}
	return false
}

// pod is the request's Pod, nil when it is gone or was recreated (another UID).
func (c *Controller) pod(crr *v1alpha1.ContainerRecreateRequest) (*corev1.Pod, error) {
	pod, err := c.pods.Pods(crr.Namespace).Get(crr.Spec.PodName)
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if uid := crr.Labels[v1alpha1.ContainerRecreateRequestPodUIDKey]; uid != "" && string(pod.UID) != uid {
		return nil, nil
	}
	return pod, nil
}

// ending tells whether the request ends now, why and with what message.
func (c *Controller) ending(crr *v1alpha1.ContainerRecreateRequest, pod *corev1.Pod, age time.Duration) (reason, message string, ok bool) {
	if done, msg := containerrecreate.Done(crr); done {
		if msg != "" {
			return ReasonFailed, msg, true
		}
		return ReasonCompleted, "", true
	}
	if pod == nil || pod.DeletionTimestamp != nil {
		return ReasonPodGone, msgPodGone, true
	}
	if d := crr.Spec.ActiveDeadlineSeconds; d != nil && age >= time.Duration(*d)*time.Second {
		return ReasonDeadlineExceeded, msgDeadlineExceeded, true
	}
	if crr.Status.Phase == "" && age >= c.responseTimeout {
		return ReasonDaemonTimeout, fmt.Sprintf("daemon has not responded for a long time: no inplace-daemon on node %q took the request within %s",
			crr.Labels[v1alpha1.ContainerRecreateRequestNodeNameKey], c.responseTimeout), true
	}
	return "", "", false
}

// nextDeadline is how soon the request must be looked at again for a deadline of its own (0: none).
func (c *Controller) nextDeadline(crr *v1alpha1.ContainerRecreateRequest, age time.Duration) time.Duration {
	var active, response time.Duration // 0: no such deadline
	if d := crr.Spec.ActiveDeadlineSeconds; d != nil {
		active = time.Duration(*d)*time.Second - age
	}
	if crr.Status.Phase == "" {
		response = c.responseTimeout - age
	}
	return reconcile.Soonest(active, response)
}

// complete ends the request: phase Completed, completionTime and message (the container states
// stay the daemon's), then finishes it.
func (c *Controller) complete(ctx context.Context, crr *v1alpha1.ContainerRecreateRequest, reason, message string, now time.Time) error {
	updated := crr.DeepCopy()
	updated.Status.Phase = v1alpha1.ContainerRecreateRequestCompleted
	updated.Status.CompletionTime = &metav1.Time{Time: now}
	updated.Status.Message = message
	written, err := c.client.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("completing the request: %w", err)
	}
	observeCompleted(crr, reason, now)
	eventType, text := corev1.EventTypeNormal, message
	if reason != ReasonCompleted {
		eventType = corev1.EventTypeWarning
	}
	if text == "" {
		text = fmt.Sprintf("recreated containers %s of pod %s", strings.Join(containerNames(crr), ", "), crr.Spec.PodName)
	}
	c.recorder.Event(written, eventType, reason, text)
	klog.FromContext(ctx).V(2).Info("Completed the request", "reason", reason, "message", message)
	pod, err := c.pod(written)
	if err != nil {
		return err
	}
	_, err = c.finish(ctx, written, pod, now)
	return err
}

// finish releases what a completed or deleted request holds (the Pod's KruisePodReady, the
// finalizer, the active label) and deletes it once its TTL passed.
func (c *Controller) finish(ctx context.Context, crr *v1alpha1.ContainerRecreateRequest, pod *corev1.Pod, now time.Time) (time.Duration, error) {
	if slices.Contains(crr.Finalizers, unreadyFinalizer) {
		if pod != nil && podreadiness.Held(pod, holder(crr)) {
			if _, err := podreadiness.Update(ctx, c.kube.CoreV1(), pod, podreadiness.Release(holder(crr)), now); err != nil {
				return 0, err
			}
			c.recorder.Eventf(crr, corev1.EventTypeNormal, ReasonPodReadyReleased, "released pod %s's KruisePodReady condition", pod.Name)
		}
		finalizers := slices.DeleteFunc(slices.Clone(crr.Finalizers), func(f string) bool { return f == unreadyFinalizer })
		var err error
		if crr, err = c.patch(ctx, crr, map[string]any{"finalizers": finalizers}); err != nil || crr == nil {
			return 0, err
		}
	}
	if crr.DeletionTimestamp != nil {
		return 0, nil
	}
	if _, ok := crr.Labels[v1alpha1.ContainerRecreateRequestActiveKey]; ok {
		var err error
		if crr, err = c.patch(ctx, crr, map[string]any{"labels": map[string]any{v1alpha1.ContainerRecreateRequestActiveKey: nil}}); err != nil || crr == nil {
			return 0, err
		}
	}
	ttl, done := crr.Spec.TTLSecondsAfterFinished, crr.Status.CompletionTime
	if ttl == nil || done == nil {
		return 0, nil
	}
	if left := done.Add(time.Duration(*ttl) * time.Second).Sub(now); left > 0 {
		return left, nil
	}
	uid := crr.UID
	err := c.client.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Delete(ctx, crr.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !isNotFound(err) {
		return 0, fmt.Errorf("deleting the request after ttlSecondsAfterFinished: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted the request: ttlSecondsAfterFinished passed")
	return 0, nil
}

// acquireUnready takes the Pod out of service for strategy.unreadyGracePeriodSeconds: finalizer
// first (so that deleting the request releases the Pod), then the hold on KruisePodReady, then
// the annotation the daemon waits for. A Pod without the KruisePodReady gate cannot be taken out
// of service (admission warned about it): the annotation alone lets the daemon go on.
func (c *Controller) acquireUnready(ctx context.Context, crr *v1alpha1.ContainerRecreateRequest, pod *corev1.Pod, now time.Time) error {
	if crr.Spec.Strategy == nil || crr.Spec.Strategy.UnreadyGracePeriodSeconds == nil {
		return nil
	}
	if _, ok := crr.Annotations[v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey]; ok {
		return nil
	}
	if podreadiness.HasGate(pod) {
		if !slices.Contains(crr.Finalizers, unreadyFinalizer) {
			var err error
			if crr, err = c.patch(ctx, crr, map[string]any{"finalizers": append(slices.Clone(crr.Finalizers), unreadyFinalizer)}); err != nil || crr == nil {
				return err
			}
		}
		if _, err := podreadiness.Update(ctx, c.kube.CoreV1(), pod, podreadiness.Hold(holder(crr)), now); err != nil {
			return err
		}
		c.recorder.Eventf(crr, corev1.EventTypeNormal, ReasonPodNotReady, "set pod %s's KruisePodReady condition False for %ds before recreating",
			pod.Name, *crr.Spec.Strategy.UnreadyGracePeriodSeconds)
	}
	_, err := c.patch(ctx, crr, map[string]any{"annotations": map[string]string{
		v1alpha1.ContainerRecreateRequestUnreadyAcquiredKey: now.UTC().Format(time.RFC3339)}})
	return err
}

// holder is the request's hold on its Pod's KruisePodReady condition.
func holder(crr *v1alpha1.ContainerRecreateRequest) podreadiness.Holder {
	return podreadiness.Holder{UserAgent: podreadiness.UserAgentContainerRecreateRequest, Key: crr.Namespace + "/" + crr.Name}
}

// patch merge-patches the request's metadata with its resourceVersion as precondition, and returns
// the written request (nil when it is gone).
func (c *Controller) patch(ctx context.Context, crr *v1alpha1.ContainerRecreateRequest, metadata map[string]any) (*v1alpha1.ContainerRecreateRequest, error) {
	metadata["resourceVersion"] = crr.ResourceVersion
	body, err := json.Marshal(map[string]any{"metadata": metadata})
	if err != nil {
		return nil, err
	}
	written, err := c.client.AppsV1alpha1().ContainerRecreateRequests(crr.Namespace).Patch(ctx, crr.Name, types.MergePatchType, body, metav1.PatchOptions{})
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("patching the request's metadata %s: %w", body, err)
	}
	return written, nil
}

func containerNames(crr *v1alpha1.ContainerRecreateRequest) []string {
	names := make([]string, 0, len(crr.Spec.Containers))
	for _, c := range crr.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}
