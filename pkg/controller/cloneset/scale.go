package cloneset

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/updatesort"
	"github.com/inplace-dev/inplace/pkg/workload/availability"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
	"github.com/inplace-dev/inplace/pkg/workload/ownership"
)

// podTemplateHashLabel is the label kube's Deployments give Pods; OpenKruise sets it too.
const podTemplateHashLabel = "pod-template-hash"

// scalingExcludePreparingDeleteLabel, "true" on a CloneSet, makes Pods waiting in PreparingDelete
// not count towards spec.replicas, so their replacements are created at once (OpenKruise's label;
// its controller flag --cloneset-scaling-exclude-preparing-delete has no counterpart here).
const scalingExcludePreparingDeleteLabel = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete"

// scale takes the first scaling step planScale finds, in OpenKruise's order, and tells whether it
// changed anything (then the rolling update waits for the next sync, as OpenKruise's does):
//
//  1. Pods waiting in PreparingDelete that spec.replicas needs again go back to PreparingNormal
//     (scale-in cancelled; not with a markPodNotReady hook);
//  2. missing Pods are created, no more than scaleStrategy.maxUnavailable allows (a Warning
//     ScaleUpLimited event says when it held creations back); while Pods are missing nothing is
//     deleted;
//  3. Pods in PreparingDelete that their preDelete hook released are deleted;
//  4. the Pods asked for (scaleStrategy.podsToDelete, label specified-delete) are deleted: those not
//     ready at once, ready ones within the deletion budget of updateStrategy.maxUnavailable;
//  5. surplus Pods are deleted (within the same budget), only once no deletion asked for is pending.
//
// Deletions honour the preDelete hook: a Pod it holds moves to PreparingDelete instead.
func (c *Controller) scale(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod, revs history.Revisions) (bool, error) {
	plan, err := planScale(cs, pods, revs.Update.Name, revs.Current.Name, c.Clock.Now())
	if err != nil {
		return false, err
	}
	if len(plan.cancelDelete) > 0 {
		var errs []error
		for _, p := range plan.cancelDelete {
			errs = append(errs, c.setLifecycle(ctx, cs, p, pub.LifecycleStatePreparingNormal, nil))
		}
		return true, errors.Join(errs...)
	}
	if plan.scaleUpLimited {
		c.Recorder.Eventf(cs, corev1.EventTypeWarning, ReasonScaleUpLimited,
			"scaleUp is limited because of scaleStrategy.maxUnavailable, limit: %d", plan.createCurrent+plan.createUpdate)
	}
	if plan.scaleUp {
		return c.createPlanned(ctx, cs, pods, revs, plan)
	}
	if len(plan.preDeleteReleased) > 0 {
		return true, c.deletePods(ctx, cs, plan.preDeleteReleased, "SpecifiedDelete", "released by the preDelete hook")
	}
	if len(plan.specified) > 0 {
		return true, c.deletePods(ctx, cs, plan.specified, "SpecifiedDelete",
			"asked for by scaleStrategy.podsToDelete or label "+v1alpha1.SpecifiedDeleteKey)
	}
	if len(plan.scaleDown) > 0 {
		return true, c.deletePods(ctx, cs, plan.scaleDown, "ScaleDown", plan.scaleDownWhy)
	}
	return false, nil
}

