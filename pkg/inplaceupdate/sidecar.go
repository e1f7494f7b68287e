package inplaceupdate

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// A SidecarSet's in-place upgrade of the sidecar containers it injected is an update of its own,
// beside the workload's (CloneSet) update that the rest of this package drives: OpenKruise keeps
// it in a separate annotation, kruise.io/sidecarset-inplace-update-state, one InPlaceUpdateState
// per SidecarSet, and so does this engine. The two touch different containers (a workload's
// template has no injected sidecars), so they run at the same time and neither waits for the
// other; a request that would change a container the other update is changing is refused with
// 409 until that one is done.
//
// A sidecar upgrade changes images only (OpenKruise rolls nothing else to existing Pods), all of
// its containers at once, with no grace period. It records the SidecarSet's hash as its revision
// and in the Pod's kruise.io/sidecarset-hash entry of that SidecarSet (with the ControllerRevision
// and the time), which is how the SidecarSet controller counts the Pod as updated. It is complete
// when every changed container runs its new image, judged as a workload update's images are
// (imageUpdated). Whether the Pod leaves service meanwhile is the caller's choice
// (SidecarSetUpdate.LeaveService): OpenKruise keeps it in service, which suits a sidecar whose
// restart does not cut the Pod's traffic (a log agent); a mesh proxy's restart does, and the Pod
// should leave Endpoints first. Leaving service takes the InPlaceUpdateReady readiness gate, so
// only Pods that have it (Pods of inplace's workloads) can.
//
// A SidecarSet's native sidecars (its spec.initContainers with restartPolicy Always, injected
// into the Pod's spec.initContainers) are upgraded in place like its containers, which OpenKruise
// does not do: kube-apiserver accepts a new image of a running Pod's init container, and the
// kubelet restarts a native sidecar on it while the app containers keep running (as it restarts
// a container). The upgrade sets spec.initContainers[i].image and reads
// status.initContainerStatuses instead of spec.containers and status.containerStatuses
// (sidecarContainer); nothing else differs. A plain init container is never upgraded: it ran to
// completion before the app containers started and is not run again, so its new image would never
// run. A workload's update never changes init containers.

// ReasonStartSidecarSetUpgrade is the reason of InPlaceUpdateReady=False while a SidecarSet
// upgrade that leaves service runs.
const ReasonStartSidecarSetUpgrade = "StartSidecarSetUpgrade"

// SidecarSetUpdate makes an UpdateSpec the in-place upgrade of one SidecarSet's sidecars.
type SidecarSetUpdate struct {
	// Name of the SidecarSet.
	Name string `json:"name"`
	// ControllerRevision is the SidecarSet's ControllerRevision of the hash upgraded to, recorded
	// in the Pod's kruise.io/sidecarset-hash entry.
	ControllerRevision string `json:"controllerRevision,omitempty"`
	// LeaveService sets InPlaceUpdateReady False while the sidecars restart.
	LeaveService bool `json:"leaveService,omitempty"`
}

// sidecarState is one SidecarSet's entry of kruise.io/sidecarset-inplace-update-state: the state
// of a workload update plus whether the upgrade holds the Pod out of service.
type sidecarState struct {
	state `json:",inline"`
	// LeaveService is true when InPlaceUpdateReady stays False until the upgrade completes.
	LeaveService bool `json:"leaveService,omitempty"`
}

// SidecarSetHashes reads a Pod's kruise.io/sidecarset-hash (key pub.SidecarSetHashKey) or
// kruise.io/sidecarset-hash-without-image annotation: one entry per injected SidecarSet. The
// older form, a JSON object of SidecarSet name to hash, is read too.
func SidecarSetHashes(pod *corev1.Pod, key string) (map[string]pub.SidecarSetUpgradeSpec, error) {
	specs := map[string]pub.SidecarSetUpgradeSpec{}
	value := pod.Annotations[key]
	if value == "" {
		return specs, nil
	}
	if err := json.Unmarshal([]byte(value), &specs); err == nil {
		return specs, nil
	}
	var older map[string]string
	if err := json.Unmarshal([]byte(value), &older); err != nil {
		return nil, fmt.Errorf("annotation %s of pod %s/%s does not decode: %w", key, pod.Namespace, pod.Name, err)
	}
	specs = map[string]pub.SidecarSetUpgradeSpec{}
	for name, hash := range older {
		specs[name] = pub.SidecarSetUpgradeSpec{Hash: hash, SidecarSetName: name}
	}
	return specs, nil
}

func writeSidecarSetHashes(pod *corev1.Pod, specs map[string]pub.SidecarSetUpgradeSpec) {
	b, err := json.Marshal(specs)
	if err != nil {
		panic(err) // strings and times only
	}
	setMap(&pod.Annotations, pub.SidecarSetHashKey, string(b))
}

