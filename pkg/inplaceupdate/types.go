package inplaceupdate

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

const (
	// RevisionLabelKey is the Pod label that names the revision a Pod runs.
	RevisionLabelKey = appsv1.ControllerRevisionHashLabelKey

	// ReasonStartInPlaceUpdate is the reason of the InPlaceUpdateReady=False condition.
	ReasonStartInPlaceUpdate = "StartInPlaceUpdate"
	// ReasonInPlaceUpdateCompleted is the reason of InPlaceUpdateReady=True after an update.
	ReasonInPlaceUpdateCompleted = "InPlaceUpdateCompleted"
	// ReasonNoInPlaceUpdate is the reason of InPlaceUpdateReady=True on a Pod never updated in place.
	ReasonNoInPlaceUpdate = "NoInPlaceUpdate"
	// ReasonInPlaceUpdateAbandoned is the reason of InPlaceUpdateReady=True when a request set the
	// condition False and then never wrote its update (refused by kube-apiserver, or cut short).
	ReasonInPlaceUpdateAbandoned = "InPlaceUpdateAbandoned"
	// ReasonNewSpecObserved is the reason of InPlaceUpdateReady=True set by inplace-daemon when the
	// kubelet reports, through status.observedGeneration, that it syncs the Pod spec with the new
	// images of an update's last batch (see ImagesToWatch, KubeletObservedSpec).
	ReasonNewSpecObserved = "NewSpecObservedByKubelet"
	// ReasonNewImagesRunning is the reason of InPlaceUpdateReady=True set by inplace-daemon when the
	// container runtime runs the new images of an update's last batch, before the kubelet reports
	// them in the Pod status (kubelets that report no observedGeneration). The update completes
	// once the kubelet reports them.
	ReasonNewImagesRunning = "NewImagesRunning"

	// StartWindow is how long InPlaceUpdateReady=False (reason StartInPlaceUpdate) may stand on a
	// Pod without an update state before it counts as abandoned. pods/inplaceupdate writes the
	// condition and then, milliseconds later, the update; within this window nothing may mistake
	// the first write for a leftover and set the condition back to True.
	StartWindow = 30 * time.Second
)

// UpdateSpec is what an in-place update changes in a Pod. Its JSON is the content of the grace
// annotation while a grace period runs; the field names it shares with OpenKruise's UpdateSpec
// (revision, containerImages, containerRefMetadata, containerResources, updateEnvFromMetadata,
// graceSeconds) have OpenKruise's meaning. Pod labels and annotations are a structured Metadata
// change instead of OpenKruise's base64 strategic-merge patch.
type UpdateSpec struct {
	// Revision is written to the Pod's controller-revision-hash label (when not empty) and to the
	// state annotation.
	Revision string `json:"revision"`
	// ContainerImages maps a container name to its new image.
	ContainerImages map[string]string `json:"containerImages,omitempty"`
	// ContainerRefMetadata maps the name of a container that reads a changed label or annotation
	// through an env fieldRef to those labels and annotations with their new values. They are
	// set on the Pod in the container's batch, not before. A container listed here whose image
	// does not change must be restarted by the daemon (see EnvRestartContainers); one whose image
	// changes is restarted by the kubelet anyway and sees the new values then.
	ContainerRefMetadata map[string]metav1.ObjectMeta `json:"containerRefMetadata,omitempty"`
	// ContainerResources maps a container name to the cpu and memory requests and limits it must
	// have; they go through the pods/resize subresource.
	ContainerResources map[string]corev1.ResourceRequirements `json:"containerResources,omitempty"`
	// Metadata holds the label and annotation changes no container reads through env; they are
	// applied to the Pod with the first batch.
	Metadata *MetadataChange `json:"metadata,omitempty"`
	// UpdateEnvFromMetadata is true when at least one container must be restarted by the daemon
	// to see new env-from-metadata values.
	UpdateEnvFromMetadata bool `json:"updateEnvFromMetadata,omitempty"`
	// GraceSeconds is how long the Pod stays not ready before any container changes.
	GraceSeconds int32 `json:"graceSeconds,omitempty"`
	// SidecarSet, when set, makes the update a SidecarSet's in-place upgrade of the sidecar
	// containers it injected (see sidecar.go): Revision is the SidecarSet's hash and only
	// ContainerImages is used.
	SidecarSet *SidecarSetUpdate `json:"sidecarSet,omitempty"`
	// CompletionLabels are set on the Pod by the write that records the update completed (see
	// completeState).
	CompletionLabels map[string]string `json:"completionLabels,omitempty"`
	// StayInService keeps InPlaceUpdateReady as it is: the Pod stays in service while its
	// containers change (see needsUnready).
	StayInService bool `json:"stayInService,omitempty"`
}

// MetadataChange is a change of Pod labels and annotations.
type MetadataChange struct {
	// Labels to set.
	Labels map[string]string `json:"labels,omitempty"`
	// Annotations to set.
	Annotations map[string]string `json:"annotations,omitempty"`
	// RemoveLabels are label keys to delete.
	RemoveLabels []string `json:"removeLabels,omitempty"`
	// RemoveAnnotations are annotation keys to delete.
	RemoveAnnotations []string `json:"removeAnnotations,omitempty"`
}

