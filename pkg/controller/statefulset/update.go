package statefulset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/updatesort"
	"github.com/inplace-dev/inplace/pkg/workload/availability"
	"github.com/inplace-dev/inplace/pkg/workload/history"
	"github.com/inplace-dev/inplace/pkg/workload/inplacerequest"
	"github.com/inplace-dev/inplace/pkg/workload/lifecycle"
)

// updateStep is one Pod of a rolling update step and how it reaches the update revision.
type updateStep struct {
	pod *corev1.Pod
	// spec is set for an in-place update; else the Pod is recreated (deleted, then created at the
	// update revision by scaling), or, with refused set, left as it is (InPlaceOnly).
	spec    *inplaceupdate.UpdateSpec
	reason  string
	refused bool
}

// updatePlan is what the rolling update may do now.
type updatePlan struct {
	// specified are the Pods labelled apps.kruise.io/specified-delete to delete now; scaling
	// creates them again under the same ordinals.
	specified []*corev1.Pod
	// candidates are the Pods it may move to the update revision, in the order it moves them, and
	// budget how many of them it may take while they are available.
	candidates []*corev1.Pod
	budget     int
}

// planUpdate plans a rolling update step. Candidates are the wanted Pods at or above the partition
// (counted in positions from ordinals.start, reserved ordinals skipped, as OpenKruise counts it)
// not at the update revision, highest ordinal first (or by unorderedUpdate's priority);
// maxUnavailable bounds the Pods not available at once, counting missing ones, so an update never
// takes more. Candidates already unavailable take no budget. With OrderedReady nothing moves while
// any Pod is unavailable (but the one waiting in PreparingUpdate for the inPlaceUpdate hook), and
// one Pod at a time. Pods labelled specified-delete go first (see
// pickSpecified) and are no candidates.
func planUpdate(set *v1beta1.StatefulSet, pods []*corev1.Pod, updateRevision string, now time.Time) updatePlan {
	return planUpdateClaims(set, pods, updateRevision, now, nil)
}

// planUpdateClaims is planUpdate when claims resize with the update (see autoResize; claims are
// the Pods' claim states, nil when they do not): a Pod whose claims ask less than their
// templates is a candidate even at the update revision, and one whose claims' capacity is
// below their request is not available.
func planUpdateClaims(set *v1beta1.StatefulSet, pods []*corev1.Pod, updateRevision string, now time.Time, claims map[string]claimState) updatePlan {
	ru := set.Spec.UpdateStrategy.RollingUpdate
	if set.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType || ru == nil || ru.Paused {
		return updatePlan{}
	}
	wanted := wantedOrdinals(set)
	byOrd := map[int]*corev1.Pod{}
	for _, p := range pods {
		byOrd[ordinalOf(set, p)] = p
	}
	minReady := minReadySeconds(set)
	partition := partitionOf(set)
	unavailable, blocking := 0, 0
	var specified, candidates []*corev1.Pod
	for i, o := range wanted {
		p := byOrd[o]
		available := false
		if p != nil && p.DeletionTimestamp == nil {
			available, _ = availability.Available(p, minReady, now)
			if st, ok := claims[p.Name]; ok && !st.ready {
				available = false
			}
		}
		if !available {
			unavailable++
			// With OrderedReady an unavailable Pod holds the update, but for the one Pod it is
			// moving: waiting in PreparingUpdate for its inPlaceUpdate hook, it is the update's
			// own step (holdForInPlaceUpdate lets it go once the hook does).
			if p == nil || lifecycle.State(p) != pub.LifecycleStatePreparingUpdate ||
				p.Labels[appsv1.ControllerRevisionHashLabelKey] == updateRevision {
				blocking++
			}
		}
		switch {
		case p == nil || p.DeletionTimestamp != nil, lifecycle.State(p) == pub.LifecycleStatePreparingDelete:
			// Going, or waiting to go: scaling deals with it.
		case specifiedDelete(p):
			specified = append(specified, p)
		case (i >= partition || unordered(set)) && (p.Labels[appsv1.ControllerRevisionHashLabelKey] != updateRevision || !claimsCompatible(claims, p)):
			candidates = append(candidates, p)
		}
	}
	maxUnavailable := 1
	if ru.MaxUnavailable != nil {
		// As OpenKruise: a percentage of replicas rounded down, at least 1.
		if n, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, len(wanted), false); err == nil {
			maxUnavailable = max(n, 1)
		}
	}
	ordered := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
	if ordered {
		if blocking > 0 {
			return updatePlan{}
		}
		maxUnavailable = 1
	}
	plan := updatePlan{budget: maxUnavailable - unavailable}
	plan.specified, plan.budget = pickSpecified(specified, plan.budget, minReady, now)
	slices.SortStableFunc(candidates, func(a, b *corev1.Pod) int { return ordinalOf(set, b) - ordinalOf(set, a) })
	if unordered(set) {
		candidates = unorderedCandidates(set, byOrd, candidates, updateRevision)
	}
	if ordered && len(candidates) > 1 {
		candidates = candidates[:1]
	}
	plan.candidates = candidates
	return plan
}