// createPlanned creates the Pods of a scale-up plan, those at the current revision first.
func (c *Controller) createPlanned(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod, revs history.Revisions, plan scalePlan) (bool, error) {
	n := plan.createCurrent + plan.createUpdate
	if n == 0 {
		return false, nil
	}
	// One choice of instance ids for both revisions, so that no free PVC is given twice.
	claims, err := c.ownedClaims(cs)
	if err != nil {
		return false, err
	}
	ch := chooseInstanceIDs(cs, claims, pods, c.podState(cs.Namespace), n, func() string { return rand.String(5) })
	if len(ch.waiting) > 0 {
		klog.FromContext(ctx).V(2).Info("Pods wait for their former Pods to terminate before reusing their PVCs",
			"cloneset", klog.KObj(cs), "instanceIDs", ch.waiting)
	}
	ids, reused := ch.ids(), sets.New(ch.reused...)
	current := min(plan.createCurrent, len(ids))
	var errs []error
	acted := false
	if current > 0 {
		acted = true
		errs = append(errs, c.createPods(ctx, cs, revs.Current, ids[:current], reused,
			fmt.Sprintf("at the current revision %s, to keep updateStrategy.partition", revs.Current.Name)))
	}
	if len(ids) > current {
		acted = true
		errs = append(errs, c.createPods(ctx, cs, revs.Update, ids[current:], reused, plan.createWhy))
	}
	return acted, errors.Join(errs...)
}

// scalePlan is what scaling may do in one sync; scale takes its first step.
type scalePlan struct {
	// cancelDelete are Pods in PreparingDelete, not asked for, that spec.replicas needs again.
	cancelDelete []*corev1.Pod
	// scaleUp says Pods are missing; createCurrent of them are created at the current revision (to
	// keep the partition) and createUpdate at the update revision, for createWhy. scaleUpLimited
	// says scaleStrategy.maxUnavailable held some back.
	scaleUp                     bool
	createCurrent, createUpdate int
	createWhy                   string
	scaleUpLimited              bool
	// preDeleteReleased are Pods in PreparingDelete that no hook holds any more.
	preDeleteReleased []*corev1.Pod
	// specified are the Pods asked to be deleted that may go now.
	specified []*corev1.Pod
	// scaleDown are the surplus Pods to delete now, and why.
	scaleDown    []*corev1.Pod
	scaleDownWhy string
}

// specifiedDelete tells whether the Pod is asked to be deleted: named in scaleStrategy.podsToDelete
// or labelled specified-delete.
func specifiedDelete(cs *v1alpha1.CloneSet, pod *corev1.Pod) bool {
	return pod.Labels[v1alpha1.SpecifiedDeleteKey] != "" || slices.Contains(cs.Spec.ScaleStrategy.PodsToDelete, pod.Name)
}

// splitSpecified separates the Pods asked to be deleted (scaleStrategy.podsToDelete, label
// specified-delete, lifecycle state PreparingDelete) from the others.
func splitSpecified(cs *v1alpha1.CloneSet, pods []*corev1.Pod) (specified, rest []*corev1.Pod) {
	for _, p := range pods {
		if specifiedDelete(cs, p) || lifecycle.State(p) == pub.LifecycleStatePreparingDelete {
			specified = append(specified, p)
		} else {
			rest = append(rest, p)
		}
	}
	return specified, rest
}

// scaleCounts are OpenKruise's counts of a CloneSet's active Pods for scaling.
type scaleCounts struct {
	// atUpdate and atOld are the Pods at the update revision (by label, or held in
	// PreparingUpdate under PreparingUpdateAsUpdate) and the others.
	atUpdate, atOld []*corev1.Pod
	// activeUpdate and activeOld count those not in PreparingDelete.
	activeUpdate, activeOld int
	// preDeleteUpdate and preDeleteOld count those in PreparingDelete.
	preDeleteUpdate, preDeleteOld int
	// toDeleteUpdate and toDeleteOld count those asked to be deleted (not in PreparingDelete).
	toDeleteUpdate, toDeleteOld int
	// unavailable counts the Pods in PreparingDelete and the others, not asked to be deleted, that
	// are not available (ready for minReadySeconds, in lifecycle state Normal).
	unavailable int
}

