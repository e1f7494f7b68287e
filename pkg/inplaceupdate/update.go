package inplaceupdate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// checkPodUpdatable refuses Pods that are going away or have nowhere to run. A scheduled Pod that
// is still Pending may be updated (a wrong image can be fixed in place).
func checkPodUpdatable(pod *corev1.Pod) error {
	switch {
	case pod.DeletionTimestamp != nil:
		return &PodNotUpdatableError{Reason: "the pod is being deleted"}
	case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
		return &PodNotUpdatableError{Reason: fmt.Sprintf("the pod has terminated (phase %s)", pod.Status.Phase)}
	case pod.Spec.NodeName == "":
		return &PodNotUpdatableError{Reason: "the pod is not scheduled to a node yet"}
	}
	return nil
}

// needsUnready is true when the update restarts a container, so that the Pod must leave service
// first: an image change, an env-from-metadata restart, or a resize of a resource whose resize
// policy is RestartContainer. A change of labels or annotations alone, or a resize that the
// kubelet applies to the running containers, keeps the Pod in service. So does an update asked
// to stay in service (spec.stayInService: its containers serve no traffic, and the kubelet, which
// replaces a container within one Pod sync, keeps a Pod Ready through the restart of a container
// without a readiness probe).
func needsUnready(pod *corev1.Pod, spec *UpdateSpec) bool {
	if spec.StayInService {
		return false
	}
	if len(spec.ContainerImages) > 0 || len(spec.EnvRestartContainers()) > 0 {
		return true
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if want, ok := spec.ContainerResources[c.Name]; ok && resizeNeedsRestart(c, want) {
			return true
		}
	}
	return false
}

// Begin starts an in-place update of pod: the first Step. In order, it
//
//  1. returns InPlaceUpdateReady=False (reason StartInPlaceUpdate) in Step.Conditions when the
//     Pod has that readiness gate and a container will restart;
//  2. writes the state annotation (revision, updateTimestamp, updateImages/Resources/
//     EnvFromMetadata) and, when spec.Revision is set, the controller-revision-hash label;
//  3. with spec.GraceSeconds > 0, stores spec in the grace annotation and changes nothing else
//     (Progress applies it once the grace period is over; Step.RequeueAfter says when);
//  4. otherwise starts the first batch of containers: images on the Pod, label and annotation
//     changes on the Pod, resources in Step.Resize, env-from-metadata restarts recorded for the
//     daemon, later batches in the state's next* fields.
//
// A spec with nothing to change for the revision the Pod's state already has returns an
// unchanged Step (Step.Pod nil), so repeating a request is harmless. A spec for another revision
// replaces whatever update the Pod had (as OpenKruise does; SpecFromRequest refuses that case).
// The input Pod and spec are not modified.
func Begin(pod *corev1.Pod, spec *UpdateSpec, now time.Time) (*Step, error) {
	if err := checkPodUpdatable(pod); err != nil {
		return nil, err
	}
	for name := range spec.containerNames() {
		found := FindContainer(pod.Spec.Containers, name) != nil
		if spec.SidecarSet != nil {
			// A SidecarSet's upgrade may change its native sidecars too (sidecar.go).
			c, _ := sidecarContainer(pod, name)
			found = c != nil
		}
		if !found {
			return nil, fmt.Errorf("container %q of the update is not in pod %s/%s", name, pod.Namespace, pod.Name)
		}
	}
	if spec.SidecarSet != nil {
		return beginSidecar(pod, spec, now)
	}
	if old, ok, err := readState(pod); ok && err == nil && spec.IsEmpty() && old.Revision == spec.Revision {
		msg := fmt.Sprintf("already updating to revision %q", spec.Revision)
		if old.completed() {
			msg = fmt.Sprintf("already updated to revision %q", spec.Revision)
		}
		return &Step{State: old.public(), Done: old.completed(), Message: msg}, nil
	}

	now = now.Truncate(time.Second)
	newPod := pod.DeepCopy()
	step := &Step{Pod: newPod}
	if needsUnready(pod, spec) {
		step.Conditions = unreadyConditions(pod, now)
	}
	if spec.Revision != "" {
		setMap(&newPod.Labels, RevisionLabelKey, spec.Revision)
	}
	st := &state{InPlaceUpdateState: pub.InPlaceUpdateState{
		Revision:              spec.Revision,
		UpdateTimestamp:       metav1.NewTime(now),
		UpdateEnvFromMetadata: len(spec.EnvRestartContainers()) > 0,
		UpdateImages:          len(spec.ContainerImages) > 0,
		UpdateResources:       len(spec.ContainerResources) > 0,
	}, CompletionLabels: maps.Clone(spec.CompletionLabels)}
	removeGrace(newPod)

	if spec.GraceSeconds > 0 {
		writeGrace(newPod, spec)
		writeState(newPod, st)
		step.State = st.public()
		step.RequeueAfter = time.Duration(spec.GraceSeconds) * time.Second
		step.Message = fmt.Sprintf("grace period of %ds before any container changes", spec.GraceSeconds)
		return step, nil
	}

	step.Resize = applyBatch(newPod, spec, st, now)
	if len(st.currentBatch()) == 0 && !st.hasNext() {
		// Only labels, annotations or the revision changed: nothing to wait for. (The Pod did not
		// leave service; InPlaceUpdateReady is set True in case an update this one replaced left
		// it False.)
		st.complete(newPod, now)
		step.Conditions = readyConditions(pod, now, ReasonInPlaceUpdateCompleted)
		step.Done = true
		step.Message = "updated labels and annotations; no container changes"
	} else {
		step.Message = fmt.Sprintf("updating containers %s", strings.Join(st.currentBatch(), ", "))
		writeState(newPod, st)
	}
	step.State = st.public()
	return step, nil
}