// unordered tells whether the set updates with unorderedUpdate (Parallel only, as OpenKruise
// validates it): partition is then how many Pods keep a revision other than the update
// revision, whichever they are, not the first positions.
func unordered(set *v1beta1.StatefulSet) bool {
	ru := set.Spec.UpdateStrategy.RollingUpdate
	return ru != nil && ru.UnorderedUpdate != nil && set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
}

// countsAsUpdated tells whether an unordered update counts the Pod among those at the update
// revision, as OpenKruise's revision.IsPodUpdate: at that revision, or (PreparingUpdateAsUpdate)
// held in PreparingUpdate by the inPlaceUpdate hook on its way there.
func countsAsUpdated(pod *corev1.Pod, updateRevision string) bool {
	return pod.Labels[appsv1.ControllerRevisionHashLabelKey] == updateRevision || lifecycle.CountsAsUpdated(pod)
}

// unorderedCandidates orders and bounds the candidates of an unordered update as OpenKruise's
// sortPodsToUpdate: the Pods counted as updated (terminating ones too) come first, then the
// others by unorderedUpdate's priority (highest ordinal first otherwise), and no more than
// replicas - partition of them are taken; of those, the ones not at the update revision (or
// whose claims are behind) are the candidates.
func unorderedCandidates(set *v1beta1.StatefulSet, byOrd map[int]*corev1.Pod, candidates []*corev1.Pod, updateRevision string) []*corev1.Pod {
	maxUpdate := len(wantedOrdinals(set)) - partitionOf(set)
	isCandidate := map[*corev1.Pod]bool{}
	for _, p := range candidates {
		isCandidate[p] = true
	}
	var updated, waiting []*corev1.Pod
	for _, o := range slices.Backward(wantedOrdinals(set)) {
		p := byOrd[o]
		switch {
		case p == nil:
		case p.DeletionTimestamp != nil || countsAsUpdated(p, updateRevision):
			updated = append(updated, p)
		case isCandidate[p]:
			waiting = append(waiting, p)
		}
	}
	updatesort.ByPriority(waiting, set.Spec.UpdateStrategy.RollingUpdate.UnorderedUpdate.PriorityStrategy, availability.Ready)
	all := append(updated, waiting...)
	all = all[:max(min(len(all), maxUpdate), 0)]
	var out []*corev1.Pod
	for _, p := range all {
		if isCandidate[p] {
			out = append(out, p)
		}
	}
	return out
}

// claimsCompatible tells whether no claim of the Pod asks less than its template (always so when
// claims do not resize).
func claimsCompatible(claims map[string]claimState, pod *corev1.Pod) bool {
	st, ok := claims[pod.Name]
	return !ok || st.compatible
}

// specifiedDelete tells whether a Pod carries the specified-delete label (any value, as
// OpenKruise's specifieddelete.IsSpecifiedDelete reads it).
func specifiedDelete(pod *corev1.Pod) bool {
	_, ok := pod.Labels[v1alpha1.SpecifiedDeleteKey]
	return ok
}

// pickSpecified picks, from the labelled Pods (lowest ordinal first), those to delete now, as
// OpenKruise's handleSpecifiedDeletedPods: highest ordinal first, whatever the partition, an
// unavailable one at once and an available one only while the maxUnavailable budget allows; it
// returns what budget is left for the update.
func pickSpecified(labelled []*corev1.Pod, budget int, minReady int32, now time.Time) ([]*corev1.Pod, int) {
	var picked []*corev1.Pod
	for _, p := range slices.Backward(labelled) {
		if ok, _ := availability.Available(p, minReady, now); ok {
			if budget <= 0 {
				continue
			}
			budget--
		}
		picked = append(picked, p)
	}
	return picked, budget
}