func countForScale(cs *v1alpha1.CloneSet, pods []*corev1.Pod, updateRevision string, now time.Time) scaleCounts {
	var n scaleCounts
	for _, p := range pods {
		// With PreparingUpdateAsUpdate, a Pod the inPlaceUpdate hook holds counts as updated, here
		// only: the rolling update still sees it at its old revision (as OpenKruise's Update).
		atUpdate := p.Labels[appsv1.ControllerRevisionHashLabelKey] == updateRevision || lifecycle.CountsAsUpdated(p)
		active, preDelete, toDelete := &n.activeOld, &n.preDeleteOld, &n.toDeleteOld
		if atUpdate {
			n.atUpdate = append(n.atUpdate, p)
			active, preDelete, toDelete = &n.activeUpdate, &n.preDeleteUpdate, &n.toDeleteUpdate
		} else {
			n.atOld = append(n.atOld, p)
		}
		switch available, _ := availability.Available(p, cs.Spec.MinReadySeconds, now); {
		case lifecycle.State(p) == pub.LifecycleStatePreparingDelete:
			*preDelete++
			n.unavailable++
		case specifiedDelete(cs, p):
			*active++
			*toDelete++
		case !available:
			*active++
			n.unavailable++
		default:
			*active++
		}
	}
	return n
}

// surgeOf is how many Pods above spec.replicas scaling may keep now, and how many of them at old
// revisions, as OpenKruise computes it: for Pods asked to be deleted while maxUnavailable is used
// up (their replacements come first), or for an update that still moves Pods between revisions.
func surgeOf(l updateLimits, n scaleCounts) (surge, surgeOld int) {
	if l.maxSurge <= 0 {
		return 0, 0
	}
	var scaleSurge, scaleSurgeOld int
	if toDelete := n.toDeleteUpdate + n.toDeleteOld; toDelete > 0 {
		scaleSurge = min(max(n.unavailable+toDelete-l.maxUnavailable, 0), toDelete)
		scaleSurgeOld = max(scaleSurge-n.toDeleteUpdate, 0)
	}
	// Old Pods beyond the partition still to update, and update-revision Pods still missing.
	oldDiff := max(n.activeOld-l.partition, 0)
	newDiff := min(n.activeUpdate-(l.replicas-l.partition), 0)
	updateSurge := 0
	if oldDiff > 0 && newDiff < 0 {
		updateSurge = min(oldDiff, -newDiff)
	}
	if scaleSurge >= updateSurge {
		surge = min(l.maxSurge, scaleSurge)
		return surge, min(surge, scaleSurgeOld)
	}
	return min(l.maxSurge, updateSurge), 0
}