// applyBatch starts the next batch of spec on pod (modified in place) and records it in st. It
// returns the resources to send through pods/resize.
func applyBatch(pod *corev1.Pod, spec *UpdateSpec, st *state, now time.Time) map[string]corev1.ResourceRequirements {
	applyMetadataChange(pod, spec.Metadata)
	batch := selectBatch(pod, spec)

	st.NextContainerImages, st.NextContainerRefMetadata, st.NextContainerResources = nil, nil, nil
	st.ContainerResources, st.EnvRestartContainers = nil, nil
	var resize map[string]corev1.ResourceRequirements
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		status := findStatus(pod, c.Name)
		image, changesImage := spec.ContainerImages[c.Name]
		if changesImage {
			if batch[c.Name] {
				c.Image = image
				imageID := ""
				if status != nil {
					imageID = status.ImageID
				}
				setMap(&st.LastContainerStatuses, c.Name, pub.InPlaceUpdateContainerStatus{ImageID: imageID})
			} else {
				setMap(&st.NextContainerImages, c.Name, image)
			}
		}
		if res, ok := spec.ContainerResources[c.Name]; ok {
			if batch[c.Name] {
				setMap(&resize, c.Name, *res.DeepCopy())
				setMap(&st.ContainerResources, c.Name, *res.DeepCopy())
			} else {
				setMap(&st.NextContainerResources, c.Name, *res.DeepCopy())
			}
		}
		if meta, ok := spec.ContainerRefMetadata[c.Name]; ok {
			if batch[c.Name] {
				for k, v := range meta.Labels {
					setMap(&pod.Labels, k, v)
				}
				for k, v := range meta.Annotations {
					setMap(&pod.Annotations, k, v)
				}
				if !changesImage {
					containerID := ""
					if status != nil {
						containerID = status.ContainerID
					}
					setMap(&st.EnvRestartContainers, c.Name, containerID)
				}
			} else {
				setMap(&st.NextContainerRefMetadata, c.Name, *meta.DeepCopy())
			}
		}
	}

	names := sortedKeys(batch)
	st.PreCheckBeforeNext = nil
	if st.hasNext() {
		st.PreCheckBeforeNext = &pub.InPlaceUpdatePreCheckBeforeNext{ContainersRequiredReady: names}
	}
	if len(names) > 0 {
		st.ContainerBatchesRecord = append(st.ContainerBatchesRecord, pub.InPlaceUpdateContainerBatch{
			Timestamp:  metav1.NewTime(now),
			Containers: names,
		})
	}
	return resize
}

