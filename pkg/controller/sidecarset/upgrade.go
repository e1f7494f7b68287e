package sidecarset

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
)

// cacheLagRetry is how soon a SidecarSet is looked at again while the Pod cache has not caught up
// with the controller's own writes, or a Pod's other in-place update makes an upgrade wait.
const cacheLagRetry = time.Second

// upgrade runs one pass of the SidecarSet's rolling upgrade (OpenKruise's UpdateSidecarSet after
// the status): nothing for NotUpdate or paused; else the Pods NextUpgrades picks get their new
// sidecar images through pods/inplaceupdate, and Pods that cannot be upgraded in place are marked
// SidecarSetUpgradable=False. It says when to look again when the Pod cache lags its writes.
func (c *Controller) upgrade(ctx context.Context, set *v1alpha1.SidecarSet, pods []*corev1.Pod) (time.Duration, error) {
	strategy := &set.Spec.UpdateStrategy
	if strategy.Type == v1alpha1.NotUpdateSidecarSetStrategyType || strategy.Paused {
		return 0, nil
	}
	if !c.expectations.satisfied(set.Name, pods) {
		return cacheLagRetry, nil
	}
	// A hot upgrade's second step comes first, and a pass that takes one upgrades nothing more
	// (as OpenKruise): the Pods that finish their hot upgrade count as unavailable until then.
	if reset, requeue, err := c.resetHotUpgrades(ctx, set, pods); reset || err != nil {
		return requeue, err
	}
	plan, err := sidecarcontrol.NextUpgrades(set, pods)
	if err != nil {
		return 0, err
	}
	if err := c.markNotUpgradable(ctx, set, plan.NotUpgradable); err != nil {
		return 0, err
	}
	return c.upgradePods(ctx, set, plan.Upgrade)
}

// markNotUpgradable marks the Pods SidecarSetUpgradable=False, with a Warning on each Pod newly
// marked and one on the SidecarSet that counts them (none when no Pod changed, so that every pass
// does not repeat it).
func (c *Controller) markNotUpgradable(ctx context.Context, set *v1alpha1.SidecarSet, pods []*corev1.Pod) error {
	var marked []string
	for _, pod := range pods {
		changed, err := c.setUpgradable(ctx, pod, set, false)
		if err != nil {
			return err
		}
		if changed {
			podUpgrades.WithLabelValues(set.Name, resultNotUpgradable).Inc()
			c.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonNotUpgradable,
				"SidecarSet %s changed more than the images of its sidecars; this Pod keeps its sidecars until it is recreated", set.Name)
			marked = append(marked, klog.KObj(pod).String())
		}
	}
	if len(marked) > 0 {
		slices.Sort(marked) // the cache lists Pods in no order; the message should not change with it
		c.recorder.Eventf(set, corev1.EventTypeWarning, ReasonNotUpgradable,
			"%d Pod(s) cannot be upgraded in place (changes beyond images) and keep their sidecars until recreated: %s",
			len(marked), strings.Join(marked, ", "))
	}
	return nil
}

// upgradePods starts the in-place upgrade of the Pods' sidecars, and says on the SidecarSet which
// Pods it started. A Pod busy with another update waits for a later pass.
func (c *Controller) upgradePods(ctx context.Context, set *v1alpha1.SidecarSet, pods []*corev1.Pod) (time.Duration, error) {
	var requeue time.Duration
	var started []string
	defer func() {
		if len(started) > 0 {
			c.recorder.Eventf(set, corev1.EventTypeNormal, ReasonUpgrading, "Upgrading the sidecars of %d Pod(s) in place: %s",
				len(started), strings.Join(started, ", "))
		}
	}()
	for _, pod := range pods {
		rv, err := c.upgradePod(ctx, set, pod)
		if taken, err := c.taken(ctx, set, pod, err, "Upgrading the sidecars", &requeue); !taken {
			if err != nil {
				return 0, err
			}
			continue
		}
		podUpgrades.WithLabelValues(set.Name, resultStarted).Inc()
		started = append(started, klog.KObj(pod).String())
		c.expectations.expect(set.Name, pod, rv)
		if _, err := c.setUpgradable(ctx, pod, set, true); err != nil {
			return 0, err
		}
	}
	return requeue, nil
}