// planScale decides what scaling may do in one sync, as OpenKruise's CloneSet does
// (calculateDiffsWithExpectation and Scale):
//   - every active Pod counts towards spec.replicas, also one asked to be deleted or waiting in
//     PreparingDelete (unless the CloneSet has scalingExcludePreparingDeleteLabel): its
//     replacement comes once it is gone;
//   - while Pods at old revisions beyond the partition wait for the update revision, up to
//     maxSurge extra Pods are created at the update revision; likewise for Pods asked to be
//     deleted while maxUnavailable is used up;
//   - scaling up creates Pods at the current revision while fewer than partition Pods are at old
//     revisions, so that the partition keeps its meaning; no more than scaleStrategy.maxUnavailable
//     minus the unavailable Pods (not available for minReadySeconds, or not Normal) at a time;
//   - ready Pods are deleted (asked for, or surplus) only while maxUnavailable plus the surplus
//     allows; Pods that are not ready go at once;
//   - surplus Pods go in sortForDeletion's order, old revisions beyond the partition first.
func planScale(cs *v1alpha1.CloneSet, pods []*corev1.Pod, updateRevision, currentRevision string, now time.Time) (scalePlan, error) {
	var plan scalePlan
	l, err := updateLimitsOf(cs)
	if err != nil {
		return plan, err
	}
	scaleMaxUnavailable := math.MaxInt32
	if mu := cs.Spec.ScaleStrategy.MaxUnavailable; mu != nil {
		if scaleMaxUnavailable, err = intstr.GetScaledValueFromIntOrPercent(mu, l.replicas, true); err != nil {
			return plan, fmt.Errorf("scaleStrategy.maxUnavailable: %w", err)
		}
	}
	n := countForScale(cs, pods, updateRevision, now)
	var preDelete, specified []*corev1.Pod
	for _, p := range pods {
		switch {
		case lifecycle.State(p) == pub.LifecycleStatePreparingDelete:
			preDelete = append(preDelete, p)
		case specifiedDelete(cs, p):
			specified = append(specified, p)
		}
	}
	numToDelete := len(preDelete) + len(specified)

	// 1. Scale-in cancelled: Pods waiting in PreparingDelete go back while spec.replicas needs them.
	if !lifecycle.MarksPodNotReady(cs.Spec.Lifecycle) {
		need := l.replicas - len(pods) + numToDelete
		for _, p := range preDelete {
			if need <= 0 {
				break
			}
			if specifiedDelete(cs, p) {
				continue
			}
			plan.cancelDelete = append(plan.cancelDelete, p)
			need--
		}
		if len(plan.cancelDelete) > 0 {
			return plan, nil
		}
	}

	surge, surgeOld := surgeOf(l, n)
	total, totalOld := len(pods), len(n.atOld)
	if cs.Labels[scalingExcludePreparingDeleteLabel] == "true" {
		total -= n.preDeleteUpdate + n.preDeleteOld
		totalOld -= n.preDeleteOld
	}
	want, wantOld := l.replicas+surge, l.partition+surgeOld

	// 2. Scale up.
	if up := want - total; up > 0 {
		plan.scaleUp = true
		limit := min(up, max(scaleMaxUnavailable-n.unavailable, 0))
		plan.scaleUpLimited = limit < up
		if currentRevision != updateRevision {
			plan.createCurrent = min(limit, max(wantOld-totalOld, 0))
		}
		plan.createUpdate = limit - plan.createCurrent
		plan.createWhy = fmt.Sprintf("scaling up to %d replicas", l.replicas)
		if surge > 0 {
			plan.createWhy = fmt.Sprintf("%d replicas and %d surge pods (updateStrategy.maxSurge) for the update", l.replicas, surge)
		}
		return plan, nil
	}

	// Ready Pods may be deleted while maxUnavailable, plus the Pods above spec.replicas, allows.
	down := total - n.toDeleteUpdate - n.toDeleteOld - want
	readyBudget := 0
	if n.toDeleteUpdate+n.toDeleteOld > 0 || down > 0 {
		readyBudget = max(l.maxUnavailable+len(pods)-l.replicas-n.unavailable, 0)
	}
	withinBudget := func(candidates []*corev1.Pod) []*corev1.Pod {
		var out []*corev1.Pod
		for _, p := range candidates {
			if ready, _ := availability.Available(p, 0, now); ready {
				if readyBudget == 0 {
					continue
				}
				readyBudget--
			}
			out = append(out, p)
		}
		return out
	}

	// 3. Pods the preDelete hook released.
	hook := lifecycle.PreDeleteHook(cs.Spec.Lifecycle)
	for _, p := range preDelete {
		if !lifecycle.Hooked(hook, p) {
			plan.preDeleteReleased = append(plan.preDeleteReleased, p)
		}
	}
	// 4. Pods asked to be deleted.
	plan.specified = withinBudget(specified)
	// 5. Surplus Pods, once no deletion asked for is pending.
	if down > 0 && numToDelete == 0 {
		oldExcess := max(totalOld-n.toDeleteOld-wantOld, 0)
		plan.scaleDown = withinBudget(chooseForDeletion(n.atOld, n.atUpdate, down, oldExcess))
		plan.scaleDownWhy = fmt.Sprintf("scaling down to %d replicas", l.replicas)
		if l.maxSurge > 0 {
			plan.scaleDownWhy = fmt.Sprintf("%d replicas and %d surge pods are enough", l.replicas, surge)
		}
	}
	return plan, nil
}