func applyMetadataChange(pod *corev1.Pod, md *MetadataChange) {
	if md == nil {
		return
	}
	for k, v := range md.Labels {
		setMap(&pod.Labels, k, v)
	}
	for k, v := range md.Annotations {
		setMap(&pod.Annotations, k, v)
	}
	for _, k := range md.RemoveLabels {
		delete(pod.Labels, k)
	}
	for _, k := range md.RemoveAnnotations {
		delete(pod.Annotations, k)
	}
}

// Progress moves an in-place update of pod forward; call it whenever the Pod changes and after
// Step.RequeueAfter. It
//
//   - ends a grace period once updateTimestamp + graceSeconds has passed, applying the stored spec
//     as Begin would have (before that, Step.RequeueAfter is the time left);
//   - judges each container of the current batch done: a new image when the daemon's
//     runtime-containers-meta shows every container the status reports created from its spec
//     image (RunsCurrentSpec, the kubelet's container hash), else when its imageID differs from
//     the one recorded before the update or its status image is the spec image (a tag-less image
//     equals the same name with :latest); new env-from-metadata when the daemon reports, for the
//     containerID the status shows, the hash of the values the Pod's metadata now holds; new
//     resources when the container status reports them and the Pod has no PodResizePending or
//     PodResizeInProgress condition (a resize the caller never sent is returned again in
//     Step.Resize);
//   - starts the next batch once the current one is done and its containers are ready;
//   - when all batches are done, marks the state completed (the annotation stays, so its revision
//     stays visible) and returns InPlaceUpdateReady=True when the Pod has the readiness gate.
//
// A Pod without an in-place update gets InPlaceUpdateReady=True when it has the gate and the
// condition is not True (Pods are created with the gate and no condition).
//
// The SidecarSet upgrades of the Pod (see sidecar.go) progress in the same step: each completes
// once its containers run their new images, and one that leaves service keeps InPlaceUpdateReady
// False until then. The input Pod is not modified.
func Progress(pod *corev1.Pod, now time.Time) (*Step, error) {
	now = now.Truncate(time.Second)
	if pod.DeletionTimestamp != nil {
		return &Step{Message: "the pod is being deleted"}, nil
	}
	step, err := progressWorkload(pod, now)
	if err != nil {
		return nil, err
	}
	return progressSidecars(pod, step, now)
}

