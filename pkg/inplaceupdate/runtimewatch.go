package inplaceupdate

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// ImageWait is one container of the last batch of an in-place image update, as a node agent
// watching the container runtime needs it.
type ImageWait struct {
	// Image is the image the container must run (the Pod spec's).
	Image string
	// PreviousImageID is the imageID the Pod status reported for the container when the update
	// began ("" when it reported none).
	PreviousImageID string
}

// ImagesToWatch returns the containers whose new images are all that the Pod's in-place update
// waits for before InPlaceUpdateReady may turn True, and ok: the Pod has the readiness gate with
// the condition False from the update's start (reason StartInPlaceUpdate); the update is under
// way, not in a grace period, in its last batch (no next batch), and that batch changes only
// images (no resize, no env-from-metadata restart).
//
// It lets inplace-daemon set InPlaceUpdateReady True as soon as the kubelet has taken the new
// images over (KubeletObservedSpec, or the runtime runs the new containers), before the kubelet's
// PLEG relist reports the new containers: the kubelet then computes Ready from them and the gate
// in that same sync, instead of one relist later (about one second). Ready itself stays the
// kubelet's: a new container that is not ready keeps the Pod unready. The update completes, as
// always, when the Pod status reports the new images (Progress).
func ImagesToWatch(pod *corev1.Pod) (map[string]ImageWait, bool) {
	if pod.DeletionTimestamp != nil || !HasReadinessGate(pod) {
		return nil, false
	}
	if c := getCondition(pod, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionFalse || c.Reason != ReasonStartInPlaceUpdate {
		return nil, false
	}
	if _, inGrace := annotation(pod, pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateGraceKeyOld); inGrace {
		return nil, false
	}
	if states, err := readSidecarStates(pod); err != nil || holdsService(states) {
		// A SidecarSet upgrade holds the Pod out of service too; Progress releases it.
		return nil, false
	}
	st, ok, err := readState(pod)
	if !ok || err != nil || st.completed() || st.hasNext() || len(st.ContainerResources) > 0 || len(st.EnvRestartContainers) > 0 {
		return nil, false
	}
	waits := map[string]ImageWait{}
	for _, name := range st.currentBatch() {
		c := FindContainer(pod.Spec.Containers, name)
		last, changesImage := st.LastContainerStatuses[name]
		if c == nil || !changesImage {
			// A container of the batch whose change the runtime cannot show (metadata only).
			return nil, false
		}
		waits[name] = ImageWait{Image: c.Image, PreviousImageID: last.ImageID}
	}
	if len(waits) == 0 {
		return nil, false
	}
	return waits, true
}

// KubeletObservedSpec tells whether the kubelet has begun to sync the Pod's current spec: it
// reports status.observedGeneration (Kubernetes 1.34+, PodObservedGenerationTracking) at or past
// metadata.generation. The kubelet writes it from the status it generates at the start of the
// sync that kills the old containers and starts the new ones; every later sync of the Pod waits
// for a PLEG relist after that one ends, so from then on the kubelet's Ready reflects the new
// containers, never the old ones.
func KubeletObservedSpec(pod *corev1.Pod) bool {
	return pod.Generation > 0 && pod.Status.ObservedGeneration >= pod.Generation
}

// HandedOverConditions is InPlaceUpdateReady=True with the given reason (ReasonNewSpecObserved
// or ReasonNewImagesRunning) for a Pod whose ImagesToWatch the kubelet took over; nil when the
// condition is True already or the Pod has no readiness gate.
func HandedOverConditions(pod *corev1.Pod, now time.Time, reason string) []corev1.PodCondition {
	return readyConditions(pod, now.Truncate(time.Second), reason)
}