// upgradePod asks pods/inplaceupdate to upgrade the Pod's sidecars of the SidecarSet to its current
// hash, and returns the Pod's resourceVersion after it.
func (c *Controller) upgradePod(ctx context.Context, set *v1alpha1.SidecarSet, pod *corev1.Pod) (string, error) {
	hash, err := sidecarcontrol.CurrentHash(set)
	if err != nil {
		return "", err
	}
	change, err := sidecarcontrol.Upgrade(pod, set)
	if err != nil {
		return "", err
	}
	out, what, err := c.postUpgrade(ctx, set, pod, hash, set.Status.LatestRevision, change)
	if err != nil {
		return "", err
	}
	msg := fmt.Sprintf("SidecarSet %s upgrades sidecars in place: %s", set.Name, what)
	if what == "" {
		msg = fmt.Sprintf("SidecarSet %s: the sidecars already run its images; recorded its hash %s", set.Name, hash)
	}
	c.recorder.Event(pod, corev1.EventTypeNormal, ReasonUpgrading, msg)
	return out.ResourceVersion, nil
}

// postUpgrade sends one step of the SidecarSet's upgrade of the Pod to pods/inplaceupdate: the
// change's images and annotations, recording hash (and controllerRevision when not empty). It
// returns the answer (its resourceVersion is the Pod's after the write) and the images set, as
// "container=image, ...".
func (c *Controller) postUpgrade(ctx context.Context, set *v1alpha1.SidecarSet, pod *corev1.Pod, hash, controllerRevision string,
	change sidecarcontrol.UpgradeChange) (*v1alpha1.InPlaceUpdate, string, error) {
	body := &v1alpha1.InPlaceUpdate{Spec: v1alpha1.InPlaceUpdateSpec{
		Revision: hash,
		SidecarSet: &v1alpha1.InPlaceUpdateSidecarSet{
			Name:               set.Name,
			ControllerRevision: controllerRevision,
			LeaveService:       sidecarcontrol.LeavesService(set),
		},
	}}
	var what []string
	for _, name := range slices.Sorted(maps.Keys(change.Images)) {
		body.Spec.Containers = append(body.Spec.Containers, v1alpha1.InPlaceUpdateContainer{Name: name, Image: change.Images[name]})
		what = append(what, name+"="+change.Images[name])
	}
	if len(change.Annotations) > 0 {
		body.Spec.Metadata = &v1alpha1.InPlaceUpdateMetadata{Annotations: change.Annotations}
	}
	out, err := c.client.AppsV1alpha1().Pods(pod.Namespace).InPlaceUpdate(ctx, pod.Name, body, metav1.CreateOptions{})
	if err != nil {
		return nil, "", err
	}
	return out, strings.Join(what, ", "), nil
}