// progressWorkload is Progress for the workload's update (annotation apps.kruise.io/inplace-update-state).
func progressWorkload(pod *corev1.Pod, now time.Time) (*Step, error) {
	st, hasState, err := readState(pod)
	if err != nil {
		return nil, err
	}
	grace, inGrace, err := readGrace(pod)
	if err != nil {
		return nil, err
	}

	if inGrace {
		if !hasState {
			return nil, fmt.Errorf("pod %s/%s has annotation %s but no %s", pod.Namespace, pod.Name,
				pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateStateKey)
		}
		newPod := pod.DeepCopy()
		removeGrace(newPod)
		if grace.Revision != "" && pod.Labels[RevisionLabelKey] != grace.Revision {
			// The Pod moved to another revision meanwhile: this pending update is void.
			return &Step{Pod: newPod, State: st.public(), Message: fmt.Sprintf(
				"dropped the pending update to revision %q: the pod is now at revision %q", grace.Revision, pod.Labels[RevisionLabelKey])}, nil
		}
		end := st.UpdateTimestamp.Add(time.Duration(grace.GraceSeconds) * time.Second)
		if left := end.Sub(now); left > 0 {
			return &Step{State: st.public(), RequeueAfter: roundUpToSecond(left), Message: fmt.Sprintf(
				"grace period: containers change in %s", roundUpToSecond(left))}, nil
		}
		resize := applyBatch(newPod, grace, st, now)
		writeState(newPod, st)
		return &Step{Pod: newPod, Resize: resize, State: st.public(), Message: fmt.Sprintf(
			"grace period over: updating containers %s", strings.Join(st.currentBatch(), ", "))}, nil
	}

	if !hasState || st.completed() {
		reason := ReasonNoInPlaceUpdate
		if hasState {
			reason = ReasonInPlaceUpdateCompleted
		}
		if c := getCondition(pod, pub.InPlaceUpdateReady); c != nil && c.Status == corev1.ConditionFalse &&
			((c.Reason == ReasonStartInPlaceUpdate && (!hasState || st.UpdateTimestamp.Before(&c.LastTransitionTime))) ||
				(c.Reason == ReasonStartSidecarSetUpgrade && !sidecarUpgradeStartedSince(pod, c.LastTransitionTime))) {
			// A pods/inplaceupdate request set the condition and is about to write its update: on
			// a Pod with no update yet, or after the last update completed (a Pod updated in place
			// before keeps its completed state until the next update writes its own). The last
			// update's own condition, left False when its completion could not set it True, has
			// that update's start time (the same request wrote both); a later one is a new
			// request's, even in the second the last update completed in (times are in seconds:
			// compared with the completion, a request sent right after it was taken for a leftover
			// and its condition set back to True, and its update conflicted).
			// Setting it True now would undo its first write (and make its second one conflict).
			// Past StartWindow the request is taken as abandoned. The condition's time comes from
			// the API server's clock: a skew between it and this clock only shifts the window.
			if left := c.LastTransitionTime.Add(StartWindow).Sub(now); left > 0 {
				return &Step{RequeueAfter: roundUpToSecond(left), Message: "an in-place update request is being written"}, nil
			}
			reason = ReasonInPlaceUpdateAbandoned
		}
		step := &Step{Conditions: readyConditions(pod, now, reason), Done: true}
		if hasState {
			step.State = st.public()
		}
		return step, nil
	}

	waiting, resize := checkBatch(pod, st)
	if len(waiting) > 0 {
		return &Step{Resize: resize, State: st.public(), Message: "waiting: " + strings.Join(waiting, "; ")}, nil
	}

	if st.hasNext() {
		if notReady := notReadyContainers(pod, st.PreCheckBeforeNext); len(notReady) > 0 {
			return &Step{State: st.public(), Message: fmt.Sprintf(
				"waiting for containers %s to be ready before the next batch", strings.Join(notReady, ", "))}, nil
		}
		newPod := pod.DeepCopy()
		next := &UpdateSpec{
			Revision:             st.Revision,
			ContainerImages:      st.NextContainerImages,
			ContainerRefMetadata: st.NextContainerRefMetadata,
			ContainerResources:   st.NextContainerResources,
		}
		resize := applyBatch(newPod, next, st, now)
		writeState(newPod, st)
		return &Step{Pod: newPod, Resize: resize, State: st.public(), Message: fmt.Sprintf(
			"updating containers %s", strings.Join(st.currentBatch(), ", "))}, nil
	}

	newPod := pod.DeepCopy()
	st.complete(newPod, now)
	return &Step{
		Pod:        newPod,
		Conditions: readyConditions(pod, now, ReasonInPlaceUpdateCompleted),
		State:      st.public(),
		Done:       true,
		Message:    fmt.Sprintf("in-place update to revision %q completed", st.Revision),
	}, nil
}

