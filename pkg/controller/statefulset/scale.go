package statefulset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/workload/availability"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
)

// scalePlan is what scaling does in one sync: the ordinals to create, the failed Pods and those the
// preDelete hook released to delete (to be created again), and the Pods beyond the wanted
// ordinals to delete (scaled down).
type scalePlan struct {
	create    []int
	recreate  []*corev1.Pod
	released  []*corev1.Pod
	condemned []*corev1.Pod
}

// planScale decides scaling as kube's StatefulSet does. Pods of the wanted ordinals that failed are
// deleted (a later sync creates them again); missing ones are created. With OrderedReady one step
// at a time in ordinal order: an ordinal is created only when every lower one is available (Ready
// for rollingUpdate.minReadySeconds, as kube's StatefulSet with minReadySeconds), and Pods beyond
// the wanted ordinals are deleted highest first, one at a time, once every wanted Pod is available.
// With Parallel, all of it at once, but for scaleStrategy.maxUnavailable (scaleBudget). When a Pod
// becomes available is no event: calculateStatus's wait brings the next sync.
func planScale(set *v1beta1.StatefulSet, pods []*corev1.Pod, now time.Time) scalePlan {
	wanted := wantedOrdinals(set)
	wantedSet := sets.New(wanted...)
	byOrd := map[int]*corev1.Pod{}
	var condemned []*corev1.Pod
	for _, p := range pods {
		if o := ordinalOf(set, p); o >= 0 && wantedSet.Has(o) {
			byOrd[o] = p
		} else {
			condemned = append(condemned, p)
		}
	}
	ordered := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	budget := scaleBudget(set, len(wanted))
	minReady := minReadySeconds(set)
	var plan scalePlan
	for _, o := range wanted {
		p := byOrd[o]
		switch {
		case p == nil && budget == 0:
			continue // scaleStrategy.maxUnavailable reached: created once others are available
		case p == nil:
			plan.create = append(plan.create, o)
		case p.DeletionTimestamp != nil, lifecycle.WaitsForDeletion(set.Spec.Lifecycle, p):
		case lifecycle.State(p) == pub.LifecycleStatePreparingDelete:
			// Released by the preDelete hook: deleted, to be created again. (OpenKruise leaves it
			// in PreparingDelete, unavailable for good, when the deletion it waited for was a
			// scale-down since cancelled.)
			plan.released = append(plan.released, p)
		case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
			plan.recreate = append(plan.recreate, p)
		default:
			if ok, _ := availability.Available(p, minReady, now); ok {
				continue
			}
		}
		if ordered {
			// The first ordinal not available holds the ones above it.
			return plan
		}
		if budget > 0 {
			budget--
		}
	}
	// Highest ordinal first; with OrderedReady every wanted Pod is available by here, and, as kube's
	// StatefulSet, a Pod not available is deleted only when it is the lowest unready one (the others
	// wait for it).
	var firstUnhealthy *corev1.Pod
	for _, p := range condemned {
		if !healthy(p) {
			firstUnhealthy = p
			break
		}
	}
	slices.Reverse(condemned)
	for _, p := range condemned {
		if p.DeletionTimestamp != nil || lifecycle.WaitsForDeletion(set.Spec.Lifecycle, p) {
			if ordered {
				break // wait for it to go before the next
			}
			continue
		}
		if ok, _ := availability.Available(p, minReady, now); ordered && !ok && p != firstUnhealthy {
			break
		}
		plan.condemned = append(plan.condemned, p)
		if ordered {
			break
		}
	}
	return plan
}

// healthy is OpenKruise's isHealthy for a Pod not terminating: Ready, and in lifecycle state Normal
// (or none).
func healthy(p *corev1.Pod) bool {
	s := lifecycle.State(p)
	return availability.Ready(p) && (s == "" || s == pub.LifecycleStateNormal)
}

