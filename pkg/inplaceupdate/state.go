package inplaceupdate

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/lru"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// state is the JSON of the state annotation as this engine writes it: OpenKruise's
// InPlaceUpdateState plus fields OpenKruise does not know (and ignores).
type state struct {
	pub.InPlaceUpdateState `json:",inline"`

	// ContainerResources are the resources the containers of the current batch must reach. They
	// are kept so that Progress can send a resize again when the caller died before sending it.
	ContainerResources map[string]corev1.ResourceRequirements `json:"containerResources,omitempty"`
	// EnvRestartContainers maps each container of the current batch that the daemon must restart
	// for env-from-metadata to its containerID when the batch began (a record only: completion
	// compares the env hash of whatever instance the status shows, see envUpdated).
	EnvRestartContainers map[string]string `json:"envRestartContainers,omitempty"`
	// CompletedTimestamp is when the update was found complete.
	CompletedTimestamp *metav1.Time `json:"completedTimestamp,omitempty"`
	// CompletionLabels are the labels to set on the Pod when the update completes (the request's
	// spec.completionLabels), dropped once set.
	CompletionLabels map[string]string `json:"completionLabels,omitempty"`
}

func (s *state) completed() bool { return s.CompletedTimestamp != nil }

// complete records the update completed at now on pod (modified in place) and sets the labels it
// was asked to set then, in the same write. A lifecycle state label's timestamp annotation follows
// it, as OpenKruise writes the pair.
func (s *state) complete(pod *corev1.Pod, now time.Time) {
	s.CompletedTimestamp = ptrTime(now)
	s.ContainerResources, s.EnvRestartContainers = nil, nil
	for k, v := range s.CompletionLabels {
		setMap(&pod.Labels, k, v)
		if k == pub.LifecycleStateKey {
			setMap(&pod.Annotations, pub.LifecycleTimestampKey, pub.LifecycleTimestamp(now))
		}
	}
	s.CompletionLabels = nil
	writeState(pod, s)
}

func (s *state) hasNext() bool {
	return len(s.NextContainerImages) > 0 || len(s.NextContainerRefMetadata) > 0 || len(s.NextContainerResources) > 0
}

// currentBatch is the names of the containers of the last batch started, or nil.
func (s *state) currentBatch() []string {
	if n := len(s.ContainerBatchesRecord); n > 0 {
		return s.ContainerBatchesRecord[n-1].Containers
	}
	return nil
}

func (s *state) public() *pub.InPlaceUpdateState {
	return s.InPlaceUpdateState.DeepCopy()
}

func annotation(pod *corev1.Pod, key, legacyKey string) (string, bool) {
	if v, ok := pod.Annotations[key]; ok {
		return v, true
	}
	v, ok := pod.Annotations[legacyKey]
	return v, ok
}

// readState decodes the state annotation (current or legacy key).
func readState(pod *corev1.Pod) (*state, bool, error) {
	raw, ok := annotation(pod, pub.InPlaceUpdateStateKey, pub.InPlaceUpdateStateKeyOld)
	if !ok {
		return nil, false, nil
	}
	st := &state{}
	if err := json.Unmarshal([]byte(raw), st); err != nil {
		return nil, true, fmt.Errorf("annotation %s of pod %s/%s is not a valid in-place update state: %w",
			pub.InPlaceUpdateStateKey, pod.Namespace, pod.Name, err)
	}
	return st, true, nil
}

// writeState sets the state annotation (and drops the legacy key).
func writeState(pod *corev1.Pod, st *state) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	b, err := json.Marshal(st)
	if err != nil {
		// Only maps, strings, quantities and times: marshalling cannot fail.
		panic(err)
	}
	pod.Annotations[pub.InPlaceUpdateStateKey] = string(b)
	delete(pod.Annotations, pub.InPlaceUpdateStateKeyOld)
}

// readGrace decodes the grace annotation (current or legacy key).
func readGrace(pod *corev1.Pod) (*UpdateSpec, bool, error) {
	raw, ok := annotation(pod, pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateGraceKeyOld)
	if !ok {
		return nil, false, nil
	}
	spec := &UpdateSpec{}
	if err := json.Unmarshal([]byte(raw), spec); err != nil {
		return nil, true, fmt.Errorf("annotation %s of pod %s/%s is not a valid in-place update spec: %w",
			pub.InPlaceUpdateGraceKey, pod.Namespace, pod.Name, err)
	}
	return spec, true, nil
}

func writeGrace(pod *corev1.Pod, spec *UpdateSpec) {
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[pub.InPlaceUpdateGraceKey] = spec.String()
	delete(pod.Annotations, pub.InPlaceUpdateGraceKeyOld)
}

func removeGrace(pod *corev1.Pod) {
	delete(pod.Annotations, pub.InPlaceUpdateGraceKey)
	delete(pod.Annotations, pub.InPlaceUpdateGraceKeyOld)
}

// GetState returns the Pod's in-place update state (current or legacy annotation key), whether the
// Pod has one, and an error when the annotation does not decode.
func GetState(pod *corev1.Pod) (*pub.InPlaceUpdateState, bool, error) {
	st, ok, err := readState(pod)
	if !ok || err != nil {
		return nil, ok, err
	}
	return st.public(), true, nil
}

