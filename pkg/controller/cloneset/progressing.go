package cloneset

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// The Progressing condition of spec.progressDeadlineSeconds, as OpenKruise v1.9 keeps it
// (calculateProgressingStatus and the helpers of pkg/controller/cloneset/utils in openkruise/kruise).

// setProgressingCondition sets, or removes, the Progressing condition of st, the status
// calculateStatus computed for cs: counters, revisions and expectedUpdatedReplicas already new,
// conditions still as last written. It returns when to look again for the deadline to pass, 0
// when nothing waits.
//
// The first case that holds wins, so a CloneSet that is available and paused shows
// CloneSetAvailable, and a deadline once exceeded stays so until the CloneSet becomes available,
// paused or partition-available.
func setProgressingCondition(cs *v1alpha1.CloneSet, st *v1alpha1.CloneSetStatus, now time.Time) time.Duration {
	if !hasProgressDeadline(cs) {
		// Unsetting the deadline removes the condition it left.
		removeCloneSetCondition(st, v1alpha1.CloneSetConditionTypeProgressing)
		return 0
	}
	switch {
	case cloneSetAvailable(cs, st):
		setProgressing(st, corev1.ConditionTrue, v1alpha1.CloneSetAvailable, "CloneSet is available", now)
	case cs.Spec.UpdateStrategy.Paused:
		setProgressing(st, corev1.ConditionTrue, v1alpha1.CloneSetProgressPaused, "CloneSet is paused", now)
	case partitionAvailable(cs, st):
		setProgressing(st, corev1.ConditionTrue, v1alpha1.CloneSetProgressPartitionAvailable,
			"CloneSet has been paused due to partition ready", now)
	case deadlineExceeded(cs, st, now):
		setProgressing(st, corev1.ConditionFalse, v1alpha1.CloneSetProgressDeadlineExceeded,
			fmt.Sprintf("CloneSet revision %s has timed out progressing", st.UpdateRevision), now)
	default:
		setProgressing(st, corev1.ConditionTrue, v1alpha1.CloneSetProgressUpdated, "CloneSet is progressing", now)
		return untilDeadline(findCloneSetCondition(st, v1alpha1.CloneSetConditionTypeProgressing),
			*cs.Spec.ProgressDeadlineSeconds, now)
	}
	return 0
}

// hasProgressDeadline: math.MaxInt32, like unset, means no deadline (the value validation lets
// through whatever minReadySeconds is).
func hasProgressDeadline(cs *v1alpha1.CloneSet) bool {
	pds := cs.Spec.ProgressDeadlineSeconds
	return pds != nil && *pds != math.MaxInt32
}

// cloneSetAvailable: every replica, and no other Pod, is at the update revision and available,
// and that revision is the current one.
func cloneSetAvailable(cs *v1alpha1.CloneSet, st *v1alpha1.CloneSetStatus) bool {
	replicas := ptr.Deref(cs.Spec.Replicas, 1)
	return st.CurrentRevision == st.UpdateRevision && st.Replicas == replicas &&
		st.UpdatedReplicas == replicas && st.UpdatedAvailableReplicas == replicas
}

// partitionAvailable: a partition holds some Pods back, and all the Pods it lets update are
// updated and available, so the rollout went as far as it may.
func partitionAvailable(cs *v1alpha1.CloneSet, st *v1alpha1.CloneSetStatus) bool {
	replicas := ptr.Deref(cs.Spec.Replicas, 1)
	return st.ExpectedUpdatedReplicas < replicas && st.ExpectedUpdatedReplicas <= st.UpdatedAvailableReplicas
}

// deadlineExceeded: the condition already says so (it sticks), or progressDeadlineSeconds have
// passed since its lastUpdateTime, the moment it took its present reason (a reason that does not
// change keeps its lastUpdateTime; see setProgressing). As in OpenKruise that reason may be
// CloneSetAvailable, CloneSetPaused or ProgressPartitionAvailable too: leaving one of those after
// longer than the deadline is exceeded at once. With no condition yet, nothing has started to count.
func deadlineExceeded(cs *v1alpha1.CloneSet, st *v1alpha1.CloneSetStatus, now time.Time) bool {
	c := findCloneSetCondition(st, v1alpha1.CloneSetConditionTypeProgressing)
	if c == nil {
		return false
	}
	if c.Reason == string(v1alpha1.CloneSetProgressDeadlineExceeded) {
		return true
	}
	return deadlineOf(c, *cs.Spec.ProgressDeadlineSeconds).Before(now)
}

func deadlineOf(c *v1alpha1.CloneSetCondition, progressDeadlineSeconds int32) time.Time {
	return c.LastUpdateTime.Add(time.Duration(progressDeadlineSeconds) * time.Second)
}

// untilDeadline is how long until the deadline passes. A second is added when it is a second or
// more away, as OpenKruise does, so that the next look is past it although lastUpdateTime is
// stored to the second and requeue timers run early by a few milliseconds.
func untilDeadline(c *v1alpha1.CloneSetCondition, progressDeadlineSeconds int32, now time.Time) time.Duration {
	if c == nil {
		return 0
	}
	after := deadlineOf(c, progressDeadlineSeconds).Sub(now)
	if after < time.Second {
		return max(after, 0)
	}
	return after + time.Second
}

// setProgressing is OpenKruise's SetCloneSetCondition for the Progressing condition. While the
// status and reason stay the same nothing changes, message and times included: lastUpdateTime
// keeps the moment the reason began, which the deadline counts from. Otherwise the condition is
// replaced by one stamped now (and moved last, as OpenKruise does), keeping its
// lastTransitionTime when only the reason changes.
func setProgressing(st *v1alpha1.CloneSetStatus, status corev1.ConditionStatus, reason v1alpha1.CloneSetConditionReason, message string, now time.Time) {
	c := v1alpha1.CloneSetCondition{
		Type:               v1alpha1.CloneSetConditionTypeProgressing,
		Status:             status,
		Reason:             string(reason),
		Message:            message,
		LastUpdateTime:     metav1.NewTime(now),
		LastTransitionTime: metav1.NewTime(now),
	}
	if old := findCloneSetCondition(st, c.Type); old != nil && old.Status == c.Status {
		if old.Reason == c.Reason {
			return
		}
		c.LastTransitionTime = old.LastTransitionTime
	}
	removeCloneSetCondition(st, c.Type)
	st.Conditions = append(st.Conditions, c)
}

// findCloneSetCondition returns a copy of the condition of that type, nil when there is none.
func findCloneSetCondition(st *v1alpha1.CloneSetStatus, t v1alpha1.CloneSetConditionType) *v1alpha1.CloneSetCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return &c
		}
	}
	return nil
}

// removeCloneSetCondition drops the conditions of that type into a new slice, so that a status
// sharing its conditions with the cached CloneSet never writes into the cache.
func removeCloneSetCondition(st *v1alpha1.CloneSetStatus, t v1alpha1.CloneSetConditionType) {
	if findCloneSetCondition(st, t) == nil {
		return
	}
	var kept []v1alpha1.CloneSetCondition
	for _, c := range st.Conditions {
		if c.Type != t {
			kept = append(kept, c)
		}
	}
	st.Conditions = kept
}