// scaleBudget is scaleStrategy.maxUnavailable with Parallel, as OpenKruise counts it: walking the
// wanted ordinals lowest first, each Pod not available (missing and created now, terminating,
// failed, or not Ready for minReadySeconds) takes one, and no Pod is created once none is left. A
// percentage of replicas rounds down, at least 1. -1 is no limit: the field unset, or OrderedReady,
// which makes one Pod at a time anyway. Unlike OpenKruise, a failed Pod is deleted (to be created
// again) even when the budget is spent: it is unavailable either way, and OpenKruise's waiting
// never ends with maxUnavailable 1.
func scaleBudget(set *v1beta1.StatefulSet, replicas int) int {
	ss := set.Spec.ScaleStrategy
	if ss == nil || ss.MaxUnavailable == nil || set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		return -1
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(ss.MaxUnavailable, replicas, false)
	if err != nil {
		return -1 // validation refuses it
	}
	return max(n, 1)
}

// partitionOf is rollingUpdate.partition: the first that many wanted ordinals (positions from
// ordinals.start, reserved ordinals skipped) keep the current revision.
func partitionOf(set *v1beta1.StatefulSet) int {
	if ru := set.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil &&
		set.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		return int(*ru.Partition)
	}
	return 0
}

// scale carries out planScale and says whether it did anything.
func (c *Controller) scale(ctx context.Context, set *v1beta1.StatefulSet, pods []*corev1.Pod, revs history.Revisions) (bool, error) {
	plan := planScale(set, pods, c.Clock.Now())
	if len(plan.create)+len(plan.recreate)+len(plan.released)+len(plan.condemned) == 0 {
		return false, nil
	}
	var errs []error
	for _, p := range plan.recreate {
		errs = append(errs, c.deletePod(ctx, set, p, "SuccessfulDelete", "its Pod failed; it is created again"))
	}
	for _, p := range plan.released {
		errs = append(errs, c.deletePod(ctx, set, p, "SuccessfulDelete", "released by the preDelete hook; it is created again"))
	}
	for _, p := range plan.condemned {
		errs = append(errs, c.deletePod(ctx, set, p, "SuccessfulDelete", "scaling down"))
		if o := ordinalOf(set, p); whenScaledDelete(set) && o >= 0 {
			errs = append(errs, c.deleteClaims(ctx, set, o))
		}
	}
	partition := partitionOf(set)
	position := map[int]int{}
	for i, o := range wantedOrdinals(set) {
		position[o] = i
	}
	for _, o := range plan.create {
		rev := revs.Update
		if revs.Current != nil && currentRevisionNeeded(set, pods, o, position[o], partition, revs.Update.Name) {
			rev = revs.Current
		}
		errs = append(errs, c.createPod(ctx, set, rev, o))
	}
	return true, errors.Join(errs...)
}

// currentRevisionNeeded tells whether the Pod created for ordinal o (at position among the
// wanted ordinals) keeps the current revision: one of the first partition positions; with
// unorderedUpdate, as OpenKruise's isCurrentRevisionNeeded, when fewer than partition other Pods
// are not counted as updated (countsAsUpdated, so with PreparingUpdateAsUpdate a Pod held in
// PreparingUpdate counts as updated and the new Pod keeps the partition).
func currentRevisionNeeded(set *v1beta1.StatefulSet, pods []*corev1.Pod, o, position, partition int, updateRevision string) bool {
	if !unordered(set) {
		return position < partition
	}
	wanted := sets.New(wantedOrdinals(set)...)
	notUpdated := 0
	for _, p := range pods {
		if po := ordinalOf(set, p); po != o && wanted.Has(po) && !countsAsUpdated(p, updateRevision) {
			notUpdated++
		}
	}
	return notUpdated < partition
}

// restoreClaims creates the missing claims of the set's Pending Pods, as kube's and OpenKruise's
// StatefulSets do: a claim deleted by hand (or by a retention policy that was changed) would
// otherwise leave its Pod Pending for good, its volume never bound.
func (c *Controller) restoreClaims(ctx context.Context, set *v1beta1.StatefulSet, pods []*corev1.Pod) error {
	var errs []error
	for _, p := range pods {
		if p.Status.Phase != corev1.PodPending || p.DeletionTimestamp != nil {
			continue
		}
		if o := ordinalOf(set, p); o >= 0 {
			errs = append(errs, c.ensureClaims(ctx, set, o))
		}
	}
	return errors.Join(errs...)
}

func whenScaledDelete(set *v1beta1.StatefulSet) bool {
	p := set.Spec.PersistentVolumeClaimRetentionPolicy
	return p != nil && p.WhenScaled == v1beta1.DeletePersistentVolumeClaimRetentionPolicyType
}

