package cloneset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/updatesort"
	"github.com/inplace-dev/inplace/pkg/workload/availability"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
)

// updateResult is what one rolling update step did.
type updateResult struct {
	// refused says, for each Pod that updateStrategy InPlaceOnly could not update in place, why.
	refused []string
	// blocked are the Pods whose update a PodUnavailableBudget held back (a 429): they wait.
	blocked []*inplacerequest.BudgetWait
	// err joins the errors of the Pods whose update failed.
	err error
}

// updateAction is how one Pod reaches the update revision.
type updateAction int

const (
	actionInPlace updateAction = iota
	actionRecreate
	actionRefuse
)

// updatePlan is the decision for one Pod: the in-place update spec, or why it is recreated or
// refused.
type updatePlan struct {
	action updateAction
	spec   *inplaceupdate.UpdateSpec
	reason string
}

// rollingUpdate moves the CloneSet's Pods (active ones not asked to be deleted) towards the update
// revision, as far as updateStrategy allows in this sync: paused stops it; partition keeps that
// many Pods at their old revision; maxUnavailable bounds how many Pods may be unavailable (a Pod
// being updated, or waiting for a lifecycle hook, counts). Pods go in sortForUpdate's order. A
// Pod is updated in place through pods/inplaceupdate when the strategy and the change allow (after
// the inPlaceUpdate hook releases it), else deleted (scaling then creates its successor at the
// update revision), except under InPlaceOnly, which never deletes and reports the Pod in
// updateResult.refused. Under OnDelete (v1beta1's updateStrategy.type) no Pod is updated or
// deleted for the update, as in OpenKruise: only Pods that scaling creates, a deleted Pod's
// replacement among them, come at the update revision.
func (c *Controller) rollingUpdate(ctx context.Context, cs *v1alpha1.CloneSet, pods []*corev1.Pod, revs history.Revisions, revisions []*appsv1.ControllerRevision) updateResult {
	logger := klog.FromContext(ctx).WithValues("cloneset", klog.KObj(cs), "updateRevision", revs.Update.Name)
	var res updateResult
	if cs.Spec.UpdateStrategy.Type == v1alpha1.OnDeleteCloneSetUpdateStrategyType {
		logger.V(4).Info("Update strategy is OnDelete: Pods are not updated")
		return res
	}
	if cs.Spec.UpdateStrategy.Paused {
		logger.V(4).Info("Rolling update paused")
		return res
	}
	now := c.Clock.Now()
	toUpdate, maxUnavailable, err := updateBudget(cs, pods, revs.Update.Name)
	if err != nil {
		res.err = err
		return res
	}
	candidates := updateCandidates(pods, revs.Update.Name)
	if toUpdate == 0 || len(candidates) == 0 {
		return res
	}
	sortForUpdate(candidates, &cs.Spec.UpdateStrategy)
	unavailable := 0
	for _, p := range pods {
		if !availableForUpdate(cs, p, now) {
			unavailable++
		}
	}
	templates := newTemplateCache(revisions, revs.Update)
	var errs []error
	type decision struct {
		pod  *corev1.Pod
		plan updatePlan
	}
	var decided []decision
	started := 0
	for _, pod := range candidates {
		if started >= toUpdate {
			break
		}
		plan, err := planUpdate(cs, pod, templates, revs.Update)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if plan.action == actionRefuse {
			logger.Info("Cannot update Pod in place and updateStrategy is InPlaceOnly", "pod", klog.KObj(pod), "reason", plan.reason)
			res.refused = append(res.refused, fmt.Sprintf("pod %s: %s", pod.Name, plan.reason))
			continue
		}
		if availableForUpdate(cs, pod, now) {
			if unavailable >= maxUnavailable {
				logger.V(2).Info("Rolling update waits: maxUnavailable reached", "unavailable", unavailable,
					"maxUnavailable", maxUnavailable, "next", klog.KObj(pod))
				break
			}
			unavailable++
		}
		started++
		decided = append(decided, decision{pod, plan})
	}
	// The Pods of one step go at once: each request is a few API round trips, and a wave of
	// maxUnavailable Pods sent one after the other would start its last Pod late.
	applyErrs := make([]error, len(decided))
	var wg sync.WaitGroup
	for i, d := range decided {
		wg.Go(func() { applyErrs[i] = c.applyUpdate(ctx, cs, d.pod, d.plan, revs.Update.Name) })
	}
	wg.Wait()
	res.blocked, res.err = inplacerequest.BudgetWaits(errors.Join(append(errs, applyErrs...)...))
	return res
}