// completions remembers, per value of the state annotation, whether it decodes and whether it
// says completed. IsInProgress and IsCompleted run on every event of every Pod in the controller's
// and the daemon's informers, and the annotation changes a few times per update while the Pod's
// status changes many more: decoding its JSON on each event was the largest single CPU cost of
// inplace-daemon during a rollout (hack/bench-rollout.sh with BENCH_PROFILE). The key is the
// annotation's text, so an entry can never be stale; the size only bounds the memory.
var completions = lru.New(4096)

type completion struct{ valid, completed bool }

// stateCompletion reads the state annotation's completion: whether the Pod has the annotation,
// whether it decodes, and whether it says the update completed.
func stateCompletion(pod *corev1.Pod) (has bool, c completion) {
	raw, ok := annotation(pod, pub.InPlaceUpdateStateKey, pub.InPlaceUpdateStateKeyOld)
	if !ok {
		return false, completion{}
	}
	if v, ok := completions.Get(raw); ok {
		return true, v.(completion)
	}
	st, _, err := readState(pod)
	c = completion{valid: err == nil, completed: err == nil && st.completed()}
	completions.Add(raw, c)
	return true, c
}

// IsInProgress is true while an in-place update of the Pod is under way: a grace period runs, or
// the state annotation is there and the update is not completed yet. A state annotation that does
// not decode counts as no update (the next update overwrites it).
func IsInProgress(pod *corev1.Pod) bool {
	if _, ok := annotation(pod, pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateGraceKeyOld); ok {
		return true
	}
	has, c := stateCompletion(pod)
	return has && c.valid && !c.completed
}

// InGracePeriod is true while an in-place update waits out its grace period (the grace annotation
// is there): its containers have not changed yet.
func InGracePeriod(pod *corev1.Pod) bool {
	_, ok := annotation(pod, pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateGraceKeyOld)
	return ok
}

// IsCompleted is true when the Pod has an in-place update state marked completed.
func IsCompleted(pod *corev1.Pod) bool {
	if _, ok := annotation(pod, pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateGraceKeyOld); ok {
		return false
	}
	has, c := stateCompletion(pod)
	return has && c.valid && c.completed
}

// EnvRestartContainers are the containers the daemon must restart, now, for them to see new
// label or annotation values through env fieldRefs: those of the current batch whose image does
// not change (the kubelet restarts those anyway). The daemon restarts such a container when its
// runtime's ExtractedEnvFromMetadataHash differs from EnvFromMetadataHash(container, pod). Nothing
// is returned during a grace period or once the update is completed. Sorted.
func EnvRestartContainers(pod *corev1.Pod) []string {
	if _, ok := annotation(pod, pub.InPlaceUpdateGraceKey, pub.InPlaceUpdateGraceKeyOld); ok {
		return nil
	}
	st, ok, err := readState(pod)
	if !ok || err != nil || st.completed() {
		return nil
	}
	var names []string
	for name := range st.EnvRestartContainers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// runtimeContainerMetas decodes the daemon's runtime-containers-meta annotation; nil when absent.
func runtimeContainerMetas(pod *corev1.Pod) (*pub.RuntimeContainerMetaSet, error) {
	raw, ok := pod.Annotations[pub.RuntimeContainerMetaKey]
	if !ok {
		return nil, nil
	}
	set := &pub.RuntimeContainerMetaSet{}
	if err := json.Unmarshal([]byte(raw), set); err != nil {
		return nil, fmt.Errorf("annotation %s of pod %s/%s does not decode: %w", pub.RuntimeContainerMetaKey, pod.Namespace, pod.Name, err)
	}
	return set, nil
}

// stateLabels and stateAnnotations are the keys in which the engine records where an update is
// (its state, a SidecarSet upgrade's state) and the lifecycle state a completion moves the Pod to.
var (
	stateLabels      = []string{pub.LifecycleStateKey}
	stateAnnotations = []string{pub.InPlaceUpdateStateKey, pub.InPlaceUpdateStateKeyOld,
		pub.SidecarSetInPlaceUpdateStateKey, pub.LifecycleTimestampKey}
)

// OnlyStateChanged is true when updated differs from pod in nothing but the engine's own records:
// the state annotations and the lifecycle state label with its timestamp. Such a write can go
// through pods/status together with the step's conditions (pods/status takes labels and
// annotations, not the spec). A change to any other label or annotation, one a user asked for,
// goes through a Pod update, where admission sees it.
func OnlyStateChanged(pod, updated *corev1.Pod) bool {
	return apiequality.Semantic.DeepEqual(withoutState(pod), withoutState(updated))
}

// CompletesThroughStatus is true when step completes an update (Done, with the Pod's records
// marked completed) and changes nothing but the engine's records and conditions: one write
// through pods/status can take it, which inplace-daemon may make (it has no Pod update
// permission) together with its runtime-containers-meta report.
func CompletesThroughStatus(pod *corev1.Pod, step *Step) bool {
	return step != nil && step.Done && step.Pod != nil && len(step.Resize) == 0 && OnlyStateChanged(pod, step.Pod)
}

// withoutState is a shallow copy of pod without the keys of stateLabels and stateAnnotations.
func withoutState(pod *corev1.Pod) *corev1.Pod {
	p := *pod
	p.Labels = withoutKeys(pod.Labels, stateLabels)
	p.Annotations = withoutKeys(pod.Annotations, stateAnnotations)
	return &p
}

func withoutKeys(m map[string]string, keys []string) map[string]string {
	out := maps.Clone(m)
	for _, k := range keys {
		delete(out, k)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