// planStep decides how a Pod reaches the update revision: ReCreate deletes it; InPlaceIfPossible
// and InPlaceOnly compare its revision's template with the update revision's, and update in place
// when the change allows, else recreate (InPlaceIfPossible) or refuse (InPlaceOnly).
func planStep(set *v1beta1.StatefulSet, pod *corev1.Pod, templates map[string]*appsv1.ControllerRevision, update *appsv1.ControllerRevision) (updateStep, error) {
	step := updateStep{pod: pod}
	policy := set.Spec.UpdateStrategy.RollingUpdate.PodUpdatePolicy
	if policy != v1beta1.InPlaceIfPossiblePodUpdateStrategyType && policy != v1beta1.InPlaceOnlyPodUpdateStrategyType {
		step.reason = "podUpdatePolicy is ReCreate"
		return step, nil
	}
	spec, reason, err := inplacerequest.Decide(pod, templates, update)
	if err != nil {
		return step, err
	}
	if spec != nil {
		step.spec = spec
		return step, nil
	}
	step.reason = reason
	step.refused = policy == v1beta1.InPlaceOnlyPodUpdateStrategyType
	return step, nil
}

// rollingUpdate deletes the Pods labelled specified-delete that planUpdate picked, and moves the
// candidates the budget allows to the update revision.
func (c *Controller) rollingUpdate(ctx context.Context, set *v1beta1.StatefulSet, pods []*corev1.Pod, revs history.Revisions, revisions []*appsv1.ControllerRevision) error {
	now := c.Clock.Now()
	claims, err := c.claimStates(set, pods)
	if err != nil {
		return err
	}
	plan := planUpdateClaims(set, pods, revs.Update.Name, now, claims)
	var errs []error
	for _, p := range plan.specified {
		errs = append(errs, c.deletePod(ctx, set, p, "SpecifiedDelete",
			"labelled "+v1alpha1.SpecifiedDeleteKey+"; it is created again with the same ordinal"))
	}
	if len(plan.candidates) == 0 {
		return errors.Join(errs...)
	}
	templates := map[string]*appsv1.ControllerRevision{}
	for _, r := range revisions {
		templates[r.Name] = r
	}
	budget := plan.budget
	for _, p := range plan.candidates {
		if available, _ := availability.Available(p, minReadySeconds(set), now); available && (claims == nil || claims[p.Name].ready) {
			if budget <= 0 {
				break
			}
			budget--
		}
		if st, ok := claims[p.Name]; ok && (!st.compatible || !st.resized) {
			// As OpenKruise: the claims grow first, and the Pod moves on once they did (a later
			// sync, brought by the claims' changes).
			if !st.compatible {
				errs = append(errs, c.resizeClaims(ctx, set, p, st.claims))
			}
			continue
		}
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] == revs.Update.Name {
			// Only its claims were behind, and they grew: the Pod keeps running (as in
			// OpenKruise, whose check of the resize reads the claims before their update).
			continue
		}
		step, err := planStep(set, p, templates, revs.Update)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, c.applyStep(ctx, set, step, revs.Update.Name))
	}
	return errors.Join(errs...)
}

// applyStep carries out one Pod's step.
func (c *Controller) applyStep(ctx context.Context, set *v1beta1.StatefulSet, step updateStep, updateRevision string) error {
	pod := step.pod
	switch {
	case step.refused:
		c.Recorder.Eventf(set, corev1.EventTypeWarning, ReasonCannotUpdateInPlace,
			"pod %s cannot be updated in place to revision %s (podUpdatePolicy InPlaceOnly): %s", pod.Name, updateRevision, step.reason)
		return nil
	case step.spec == nil:
		return c.deletePod(ctx, set, pod, "SuccessfulUpdatePodReCreate", fmt.Sprintf("recreating for revision %s: %s", updateRevision, step.reason))
	}
	if wait, err := c.holdForInPlaceUpdate(ctx, set, pod); wait || err != nil {
		return err
	}
	// The request moves the Pod to Updating, and to Normal with the update's completion when no
	// hook holds it; else refreshLifecycles moves it on once the update is done.
	o := inplacerequest.Options{Now: c.Clock.Now(), StateAfterUpdate: lifecycle.StateAfterUpdate(set.Spec.Lifecycle),
		StayInServiceContainers: pub.StayInServiceContainers(set.Annotations)}
	if s := set.Spec.UpdateStrategy.RollingUpdate.InPlaceUpdateStrategy; s != nil {
		o.GracePeriodSeconds = s.GracePeriodSeconds
	}
	body := inplacerequest.Body(pod, step.spec, updateRevision, o)
	return c.UpdateInPlace(ctx, set, pod, step.spec, body, updateRevision)
}