// availableForUpdate tells whether a Pod counts as available for the update budget: available
// (ready for minReadySeconds), not in an in-place update, not waiting for a lifecycle hook.
func availableForUpdate(cs *v1alpha1.CloneSet, pod *corev1.Pod, now time.Time) bool {
	if inplaceupdate.IsInProgress(pod) || lifecycle.Preparing(pod) {
		return false
	}
	ok, _ := availability.Available(pod, cs.Spec.MinReadySeconds, now)
	return ok
}

// updateLimits are a CloneSet's update bounds as numbers of Pods.
type updateLimits struct {
	replicas, partition, maxSurge, maxUnavailable int
}

// updateLimitsOf scales partition, maxSurge and maxUnavailable (default 20%) to spec.replicas, as
// OpenKruise does: partition and maxSurge round up (maxSurge is 0 while paused); maxUnavailable
// rounds up, or down when maxSurge is set (as a Deployment's).
func updateLimitsOf(cs *v1alpha1.CloneSet) (updateLimits, error) {
	l := updateLimits{replicas: int(ptr.Deref(cs.Spec.Replicas, 1)), partition: int(partition(cs))}
	if ms := cs.Spec.UpdateStrategy.MaxSurge; ms != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(ms, l.replicas, true)
		if err != nil {
			return l, fmt.Errorf("updateStrategy.maxSurge: %w", err)
		}
		l.maxSurge = max(n, 0)
	}
	if cs.Spec.UpdateStrategy.Paused {
		// As in OpenKruise: no surge Pods for an update that is paused (and maxUnavailable then
		// rounds up, as without maxSurge).
		l.maxSurge = 0
	}
	mu := intstr.FromString(v1alpha1.DefaultCloneSetMaxUnavailable)
	if cs.Spec.UpdateStrategy.MaxUnavailable != nil {
		mu = *cs.Spec.UpdateStrategy.MaxUnavailable
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(&mu, l.replicas, l.maxSurge == 0)
	if err != nil {
		return l, fmt.Errorf("updateStrategy.maxUnavailable: %w", err)
	}
	l.maxUnavailable = max(n, 0)
	return l, nil
}

// updateBudget computes how many more Pods this sync may move to the update revision (partition)
// and how many Pods may be unavailable meanwhile, as OpenKruise does: Pods missing from
// spec.replicas use up maxUnavailable, surplus Pods (maxSurge) add to it. Pods created at the
// update revision by maxSurge leave as many old Pods to be deleted instead of updated.
func updateBudget(cs *v1alpha1.CloneSet, pods []*corev1.Pod, updateRevision string) (toUpdate, maxUnavailable int, err error) {
	l, err := updateLimitsOf(cs)
	if err != nil {
		return 0, 0, err
	}
	atUpdate := 0
	for _, p := range pods {
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] == updateRevision {
			atUpdate++
		}
	}
	old := len(pods) - atUpdate
	// Old Pods beyond the partition, and no more than the update revision still misses.
	toUpdate = max(min(old-l.partition, l.replicas-l.partition-atUpdate), 0)
	return toUpdate, l.maxUnavailable + len(pods) - l.replicas, nil
}

// updateCandidates are the Pods not at the update revision that may start an update now: not
// asked to be deleted (scaling deletes them), and not waiting out an in-place update's grace
// period. A Pod still in an in-place update of an older revision is one, as in OpenKruise: an
// update that cannot finish (an infeasible resize) is superseded by the next revision rather than
// holding the Pod forever.
func updateCandidates(pods []*corev1.Pod, updateRevision string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] == updateRevision ||
			p.Labels[v1alpha1.SpecifiedDeleteKey] != "" || inplaceupdate.InGracePeriod(p) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// sortForUpdate orders Pods the first to update first: not ready, then by priorityStrategy when