// createPod creates the Pod of an ordinal at a revision, its claims first.
func (c *Controller) createPod(ctx context.Context, set *v1beta1.StatefulSet, rev *appsv1.ControllerRevision, ordinal int) error {
	template, err := history.Template(rev)
	if err != nil {
		return err
	}
	if err := c.ensureClaims(ctx, set, ordinal); err != nil {
		return err
	}
	pod := newPod(set, template, rev.Name, ordinal)
	key := cache.MetaObjectToName(set).String()
	c.Exp.ExpectCreations(key, pod.Name)
	if _, err := c.Kube.CoreV1().Pods(set.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		c.Exp.CreationObserved(key, pod.Name)
		if apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		c.Recorder.Eventf(set, corev1.EventTypeWarning, ownership.ReasonFailedCreate, "failed to create pod %s: %v", pod.Name, err)
		return fmt.Errorf("creating pod %s: %w", pod.Name, err)
	}
	klog.FromContext(ctx).Info("Created Pod", "statefulset", klog.KObj(set), "pod", klog.KObj(pod), "revision", rev.Name)
	c.Recorder.Eventf(set, corev1.EventTypeNormal, ownership.ReasonSuccessfulCreate, "create Pod %s in StatefulSet %s successful (revision %s)", pod.Name, set.Name, rev.Name)
	return nil
}

// ensureClaims creates the claims of an ordinal that do not exist yet; a claim being deleted is
// waited for (the Pod would mount a claim about to go).
func (c *Controller) ensureClaims(ctx context.Context, set *v1beta1.StatefulSet, ordinal int) error {
	for i := range set.Spec.VolumeClaimTemplates {
		want := newClaim(set, &set.Spec.VolumeClaimTemplates[i], ordinal)
		got, err := c.claims.PersistentVolumeClaims(set.Namespace).Get(want.Name)
		if err == nil {
			if got.DeletionTimestamp != nil {
				return fmt.Errorf("claim %s of pod %s is being deleted; the pod waits for it to go", want.Name, podName(set, ordinal))
			}
			continue
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		if _, err := c.Kube.CoreV1().PersistentVolumeClaims(set.Namespace).Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			c.Recorder.Eventf(set, corev1.EventTypeWarning, ownership.ReasonFailedCreate, "failed to create claim %s: %v", want.Name, err)
			return fmt.Errorf("creating claim %s: %w", want.Name, err)
		}
		c.Recorder.Eventf(set, corev1.EventTypeNormal, ownership.ReasonSuccessfulCreate, "create Claim %s for Pod %s in StatefulSet %s success",
			want.Name, podName(set, ordinal), set.Name)
	}
	return nil
}

// deleteClaims deletes the claims of an ordinal scaled away (whenScaled Delete).
func (c *Controller) deleteClaims(ctx context.Context, set *v1beta1.StatefulSet, ordinal int) error {
	var errs []error
	for _, t := range set.Spec.VolumeClaimTemplates {
		name := claimName(set, t.Name, ordinal)
		err := c.Kube.CoreV1().PersistentVolumeClaims(set.Namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting claim %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// deletePod deletes a Pod (only that very Pod: a precondition on its UID), expected first. A Pod
// the preDelete hook holds is not deleted: it moves to PreparingDelete and waits there; the sync
// that finds it released deletes it (planScale).
func (c *Controller) deletePod(ctx context.Context, set *v1beta1.StatefulSet, pod *corev1.Pod, reason, why string) error {
	if lifecycle.Hooked(lifecycle.PreDeleteHook(set.Spec.Lifecycle), pod) {
		moved, err := c.setLifecycle(ctx, set, pod, pub.LifecycleStatePreparingDelete, nil)
		if moved {
			klog.FromContext(ctx).Info("Pod held by the preDelete hook", "statefulset", klog.KObj(set), "pod", klog.KObj(pod), "why", why)
		}
		return err
	}
	if err := c.DeletePod(ctx, set, pod); err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Deleted Pod", "statefulset", klog.KObj(set), "pod", klog.KObj(pod), "why", why)
	c.Recorder.Eventf(set, corev1.EventTypeNormal, reason, "delete Pod %s in StatefulSet %s: %s", pod.Name, set.Name, why)
	return nil
}