// readSidecarStates decodes kruise.io/sidecarset-inplace-update-state (nil map when absent).
func readSidecarStates(pod *corev1.Pod) (map[string]*sidecarState, error) {
	raw, ok := pod.Annotations[pub.SidecarSetInPlaceUpdateStateKey]
	if !ok {
		return nil, nil
	}
	states := map[string]*sidecarState{}
	if err := json.Unmarshal([]byte(raw), &states); err != nil {
		return nil, fmt.Errorf("annotation %s of pod %s/%s does not decode: %w",
			pub.SidecarSetInPlaceUpdateStateKey, pod.Namespace, pod.Name, err)
	}
	// {"agent":null} decodes to a nil state (found by FuzzPodUpdate): no state of that SidecarSet.
	maps.DeleteFunc(states, func(_ string, st *sidecarState) bool { return st == nil })
	return states, nil
}

func writeSidecarStates(pod *corev1.Pod, states map[string]*sidecarState) {
	b, err := json.Marshal(states)
	if err != nil {
		panic(err) // maps, strings and times only
	}
	setMap(&pod.Annotations, pub.SidecarSetInPlaceUpdateStateKey, string(b))
}

// SidecarSetUpgradeState is the state of SidecarSet name's in-place upgrade of the Pod: the state,
// whether it completed, and whether there is one. A state annotation that does not decode reads as
// none.
func SidecarSetUpgradeState(pod *corev1.Pod, name string) (*pub.InPlaceUpdateState, bool, bool) {
	states, err := readSidecarStates(pod)
	if err != nil || states[name] == nil {
		return nil, false, false
	}
	st := states[name]
	return st.public(), st.completed(), true
}

// SidecarSetUpgradePending names the containers of SidecarSet name's unfinished in-place upgrade
// of the Pod that do not run their new image yet (none when no upgrade of it is unfinished). The
// SidecarSet controller waits for such a container while it is still ready (the kubelet has not
// restarted it yet), but not for one that is not ready: its new image may never start, and the
// next hash must be able to supersede the upgrade.
func SidecarSetUpgradePending(pod *corev1.Pod, name string) []string {
	states, err := readSidecarStates(pod)
	if err != nil || states[name] == nil || states[name].completed() {
		return nil
	}
	st := states[name]
	var pending []string
	for _, c := range st.currentBatch() {
		if spec, status := sidecarContainer(pod, c); spec != nil && !imageUpdated(spec, status, st.LastContainerStatuses[c]) {
			pending = append(pending, c)
		}
	}
	return pending
}