func (m *MetadataChange) isEmpty() bool {
	return m == nil || len(m.Labels)+len(m.Annotations)+len(m.RemoveLabels)+len(m.RemoveAnnotations) == 0
}

// IsEmpty is true when the spec changes nothing but (possibly) the revision.
func (s *UpdateSpec) IsEmpty() bool {
	return len(s.ContainerImages) == 0 && len(s.ContainerRefMetadata) == 0 &&
		len(s.ContainerResources) == 0 && s.Metadata.isEmpty()
}

// EnvRestartContainers are the containers the daemon must restart so that they see new values of
// Pod labels or annotations through env fieldRefs: those in ContainerRefMetadata whose image does
// not change (an image change restarts the container anyway; restarting it a second time for the
// env is OpenKruise issue #1239). Sorted.
func (s *UpdateSpec) EnvRestartContainers() []string {
	var names []string
	for name := range s.ContainerRefMetadata {
		if _, ok := s.ContainerImages[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// containerNames are all containers the spec touches.
func (s *UpdateSpec) containerNames() map[string]bool {
	names := map[string]bool{}
	for name := range s.ContainerImages {
		names[name] = true
	}
	for name := range s.ContainerRefMetadata {
		names[name] = true
	}
	for name := range s.ContainerResources {
		names[name] = true
	}
	return names
}

func (s *UpdateSpec) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Step is what the caller must write after Begin or Progress, in this order:
//
//  1. Conditions through pods/status (a strategic merge patch, see StatusPatch), when any;
//  2. Resize through pods/resize, one container at a time or together, when any;
//  3. Pod with an update of the Pod (metadata and spec), when not nil, carrying the resources and
//     the resourceVersion the resize left.
//
// The resize comes before the Pod update so that the kubelet lowers a memory limit on the
// container that runs before the update restarts it (a new image or env-from-metadata): on a
// container it has just started, it refuses a lower limit until it has the container's memory
// stats. Writing Conditions changes the Pod's resourceVersion; a caller that updates (rather than
// patches) the Pod may call Begin or Progress again on the Pod the status write returned: the
// conditions are then already set and the same Step comes back without them; likewise after the
// resize, the same Step comes back with a resize that changes nothing.
type Step struct {
	// Pod is the Pod to write, or nil when the Pod itself must not change. The input Pod is never
	// modified.
	Pod *corev1.Pod
	// Conditions are Pod conditions to set through pods/status, before the Pod is written.
	Conditions []corev1.PodCondition
	// Resize maps a container name to the resources to set through pods/resize, before the Pod
	// is written. Only cpu and memory appear.
	Resize map[string]corev1.ResourceRequirements
	// State is the in-place update state after this step, or nil when the Pod has none.
	State *pub.InPlaceUpdateState
	// RequeueAfter is set while a grace period runs: call Progress again after it.
	RequeueAfter time.Duration
	// Done is true when the in-place update is over (or there is none).
	Done bool
	// Message says what happened or what the update waits for.
	Message string
}

// NotInPlaceError says why a change cannot be made in place.
type NotInPlaceError struct {
	// Field is the path of the offending field, e.g. "spec.containers[0].env".
	Field string
	// Reason says what happened to the field and why that cannot be done in place.
	Reason string
}

func (e *NotInPlaceError) Error() string {
	return fmt.Sprintf("%s %s", e.Field, e.Reason)
}

// ErrInProgress matches (errors.Is) an InProgressError; callers answer it with 409 Conflict.
var ErrInProgress = errors.New("another in-place update is in progress")

// InProgressError refuses a request while a different in-place update of the Pod is in progress.
type InProgressError struct {
	// Revision of the update in progress.
	Revision string
	// Requested is the revision of the refused request.
	Requested string
}

func (e *InProgressError) Error() string {
	if e.Revision == e.Requested {
		return fmt.Sprintf("an in-place update to revision %q with other changes is in progress; wait until it is done", e.Revision)
	}
	return fmt.Sprintf("an in-place update to revision %q is in progress; wait until it is done before updating to revision %q", e.Revision, e.Requested)
}

// Is makes errors.Is(err, ErrInProgress) true.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// ErrPodNotUpdatable matches (errors.Is) a PodNotUpdatableError; callers answer it with
// 409 Conflict (the Pod is in a state that does not allow the update, the request itself may be
// fine).
var ErrPodNotUpdatable = errors.New("the pod cannot be updated in place")

// PodNotUpdatableError refuses an update because of the Pod's own state.
type PodNotUpdatableError struct {
	// Reason, e.g. "the pod is being deleted".
	Reason string
}

func (e *PodNotUpdatableError) Error() string {
	return "the pod cannot be updated in place: " + e.Reason
}

// Is makes errors.Is(err, ErrPodNotUpdatable) true.
func (e *PodNotUpdatableError) Is(target error) bool { return target == ErrPodNotUpdatable }

// InvalidRequestError refuses an in-place update request; callers answer it with 422 Invalid and
// the field errors.
type InvalidRequestError struct {
	Errs field.ErrorList
}

func (e *InvalidRequestError) Error() string {
	return e.Errs.ToAggregate().Error()
}