// set, then as OpenKruise's default (kube's ActivePods order): not on a node, pending before
// running, ready for the shortest time, most restarts, newest. scatterStrategy then spreads the
// Pods of each of its terms evenly over that order, and Pods already waiting in PreparingUpdate go
// first (they hold a place in the update budget already).
func sortForUpdate(pods []*corev1.Pod, strategy *v1alpha1.CloneSetUpdateStrategy) {
	updatesort.Sort(pods, strategy.PriorityStrategy, strategy.ScatterStrategy, availability.Ready)
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		return updatesort.BoolRank(lifecycle.State(b) == pub.LifecycleStatePreparingUpdate) - updatesort.BoolRank(lifecycle.State(a) == pub.LifecycleStatePreparingUpdate)
	})
}

// templateCache decodes revision templates once per sync.
type templateCache struct {
	revisions map[string]*appsv1.ControllerRevision
	decoded   map[string]*corev1.PodTemplateSpec
}

func newTemplateCache(revisions []*appsv1.ControllerRevision, update *appsv1.ControllerRevision) *templateCache {
	t := &templateCache{revisions: map[string]*appsv1.ControllerRevision{}, decoded: map[string]*corev1.PodTemplateSpec{}}
	for _, r := range revisions {
		t.revisions[r.Name] = r
	}
	t.revisions[update.Name] = update
	return t
}

// get returns the template of the named revision, nil when the CloneSet has no such revision.
func (t *templateCache) get(name string) (*corev1.PodTemplateSpec, error) {
	if tmpl, ok := t.decoded[name]; ok {
		return tmpl, nil
	}
	r, ok := t.revisions[name]
	if !ok {
		return nil, nil
	}
	tmpl, err := revisionTemplate(r)
	if err != nil {
		return nil, err
	}
	t.decoded[name] = tmpl
	return tmpl, nil
}

// planUpdate decides how the Pod reaches the update revision. ReCreate deletes; InPlaceIfPossible
// and InPlaceOnly compare the template of the Pod's revision with the update revision's: a change
// that can go in place does; one that cannot is recreated under InPlaceIfPossible and refused
// under InPlaceOnly. A Pod whose revision the CloneSet no longer has cannot be compared, so it
// counts as not in place. With RecreatePodWhenChangeVCTInCloneSetGate, a Pod whose revision had
// other volumeClaimTemplates is recreated under InPlaceIfPossible (see vctChanged).
func planUpdate(cs *v1alpha1.CloneSet, pod *corev1.Pod, templates *templateCache, update *appsv1.ControllerRevision) (updatePlan, error) {
	strategy := cs.Spec.UpdateStrategy.Type
	if strategy != v1alpha1.InPlaceIfPossibleCloneSetUpdateStrategyType && strategy != v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType {
		return updatePlan{action: actionRecreate, reason: "updateStrategy.type is ReCreate"}, nil
	}
	newT, err := templates.get(update.Name)
	if err != nil {
		return updatePlan{}, err
	}
	podRevision := pod.Labels[appsv1.ControllerRevisionHashLabelKey]
	oldT, err := templates.get(podRevision)
	if err != nil {
		return updatePlan{}, err
	}
	var reason string
	switch {
	case oldT == nil:
		reason = fmt.Sprintf("the pod's revision %q is unknown: its template cannot be compared with the new one", podRevision)
	case vctChanged(cs, templates.revisions[podRevision], update):
		reason = "volumeClaimTemplates changed (RecreatePodWhenChangeVCTInCloneSetGate): the pod is recreated with new PVCs"
	default:
		spec, err := inplaceupdate.CalculateSpec(oldT, newT, update.Name)
		var notInPlace *inplaceupdate.NotInPlaceError
		switch {
		case errors.As(err, &notInPlace):
			reason = notInPlace.Error()
		case err != nil:
			return updatePlan{}, fmt.Errorf("comparing the templates of revisions %s and %s: %w", podRevision, update.Name, err)
		default:
			return updatePlan{action: actionInPlace, spec: spec}, nil
		}
	}
	if strategy == v1alpha1.InPlaceOnlyCloneSetUpdateStrategyType {
		return updatePlan{action: actionRefuse, reason: reason}, nil
	}
	return updatePlan{action: actionRecreate, reason: reason}, nil
}