// chooseForDeletion picks n Pods to delete: first up to oldExcess Pods at old revisions (those
// beyond the partition), then Pods at the update revision, then other old ones; each group in
// sortForDeletion's order.
func chooseForDeletion(atOld, atUpdate []*corev1.Pod, n, oldExcess int) []*corev1.Pod {
	atOld, atUpdate = slices.Clone(atOld), slices.Clone(atUpdate)
	sortForDeletion(atOld)
	sortForDeletion(atUpdate)
	take := func(from []*corev1.Pod, k int) ([]*corev1.Pod, []*corev1.Pod) {
		k = max(min(k, len(from)), 0)
		return from[:k], from[k:]
	}
	first, atOld := take(atOld, min(n, oldExcess))
	second, _ := take(atUpdate, n-len(first))
	third, _ := take(atOld, n-len(first)-len(second))
	return slices.Concat(first, second, third)
}

// sortForDeletion orders Pods the first to delete first: not on a node, pending before running,
// not ready, newest.
func sortForDeletion(pods []*corev1.Pod) {
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		if d := updatesort.BoolRank(a.Spec.NodeName != "") - updatesort.BoolRank(b.Spec.NodeName != ""); d != 0 {
			return d
		}
		if d := updatesort.PhaseRank(a) - updatesort.PhaseRank(b); d != 0 {
			return d
		}
		if d := updatesort.BoolRank(availability.Ready(a)) - updatesort.BoolRank(availability.Ready(b)); d != 0 {
			return d
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			if b.CreationTimestamp.Before(&a.CreationTimestamp) {
				return -1
			}
			return 1
		}
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
}

// newPod builds a CloneSet Pod of a revision: OpenKruise's instance id as name suffix and label,
// the revision in the controller-revision-hash and pod-template-hash labels, its first lifecycle
// state, a volume per volumeClaimTemplate claiming its PVC, the InPlaceUpdateReady readiness gate
// (and KruisePodReady when a lifecycle hook marks Pods not ready), and the CloneSet as controller.
func newPod(cs *v1alpha1.CloneSet, template *corev1.PodTemplateSpec, revision, id string) *corev1.Pod {
	pod := ownership.NewPod(template, cs.Namespace, controllerRef(cs), revision)
	pod.Name = cs.Name + "-" + id
	pod.Labels[v1alpha1.CloneSetInstanceID] = id
	pod.Labels[podTemplateHashLabel] = revision
	pod.Labels[pub.LifecycleStateKey] = string(lifecycle.InitialState)
	injectClaimVolumes(cs, pod)
	inplaceupdate.InjectReadinessGate(pod)
	if lifecycle.MarksPodNotReady(cs.Spec.Lifecycle) {
		lifecycle.InjectKruisePodReadyGate(pod)
	}
	return pod
}