// checkBatch says what the containers of the current batch still wait for (nothing when the
// batch is done), and which resizes must be sent (again) because the Pod spec lacks them.
func checkBatch(pod *corev1.Pod, st *state) ([]string, map[string]corev1.ResourceRequirements) {
	var waiting []string
	var resize map[string]corev1.ResourceRequirements
	resizeCondition := ""
	for _, t := range []corev1.PodConditionType{corev1.PodResizePending, corev1.PodResizeInProgress} {
		if c := getCondition(pod, t); c != nil && c.Status != corev1.ConditionFalse {
			resizeCondition = string(t)
			if c.Reason != "" {
				resizeCondition += " (" + c.Reason + ")"
			}
			break
		}
	}

	// OpenKruise's first image check: when the daemon reports that every container the kubelet
	// reports was created from the spec's image reference (the kubelet's container hash), the
	// new images run, even a new reference to the same image content whose imageID does not
	// change. Otherwise (no daemon, a kubelet before 1.31, a report not caught up yet) the image
	// id comparison decides.
	specRunning := false
	if metas, err := runtimeContainerMetas(pod); err == nil {
		specRunning = RunsCurrentSpec(pod, metas)
	}

	for _, name := range st.currentBatch() {
		c := FindContainer(pod.Spec.Containers, name)
		if c == nil {
			continue
		}
		status := findStatus(pod, name)
		if last, ok := st.LastContainerStatuses[name]; ok && !specRunning && !imageUpdated(c, status, last) {
			waiting = append(waiting, fmt.Sprintf("container %s to run image %s", name, c.Image))
		}
		if want, ok := st.ContainerResources[name]; ok {
			switch {
			case !covers(c.Resources, want):
				setMap(&resize, name, *want.DeepCopy())
				waiting = append(waiting, fmt.Sprintf("container %s to be resized (resize not in the pod spec yet)", name))
			case resizeCondition != "":
				waiting = append(waiting, fmt.Sprintf("container %s to be resized (%s)", name, resizeCondition))
			case status == nil || status.Resources == nil || !covers(*status.Resources, want):
				waiting = append(waiting, fmt.Sprintf("container %s to report its new resources", name))
			}
		}
		if _, ok := st.EnvRestartContainers[name]; ok && !envUpdated(pod, c, status) {
			waiting = append(waiting, fmt.Sprintf("container %s to be restarted with the new env from metadata", name))
		}
	}
	return waiting, resize
}

// imageUpdated is true when the container runs its new image: the imageID changed since the
// update began, or the status reports the spec image (which also covers a new tag of the same
// digest, whose imageID does not change, when the runtime reports the new name). It is the
// fallback of checkBatch when the runtime-containers-meta annotation cannot tell (RunsCurrentSpec).
func imageUpdated(c *corev1.Container, status *corev1.ContainerStatus, last pub.InPlaceUpdateContainerStatus) bool {
	if status == nil {
		return false
	}
	if status.ImageID != "" && status.ImageID != last.ImageID {
		return true
	}
	return status.Image != "" && SameImage(status.Image, c.Image)
}

// envUpdated is true when the daemon reports, for the container instance the Pod status shows,
// the env-from-metadata hash of the Pod's current labels and annotations (OpenKruise's
// ExtractedEnvFromMetadataHash consistency check). The instance need not be a new one: the env
// of an instance never changes and the daemon hashes it per instance, so an equal hash means the
// container sees the current values, e.g. when a label edited by hand before the template
// change was already picked up by a crash restart and the daemon had nothing to restart.
func envUpdated(pod *corev1.Pod, c *corev1.Container, status *corev1.ContainerStatus) bool {
	if status == nil || status.ContainerID == "" {
		return false
	}
	metas, err := runtimeContainerMetas(pod)
	if err != nil || metas == nil {
		return false
	}
	for _, m := range metas.Containers {
		if m.Name == c.Name {
			return m.ContainerID == status.ContainerID &&
				m.Hashes.ExtractedEnvFromMetadataHash == EnvFromMetadataHash(c, pod)
		}
	}
	return false
}

// notReadyContainers are the containers of preCheck that are not ready.
func notReadyContainers(pod *corev1.Pod, preCheck *pub.InPlaceUpdatePreCheckBeforeNext) []string {
	if preCheck == nil {
		return nil
	}
	var names []string
	for _, name := range preCheck.ContainersRequiredReady {
		if s := findStatus(pod, name); s == nil || !s.Ready {
			names = append(names, name)
		}
	}
	return names
}

// FindContainer is the container of containers named name, or nil.
func FindContainer(containers []corev1.Container, name string) *corev1.Container {
	if i := slices.IndexFunc(containers, func(c corev1.Container) bool { return c.Name == name }); i >= 0 {
		return &containers[i]
	}
	return nil
}

func findStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == name {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// findInitStatus is the status of init container name (nil when the kubelet reports none).
// FindInitStatus is the status of the Pod's init container named name, or nil.
func FindInitStatus(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	for i := range pod.Status.InitContainerStatuses {
		if pod.Status.InitContainerStatuses[i].Name == name {
			return &pod.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

func roundUpToSecond(d time.Duration) time.Duration {
	if d%time.Second == 0 {
		return d
	}
	return (d/time.Second + 1) * time.Second
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}