// applyUpdate carries out a plan: an in-place update request, or a deletion. Before an in-place
// update, the inPlaceUpdate hook may hold the Pod: it moves to PreparingUpdate and waits there
// until the hook's labels and finalizers are gone (a Pod still Updated from the last update has
// the hook armed again first).
func (c *Controller) applyUpdate(ctx context.Context, cs *v1alpha1.CloneSet, pod *corev1.Pod, plan updatePlan, updateRevision string) error {
	logger := klog.FromContext(ctx)
	if plan.action == actionInPlace {
		hook := lifecycle.InPlaceUpdateHook(cs.Spec.Lifecycle)
		switch lifecycle.State(pod) {
		case pub.LifecycleStateUpdating:
			// The hook was passed for the update this one supersedes.
		case pub.LifecycleStateUpdated:
			if hook != nil {
				return c.setLifecycle(ctx, cs, pod, pub.LifecycleStatePreparingUpdate, hook)
			}
		case pub.LifecycleStatePreparingUpdate:
			if lifecycle.Hooked(hook, pod) {
				logger.V(4).Info("Pod waits for the inPlaceUpdate hook", "cloneset", klog.KObj(cs), "pod", klog.KObj(pod))
				return nil
			}
		default:
			if lifecycle.Hooked(hook, pod) {
				logger.Info("Pod held by the inPlaceUpdate hook", "cloneset", klog.KObj(cs), "pod", klog.KObj(pod))
				return c.setLifecycle(ctx, cs, pod, pub.LifecycleStatePreparingUpdate, nil)
			}
		}
		return c.updateInPlace(ctx, cs, pod, plan.spec, updateRevision)
	}
	logger.Info("Recreating Pod for update", "cloneset", klog.KObj(cs), "pod", klog.KObj(pod),
		"updateRevision", updateRevision, "reason", plan.reason)
	if lifecycle.Hooked(lifecycle.PreDeleteHook(cs.Spec.Lifecycle), pod) && pod.Labels[v1alpha1.SpecifiedDeleteKey] == "" {
		// The Pod will wait in PreparingDelete: marked as asked for, as OpenKruise marks every Pod
		// it recreates, so that scaling does not take it back as a cancelled scale-in.
		if err := c.markSpecifiedDelete(ctx, pod); err != nil {
			return err
		}
	}
	return c.deletePods(ctx, cs, []*corev1.Pod{pod}, "SuccessfulUpdatePodReCreate",
		fmt.Sprintf("recreating: %s (revision %s)", plan.reason, updateRevision))
}

// markSpecifiedDelete labels the Pod apps.kruise.io/specified-delete=true (the patch carries its
// UID, so a recreated Pod of the same name is not touched).
func (c *Controller) markSpecifiedDelete(ctx context.Context, pod *corev1.Pod) error {
	patch := fmt.Sprintf(`{"metadata":{"uid":%q,"labels":{%q:"true"}}}`, pod.UID, v1alpha1.SpecifiedDeleteKey)
	_, err := c.Kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("labelling pod %s %s: %w", pod.Name, v1alpha1.SpecifiedDeleteKey, err)
	}
	return nil
}

// updateInPlace sends POST pods/NAME/inplaceupdate for the spec (scaffold's UpdateInPlace).
func (c *Controller) updateInPlace(ctx context.Context, cs *v1alpha1.CloneSet, pod *corev1.Pod, spec *inplaceupdate.UpdateSpec, updateRevision string) error {
	body := inPlaceUpdateBody(cs, pod, spec, updateRevision, c.Clock.Now())
	return c.UpdateInPlace(ctx, cs, pod, spec, body, updateRevision)
}

// inPlaceUpdateBody is the request for the spec (see inplacerequest.Body); the CloneSet's
// pod-template-hash label follows the revision.
func inPlaceUpdateBody(cs *v1alpha1.CloneSet, pod *corev1.Pod, spec *inplaceupdate.UpdateSpec, updateRevision string, now time.Time) *v1alpha1.InPlaceUpdate {
	o := inplacerequest.Options{RevisionLabels: []string{podTemplateHashLabel}, Now: now,
		StateAfterUpdate:        lifecycle.StateAfterUpdate(cs.Spec.Lifecycle),
		StayInServiceContainers: pub.StayInServiceContainers(cs.Annotations)}
	if s := cs.Spec.UpdateStrategy.InPlaceUpdateStrategy; s != nil {
		o.GracePeriodSeconds = s.GracePeriodSeconds
	}
	return inplacerequest.Body(pod, spec, updateRevision, o)
}
