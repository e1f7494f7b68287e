package cloneset

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/controller/history"
	"github.com/inplace-dev/inplace/pkg/controller/lifecycle"
	"github.com/inplace-dev/inplace/pkg/updatesort"
)

func podReadyCondition(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodReady {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}

// podReady is OpenKruise's "update ready": the Pod runs, is Ready, and no in-place update holds
// its InPlaceUpdateReady gate False. The gate counts from the moment inplace writes it False,
// before the kubelet turns Ready False (inplaceupdate leaves Ready to the kubelet), so a rollout's
// maxUnavailable budget sees the Pod leave at once.
func podReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	if c := podReadyCondition(pod); c == nil || c.Status != corev1.ConditionTrue {
		return false
	}
	for i := range pod.Status.Conditions {
		if c := pod.Status.Conditions[i]; c.Type == pub.InPlaceUpdateReady && c.Status == corev1.ConditionFalse {
			return false
		}
	}
	return true
}

// podAvailable tells whether a Pod has been ready for minReadySeconds, and if it is ready but not
// yet available, how long until it is. As in OpenKruise only a Pod in lifecycle state Normal (or
// none) can be available: one a hook still holds (PreparingNormal, Updated, ...) is not, ready or
// not, so a rollout does not look done while a hook holds a Pod.
func podAvailable(pod *corev1.Pod, minReadySeconds int32, now time.Time) (bool, time.Duration) {
	if s := lifecycle.State(pod); s != "" && s != pub.LifecycleStateNormal {
		return false, 0
	}
	if !podReady(pod) {
		return false, 0
	}
	c := podReadyCondition(pod)
	if minReadySeconds <= 0 {
		return true, 0
	}
	at := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second)
	if !at.After(now) {
		return true, 0
	}
	return false, at.Sub(now)
}

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
		ready := podReady(pod)
		available, left := podAvailable(pod, cs.Spec.MinReadySeconds, now)
		if left > 0 && (wait == 0 || left < wait) {
			wait = left
		}
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
	if d := setProgressingCondition(cs, st, now); d > 0 && (wait == 0 || d < wait) {
		wait = d
	}
	return st, wait
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