// SidecarSetUpgradesInProgress names the SidecarSets whose in-place upgrade of the Pod is under
// way, sorted.
func SidecarSetUpgradesInProgress(pod *corev1.Pod) []string {
	states, err := readSidecarStates(pod)
	if err != nil {
		return nil
	}
	var names []string
	for name, st := range states {
		if !st.completed() {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// holdsService is true when an unfinished sidecar upgrade keeps InPlaceUpdateReady False.
func holdsService(states map[string]*sidecarState) bool {
	for _, st := range states {
		if st.LeaveService && !st.completed() {
			return true
		}
	}
	return false
}

// sidecarContainersBusy names the containers of spec that an unfinished sidecar upgrade (other than
// the SidecarSet skip's) is changing.
func sidecarContainersBusy(pod *corev1.Pod, names map[string]bool, skip string) (string, string) {
	states, err := readSidecarStates(pod)
	if err != nil {
		return "", ""
	}
	for _, set := range sortedKeys(states) {
		st := states[set]
		if set == skip || st.completed() {
			continue
		}
		for _, c := range st.currentBatch() {
			if names[c] {
				return c, set
			}
		}
	}
	return "", ""
}

// workloadContainersBusy names a container of names that the unfinished workload update is
// changing or will change in a later batch (or in its grace period).
func workloadContainersBusy(pod *corev1.Pod, names map[string]bool) string {
	if grace, inGrace, err := readGrace(pod); err == nil && inGrace {
		for c := range grace.containerNames() {
			if names[c] {
				return c
			}
		}
	}
	st, ok, err := readState(pod)
	if !ok || err != nil || st.completed() {
		return ""
	}
	busy := slices.Clone(st.currentBatch())
	for c := range st.NextContainerImages {
		busy = append(busy, c)
	}
	for c := range st.NextContainerRefMetadata {
		busy = append(busy, c)
	}
	for c := range st.NextContainerResources {
		busy = append(busy, c)
	}
	slices.Sort(busy)
	for _, c := range busy {
		if names[c] {
			return c
		}
	}
	return ""
}

// ContainerBusyError refuses an update of a container that another in-place update of the Pod (a
// workload's, or another SidecarSet's) is changing; callers answer it with 409 Conflict.
type ContainerBusyError struct {
	Container string
	// By says whose update: "the workload's in-place update" or "SidecarSet NAME's upgrade".
	By string
}

func (e *ContainerBusyError) Error() string {
	return fmt.Sprintf("container %q is being updated by %s; wait until it is done", e.Container, e.By)
}

// Is makes errors.Is(err, ErrInProgress) true.
func (e *ContainerBusyError) Is(target error) bool { return target == ErrInProgress }

// beginSidecar is Begin for a SidecarSet upgrade (spec.SidecarSet set): it sets the new images,
// records the SidecarSet's state entry (revision = its hash, the images' previous imageIDs) and the
// Pod's kruise.io/sidecarset-hash entry (hash, ControllerRevision, now), and, with LeaveService on
// a Pod with the readiness gate, returns InPlaceUpdateReady=False first. A spec that changes no
// image only records the hash (the sidecars already run those images) and is complete at once.
func beginSidecar(pod *corev1.Pod, spec *UpdateSpec, now time.Time) (*Step, error) {
	set := spec.SidecarSet
	hashes, err := SidecarSetHashes(pod, pub.SidecarSetHashKey)
	if err != nil {
		return nil, err
	}
	entry, injected := hashes[set.Name]
	if !injected {
		return nil, fmt.Errorf("pod %s/%s was not injected by SidecarSet %s", pod.Namespace, pod.Name, set.Name)
	}
	states, err := readSidecarStates(pod)
	if err != nil {
		// An unreadable state annotation is replaced, as a workload's is.
		states = nil
	}
	if old := states[set.Name]; old != nil && old.Revision == spec.Revision && len(spec.ContainerImages) == 0 && spec.Metadata.isEmpty() && entry.Hash == spec.Revision {
		msg := fmt.Sprintf("already upgrading the sidecars of SidecarSet %s to %q", set.Name, spec.Revision)
		if old.completed() {
			msg = fmt.Sprintf("the sidecars of SidecarSet %s already run %q", set.Name, spec.Revision)
		}
		return &Step{State: old.public(), Done: old.completed(), Message: msg}, nil
	}
	if states == nil {
		states = map[string]*sidecarState{}
	}

	now = now.Truncate(time.Second)
	newPod := pod.DeepCopy()
	step := &Step{Pod: newPod}
	st := &sidecarState{state: state{InPlaceUpdateState: pub.InPlaceUpdateState{
		Revision:        spec.Revision,
		UpdateTimestamp: metav1.NewTime(now),
		UpdateImages:    len(spec.ContainerImages) > 0,
	}}, LeaveService: set.LeaveService}
	// A hot upgrade's annotations (which container of a pair works, their versions) go on the Pod
	// at once and restart nothing: the sidecars read them when they start, as in OpenKruise.
	if spec.Metadata != nil {
		for k, v := range spec.Metadata.Annotations {
			setMap(&newPod.Annotations, k, v)
		}
	}
	names := sortedKeys(spec.ContainerImages)
	for _, name := range names {
		c, status := sidecarContainer(newPod, name)
		c.Image = spec.ContainerImages[name]
		imageID := ""
		if status != nil {
			imageID = status.ImageID
		}
		setMap(&st.LastContainerStatuses, name, pub.InPlaceUpdateContainerStatus{ImageID: imageID})
	}
	if len(names) > 0 {
		st.ContainerBatchesRecord = []pub.InPlaceUpdateContainerBatch{{Timestamp: metav1.NewTime(now), Containers: names}}
		step.Message = fmt.Sprintf("upgrading sidecar containers %s of SidecarSet %s", strings.Join(names, ", "), set.Name)
		if set.LeaveService && HasReadinessGate(pod) {
			if c := getCondition(pod, pub.InPlaceUpdateReady); c == nil || c.Status != corev1.ConditionFalse {
				step.Conditions = []corev1.PodCondition{{
					Type:               pub.InPlaceUpdateReady,
					Status:             corev1.ConditionFalse,
					Reason:             ReasonStartSidecarSetUpgrade,
					LastTransitionTime: metav1.NewTime(now),
				}}
			}
		}
	} else {
		st.CompletedTimestamp = ptrTime(now)
		step.Done = true
		step.Message = fmt.Sprintf("the sidecars of SidecarSet %s already run the images of %q", set.Name, spec.Revision)
	}
	states[set.Name] = st
	writeSidecarStates(newPod, states)

	entry.Hash = spec.Revision
	entry.UpdateTimestamp = metav1.NewTime(now)
	if set.ControllerRevision != "" {
		entry.ControllerRevision = set.ControllerRevision
	}
	hashes[set.Name] = entry
	writeSidecarSetHashes(newPod, hashes)
	step.State = st.public()
	return step, nil
}

// progressSidecars completes the SidecarSet upgrades of pod whose containers run their new images,
// adding the writes to step (the workload's step, from progressWorkload) and keeping
// InPlaceUpdateReady False while an upgrade that leaves service is unfinished.
func progressSidecars(pod *corev1.Pod, step *Step, now time.Time) (*Step, error) {
	base := pod
	if step.Pod != nil {
		base = step.Pod
	}
	states, err := readSidecarStates(base)
	if err != nil {
		return nil, err
	}
	var completed []string
	for _, name := range sortedKeys(states) {
		st := states[name]
		if st.completed() || len(sidecarWaiting(base, &st.state)) > 0 {
			continue
		}
		st.CompletedTimestamp = ptrTime(now)
		completed = append(completed, name)
	}
	if len(completed) > 0 {
		if step.Pod == nil {
			step.Pod = pod.DeepCopy()
		}
		writeSidecarStates(step.Pod, states)
		msg := fmt.Sprintf("upgrade of the sidecars of SidecarSet %s completed", strings.Join(completed, ", "))
		if step.Message != "" {
			msg = step.Message + "; " + msg
		}
		step.Message = msg
	}
	if holdsService(states) {
		step.Conditions = slices.DeleteFunc(step.Conditions, func(c corev1.PodCondition) bool {
			return c.Type == pub.InPlaceUpdateReady && c.Status == corev1.ConditionTrue
		})
	}
	return step, nil
}

// sidecarWaiting says which containers of a sidecar upgrade do not run their new image yet.
func sidecarWaiting(pod *corev1.Pod, st *state) []string {
	var waiting []string
	for _, name := range st.currentBatch() {
		c, status := sidecarContainer(pod, name)
		if c == nil {
			continue
		}
		if !imageUpdated(c, status, st.LastContainerStatuses[name]) {
			waiting = append(waiting, fmt.Sprintf("container %s to run image %s", name, c.Image))
		}
	}
	return waiting
}

// sidecarContainer finds a container that a SidecarSet upgrade may change, and its status (nil
// while the kubelet reports none): one of spec.containers, or a native sidecar among
// spec.initContainers, with its status among status.initContainerStatuses. A plain init container
// is not one (see the top of this file).
func sidecarContainer(pod *corev1.Pod, name string) (*corev1.Container, *corev1.ContainerStatus) {
	if c := FindContainer(pod.Spec.Containers, name); c != nil {
		return c, findStatus(pod, name)
	}
	if c := FindContainer(pod.Spec.InitContainers, name); c != nil && IsNativeSidecar(c) {
		return c, FindInitStatus(pod, name)
	}
	return nil, nil
}

// IsNativeSidecar reports whether an init container is a Kubernetes native sidecar
// (restartPolicy Always): it keeps running beside the app containers.
func IsNativeSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// sidecarUpgradeStartedSince is true when a SidecarSet upgrade that leaves service was written at
// or after t: InPlaceUpdateReady=False (reason StartSidecarSetUpgrade) set at t belongs to it. When
// none was, the condition was written by a request still about to write its upgrade.
func sidecarUpgradeStartedSince(pod *corev1.Pod, t metav1.Time) bool {
	states, err := readSidecarStates(pod)
	if err != nil {
		return true
	}
	for _, st := range states {
		if st.LeaveService && !st.UpdateTimestamp.Before(&t) {
			return true
		}
	}
	return false
}

// AnyInProgress is true while the workload's in-place update or a SidecarSet upgrade of the Pod is
// under way.
func AnyInProgress(pod *corev1.Pod) bool {
	return IsInProgress(pod) || len(SidecarSetUpgradesInProgress(pod)) > 0
}

// LatestUpdateStart is when the latest in-place change of the Pod began: the updateTimestamp of
// its workload's in-place update state or of a SidecarSet's upgrade state, whichever is latest
// (zero when it has none that decodes). A PodUnavailableBudget releases the unit it charged for a
// change once the Pod shows it (see package podbudget).
func LatestUpdateStart(pod *corev1.Pod) time.Time {
	var latest time.Time
	if st, ok, err := readState(pod); ok && err == nil {
		latest = st.UpdateTimestamp.Time
	}
	states, _ := readSidecarStates(pod)
	for _, st := range states {
		if st.UpdateTimestamp.After(latest) {
			latest = st.UpdateTimestamp.Time
		}
	}
	return latest
}
