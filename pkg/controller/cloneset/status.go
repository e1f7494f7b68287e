package cloneset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/updatesort"
	"github.com/inplace-dev/inplace/pkg/util/reconcile"
	"github.com/inplace-dev/inplace/pkg/workload/availability"
	"github.com/inplace-dev/inplace/pkg/workload/history"
)

// partition is updateStrategy.partition as a number of Pods, as OpenKruise counts it: a percentage
// of replicas rounds up, except that a percentage below 100% keeps at least one Pod updated when
// there are several ("99%" of 4 is 3, not 4).
func partition(cs *v1alpha1.CloneSet) int32 {
	return int32(updatesort.Partition(cs.Spec.UpdateStrategy.Partition, int(ptr.Deref(cs.Spec.Replicas, 1))))
}

// calculateStatus computes the CloneSet's status from its active Pods and revisions. It also says
// when the caller should look again (0 when nothing waits): when the next ready Pod becomes
// available or the progress deadline passes, whichever comes first.
func calculateStatus(cs *v1alpha1.CloneSet, pods []*corev1.Pod, revs history.Revisions, now time.Time) (*v1alpha1.CloneSetStatus, time.Duration) {
	st := cs.Status.DeepCopy()
	st.ObservedGeneration = cs.Generation
	st.Replicas = int32(len(pods))
	st.ReadyReplicas, st.AvailableReplicas = 0, 0
	st.UpdatedReplicas, st.UpdatedReadyReplicas, st.UpdatedAvailableReplicas = 0, 0, 0
	var wait time.Duration
	for _, pod := range pods {
		ready := availability.Ready(pod)
		available, left := availability.Available(pod, cs.Spec.MinReadySeconds, now)
		wait = reconcile.Soonest(wait, left)
		// As OpenKruise counts: by the revision label, which pods/inplaceupdate writes when an
		// update begins; such a Pod is not ready (InPlaceUpdateReady False) until it is done.
		updated := pod.Labels[appsv1.ControllerRevisionHashLabelKey] == revs.Update.Name
		if ready {
			st.ReadyReplicas++
		}
		if available {
			st.AvailableReplicas++
		}
		if updated {
			st.UpdatedReplicas++
			if ready {
				st.UpdatedReadyReplicas++
			}
			if available {
				st.UpdatedAvailableReplicas++
			}
		}
	}
	replicas := ptr.Deref(cs.Spec.Replicas, 1)
	st.ExpectedUpdatedReplicas = max(replicas-partition(cs), 0)
	st.UpdateRevision = revs.Update.Name
	st.CurrentRevision = revs.Current.Name
	if st.UpdatedReplicas == st.Replicas && st.Replicas == replicas {
		// Every Pod is at the update revision (ready or not, as in OpenKruise): it is the current
		// one now.
		st.CurrentRevision = revs.Update.Name
	}
	st.CollisionCount = ptr.To(revs.CollisionCount)
	st.LabelSelector = metav1.FormatLabelSelector(cs.Spec.Selector)
	// Last: the Progressing condition reads the counters and revisions above.
	return st, reconcile.Soonest(wait, setProgressingCondition(cs, st, now))
}

// setCondition sets a condition of the status, keeping its transition time when its status does
// not change; a False condition that is absent is not added.
func setCondition(st *v1alpha1.CloneSetStatus, t v1alpha1.CloneSetConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status != status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		c.Status, c.Reason, c.Message = status, reason, message
		return
	}
	if status == corev1.ConditionFalse {
		return
	}
	st.Conditions = append(st.Conditions, v1alpha1.CloneSetCondition{Type: t, Status: status,
		LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: message})
}