// createPods creates a Pod at a revision for each instance id, in batches growing 1, 2, 4, … that
// stop at the first failing batch (kube's slow start), each expected before it is sent; a Pod's
// PVCs (spec.volumeClaimTemplates) are created before it. reused are the ids whose PVCs are
// reused; why goes into the events.
func (c *Controller) createPods(ctx context.Context, cs *v1alpha1.CloneSet, revision *appsv1.ControllerRevision, ids []string,
	reused sets.Set[string], why string) error {
	key := cache.MetaObjectToName(cs).String()
	template, err := revisionTemplate(revision)
	if err != nil {
		return fmt.Errorf("reading the template of revision %s: %w", revision.Name, err)
	}
	n := len(ids)
	created := 0
	var nsTerminating atomic.Bool
	for batch := 1; created < n; batch *= 2 {
		batch = min(batch, n-created)
		pods := make([]*corev1.Pod, batch)
		names := make([]string, batch)
		for i := range pods {
			pods[i] = newPod(cs, template, revision.Name, ids[created+i])
			pods[i].Annotations[pub.LifecycleTimestampKey] = pub.LifecycleTimestamp(c.Clock.Now())
			names[i] = pods[i].Name
		}
		c.Exp.ExpectCreations(key, names...)
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for i, pod := range pods {
			wg.Go(func() {
				err := c.ensureClaims(ctx, cs, pod)
				if err == nil {
					_, err = c.Kube.CoreV1().Pods(cs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
					if err != nil {
						err = fmt.Errorf("creating pod %s: %w", pod.Name, err)
						if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
							c.Recorder.Eventf(cs, corev1.EventTypeWarning, ownership.ReasonFailedCreate, "failed to create pod %s: %v", pod.Name, err)
						}
					}
				}
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					// The namespace is going away with the CloneSet: nothing to create, nothing to report.
					c.Exp.CreationObserved(key, pod.Name)
					nsTerminating.Store(true)
					return
				}
				if err != nil {
					c.Exp.CreationObserved(key, pod.Name)
					errs[i] = err
					return
				}
				msg := fmt.Sprintf("created pod %s (revision %s): %s", pod.Name, revision.Name, why)
				if id := pod.Labels[v1alpha1.CloneSetInstanceID]; reused.Has(id) {
					msg += fmt.Sprintf("; it reuses the PVCs of instance id %s", id)
				}
				c.Recorder.Eventf(cs, corev1.EventTypeNormal, ownership.ReasonSuccessfulCreate, "%s", msg)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if nsTerminating.Load() {
			return nil
		}
		created += batch
	}
	return nil
}

// deletePods deletes pods, each expected before it is sent. A Pod the preDelete hook holds is not
// deleted: it moves to lifecycle state PreparingDelete (if not there yet) and waits there until
// the hook releases it; a later sync deletes it then.
func (c *Controller) deletePods(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod, reason, why string) error {
	key := cache.MetaObjectToName(cs).String()
	var errs []error
	if hook := lifecycle.PreDeleteHook(cs.Spec.Lifecycle); hook != nil {
		var free []*corev1.Pod
		for _, p := range pods {
			if !lifecycle.Hooked(hook, p) {
				free = append(free, p)
				continue
			}
			if lifecycle.State(p) != pub.LifecycleStatePreparingDelete {
				klog.FromContext(ctx).Info("Pod held by the preDelete hook", "cloneset", klog.KObj(cs), "pod", klog.KObj(p), "why", why)
				errs = append(errs, c.setLifecycle(ctx, cs, p, pub.LifecycleStatePreparingDelete, nil))
			}
		}
		pods = free
	}
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	c.Exp.ExpectDeletions(key, names...)
	delErrs := make([]error, len(pods))
	deleted := make([]bool, len(pods))
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Go(func() {
			err := c.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
				Preconditions: &metav1.Preconditions{UID: &pod.UID}})
			if err != nil && !apierrors.IsNotFound(err) {
				c.Exp.DeletionObserved(key, pod.Name)
				if wait, ok := inplacerequest.WaitingToDelete(c.Recorder, cs, pod.Name, err); ok {
					// A PodUnavailableBudget holds the deletion back: the CloneSet waits, as
					// for a refused in-place update (a recreate update's BudgetWait).
					delErrs[i] = wait
					return
				}
				delErrs[i] = fmt.Errorf("deleting pod %s: %w", pod.Name, err)
				c.Recorder.Eventf(cs, corev1.EventTypeWarning, ownership.ReasonFailedDelete, "failed to delete pod %s: %v", pod.Name, err)
				return
			}
			deleted[i] = true
			c.Recorder.Eventf(cs, corev1.EventTypeNormal, reason, "deleted pod %s: %s", pod.Name, why)
		})
	}
	wg.Wait()
	// The PVCs of the Pods the CloneSet deletes go with them, as in OpenKruise (whatever the
	// reason: scale-in, podsToDelete, specified-delete, recreate for an update); only a Pod deleted
	// some other way leaves its PVCs for its replacement.
	var gone []*corev1.Pod
	for i, pod := range pods {
		if deleted[i] {
			gone = append(gone, pod)
		}
	}
	if err := c.deleteClaimsOf(ctx, cs, gone); err != nil {
		delErrs = append(delErrs, fmt.Errorf("deleting the PVCs of deleted pods: %w", err))
	}
	return errors.Join(append(errs, delErrs...)...)
}