// resetHotUpgrades takes the second step of the hot upgrades that are ready for it (the new
// container of each pair runs and the Pod is ready): the old container goes back to the empty
// image. It says whether it took any, and when to look again.
func (c *Controller) resetHotUpgrades(ctx context.Context, set *v1alpha1.SidecarSet, pods []*corev1.Pod) (bool, time.Duration, error) {
	took := false
	var requeue time.Duration
	for _, pod := range pods {
		if !sidecarcontrol.HotUpgradeResetDue(pod, set) {
			continue
		}
		change := sidecarcontrol.HotUpgradeReset(pod, set)
		if change.IsEmpty() {
			continue
		}
		hashes, err := inplaceupdate.SidecarSetHashes(pod, pub.SidecarSetHashKey)
		if err != nil {
			return took, 0, fmt.Errorf("reading the sidecarset hashes of pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		out, what, err := c.postUpgrade(ctx, set, pod, hashes[set.Name].Hash, "", change)
		if taken, err := c.taken(ctx, set, pod, err, "Resetting the idle hot-upgrade sidecars", &requeue); !taken {
			if err != nil {
				return took, 0, err
			}
			continue
		}
		took = true
		podUpgrades.WithLabelValues(set.Name, resultHotReset).Inc()
		c.expectations.expect(set.Name, pod, out.ResourceVersion)
		c.recorder.Eventf(pod, corev1.EventTypeNormal, ReasonHotUpgradeStep,
			"SidecarSet %s: the new sidecars work; the old ones go back to the empty image: %s", set.Name, what)
	}
	return took, requeue, nil
}

// taken sorts the answer err to an in-place request on the Pod (doing says which, for the Event
// and the error): taken when it was accepted; else the Pod waits for a later pass, with requeue
// brought forward (a conflict: another in-place update of the Pod is changing a sidecar, or the
// Pod is going away; a PodUnavailableBudget's 429), or it is gone, or the request failed: an error,
// with a Warning Event on the Pod.
func (c *Controller) taken(ctx context.Context, set *v1alpha1.SidecarSet, pod *corev1.Pod, err error, doing string, requeue *time.Duration) (bool, error) {
	switch {
	case apierrors.IsConflict(err):
		klog.FromContext(ctx).V(2).Info("Sidecar upgrade waits", "sidecarset", set.Name, "pod", klog.KObj(pod), "reason", err.Error())
		podUpgrades.WithLabelValues(set.Name, resultWaiting).Inc()
		*requeue = cacheLagRetry
		return false, nil
	case apierrors.IsNotFound(err):
		return false, nil
	case apierrors.IsTooManyRequests(err):
		*requeue = reconcile.Soonest(*requeue, c.waitForBudget(ctx, set, pod, err))
		return false, nil
	case err != nil:
		podUpgrades.WithLabelValues(set.Name, resultFailed).Inc()
		c.recorder.Eventf(pod, corev1.EventTypeWarning, ReasonUpgradeFailed, "%s of SidecarSet %s: %v", doing, set.Name, err)
		return false, fmt.Errorf("%s of pod %s/%s: %w", strings.ToLower(doing[:1])+doing[1:], pod.Namespace, pod.Name, err)
	}
	return true, nil
}

// setUpgradable writes the Pod's SidecarSetUpgradable condition for this SidecarSet when it changes.
func (c *Controller) setUpgradable(ctx context.Context, pod *corev1.Pod, set *v1alpha1.SidecarSet, upgradable bool) (bool, error) {
	cond, changed := sidecarcontrol.UpgradableCondition(pod, set, upgradable, metav1.NewTime(c.clock.Now()))
	if !changed {
		return false, nil
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{cond}}})
	if err != nil {
		return false, err
	}
	_, err = c.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("setting condition %s of pod %s/%s: %w", cond.Type, pod.Namespace, pod.Name, err)
	}
	return true, nil
}

// expectations remember, per SidecarSet, the resourceVersion each Pod had right after the
// controller upgraded it, so that a pass never decides from a cached Pod older than its own write
// (the Pod would look not upgraded yet and ready, and maxUnavailable would be overrun).
type expectations struct {
	mu sync.Mutex
	// pods maps a SidecarSet name to Pod UID to the resourceVersion written.
	pods map[string]map[types.UID]string
}

func (e *expectations) expect(set string, pod *corev1.Pod, rv string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.pods == nil {
		e.pods = map[string]map[types.UID]string{}
	}
	if e.pods[set] == nil {
		e.pods[set] = map[types.UID]string{}
	}
	e.pods[set][pod.UID] = rv
}

// satisfied is true when every Pod the controller wrote is cached at that version or later (or is
// no longer among the SidecarSet's Pods); it forgets those.
func (e *expectations) satisfied(set string, pods []*corev1.Pod) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	want := e.pods[set]
	if len(want) == 0 {
		return true
	}
	current := map[types.UID]string{}
	for _, p := range pods {
		current[p.UID] = p.ResourceVersion
	}
	for uid, rv := range want {
		cached, ok := current[uid]
		if !ok || !olderVersion(cached, rv) {
			delete(want, uid)
		}
	}
	return len(want) == 0
}

// olderVersion compares two resourceVersions of one object as etcd revisions (numbers); an
// unparsable one counts as not older.
func olderVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x < y
}

// waitForBudget records that a PodUnavailableBudget holds the Pod back (pods/inplaceupdate
// answered 429): the other Pods of the step still go, and this one's turn comes again once a Pod
// of the budget is available again. It returns when to look again.
func (c *Controller) waitForBudget(ctx context.Context, set *v1alpha1.SidecarSet, pod *corev1.Pod, err error) time.Duration {
	klog.FromContext(ctx).V(2).Info("Sidecar upgrade waits for a PodUnavailableBudget", "sidecarset", set.Name, "pod", klog.KObj(pod), "reason", err.Error())
	c.recorder.Eventf(set, corev1.EventTypeNormal, inplacerequest.ReasonBlockedByBudget, "waiting to upgrade the sidecars of pod %s: %s",
		klog.KObj(pod), err.Error())
	podUpgrades.WithLabelValues(set.Name, resultWaiting).Inc()
	return inplacerequest.BudgetRetry
}
