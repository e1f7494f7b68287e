package apps

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// CloneSetSpec is the desired state of a CloneSet.
type CloneSetSpec struct {
	// Replicas is the desired number of Pods. Defaults to 1.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Selector is a label query over Pods that should match the replica count.
	// It must match the Pod template's labels.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template describes the Pods that will be created.
	Template corev1.PodTemplateSpec `json:"template"`
	// VolumeClaimTemplates are PVCs created for each Pod, bound to it by the instance-id label.
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	// ScaleStrategy says how Pods are created and deleted when scaling.
	// +optional
	ScaleStrategy CloneSetScaleStrategy `json:"scaleStrategy,omitempty"`
	// UpdateStrategy says how Pods are updated to a new revision.
	// +optional
	UpdateStrategy CloneSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// RevisionHistoryLimit is how many old revisions are kept. Defaults to 10.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	// MinReadySeconds is how long a new Pod must be ready, without any container crashing,
	// to count as available. Defaults to 0.
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// Lifecycle defines the hooks honoured around Pod deletion and in-place update.
	// +optional
	Lifecycle *pub.Lifecycle `json:"lifecycle,omitempty"`
	// ProgressDeadlineSeconds is how long, in seconds, the CloneSet may take to become available
	// (or paused, or done up to its partition) before its Progressing condition turns False with
	// reason ProgressDeadlineExceeded, counted from the moment that condition last changed reason.
	// Unset (the default) or math.MaxInt32 means no deadline and no Progressing condition.
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty"`
}

// CloneSetScaleStrategy says how Pods are created and deleted when scaling.
type CloneSetScaleStrategy struct {
	// PodsToDelete names Pods to delete first; they are removed from the list once deleted.
	// +optional
	PodsToDelete []string `json:"podsToDelete,omitempty"`
	// MaxUnavailable limits how many Pods may be unavailable while scaling up.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// DisablePVCReuse deletes the PVCs of a Pod that was deleted outside of the CloneSet
	// instead of reusing them for its replacement.
	// +optional
	DisablePVCReuse bool `json:"disablePVCReuse,omitempty"`
}

// CloneSetUpdateStrategy says how Pods are updated to a new revision.
type CloneSetUpdateStrategy struct {
	// Type is ReCreate (default), InPlaceIfPossible, InPlaceOnly or OnDelete.
	// +optional
	Type CloneSetUpdateStrategyType `json:"type,omitempty"`
	// Partition is the number or percentage of Pods kept at the old revision. Defaults to 0.
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`
	// MaxUnavailable is the most Pods that may be unavailable during the update,
	// a number or a percentage. Defaults to 20%.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// MaxSurge is the most Pods that may be created above the desired replicas during the
	// update, a number or a percentage. Defaults to 0.
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
	// Paused stops the update where it is.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// PriorityStrategy orders Pods for update.
	// +optional
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`
	// ScatterStrategy spreads Pods with the given labels over the update order.
	// +optional
	ScatterStrategy pub.UpdateScatterStrategy `json:"scatterStrategy,omitempty"`
	// InPlaceUpdateStrategy tunes in-place updates.
	// +optional
	InPlaceUpdateStrategy *pub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`
}

// CloneSetUpdateStrategyType is how Pods reach a new revision.
type CloneSetUpdateStrategyType string

const (
	// RecreateCloneSetUpdateStrategyType deletes old Pods and creates new ones.
	RecreateCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "ReCreate"
	// InPlaceIfPossibleCloneSetUpdateStrategyType updates in place when the change allows it
	// and recreates otherwise.
	InPlaceIfPossibleCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyCloneSetUpdateStrategyType only updates in place and never recreates.
	InPlaceOnlyCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "InPlaceOnly"
	// OnDeleteCloneSetUpdateStrategyType never updates an existing Pod: Pods created by scaling,
	// or in place of one the user deleted, come at the update revision. It is v1beta1's
	// updateStrategy.type OnDelete (OpenKruise v1.9's v1alpha1 accepts it too).
	OnDeleteCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "OnDelete"
)

// CloneSetStatus is the observed state of a CloneSet.
type CloneSetStatus struct {
	// ObservedGeneration is the most recent generation observed by the controller.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Replicas is the number of Pods the CloneSet owns.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas is the number of ready Pods.
	ReadyReplicas int32 `json:"readyReplicas"`
	// AvailableReplicas is the number of Pods ready for at least minReadySeconds.
	AvailableReplicas int32 `json:"availableReplicas"`
	// UpdatedReplicas is the number of Pods at the update revision.
	UpdatedReplicas int32 `json:"updatedReplicas"`
	// UpdatedReadyReplicas is the number of ready Pods at the update revision.
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas"`
	// UpdatedAvailableReplicas is the number of available Pods at the update revision.
	UpdatedAvailableReplicas int32 `json:"updatedAvailableReplicas,omitempty"`
	// ExpectedUpdatedReplicas is the number of Pods that should be at the update revision
	// once partition is honoured.
	ExpectedUpdatedReplicas int32 `json:"expectedUpdatedReplicas,omitempty"`
	// UpdateRevision is the revision of the current template.
	UpdateRevision string `json:"updateRevision,omitempty"`
	// CurrentRevision is the revision all Pods were at before the update began.
	CurrentRevision string `json:"currentRevision,omitempty"`
	// CollisionCount counts hash collisions of revisions; it salts the next revision name.
	CollisionCount *int32 `json:"collisionCount,omitempty"`
	// Conditions are the latest observations of the CloneSet's state.
	Conditions []CloneSetCondition `json:"conditions,omitempty"`
	// LabelSelector is the selector in string form, for the scale subresource and HPA.
	LabelSelector string `json:"labelSelector,omitempty"`
}

// CloneSetConditionType names a CloneSet condition.
type CloneSetConditionType string

const (
	// CloneSetConditionFailedScale is True when Pods could not be created or deleted.
	CloneSetConditionFailedScale CloneSetConditionType = "FailedScale"
	// CloneSetConditionFailedUpdate is True when Pods could not be updated.
	CloneSetConditionFailedUpdate CloneSetConditionType = "FailedUpdate"
	// CloneSetConditionTypeProgressing tracks spec.progressDeadlineSeconds; it is present only
	// while a deadline is set.
	CloneSetConditionTypeProgressing CloneSetConditionType = "Progressing"
)

// CloneSetConditionReason is a reason of the Progressing condition.
type CloneSetConditionReason string

const (
	// CloneSetProgressDeadlineExceeded (status False): the CloneSet did not become available,
	// paused or partition-available within progressDeadlineSeconds.
	CloneSetProgressDeadlineExceeded CloneSetConditionReason = "ProgressDeadlineExceeded"
	// CloneSetProgressPaused (status True): updateStrategy.paused is set.
	CloneSetProgressPaused CloneSetConditionReason = "CloneSetPaused"
	// CloneSetProgressUpdated (status True): the CloneSet is progressing and the deadline runs.
	CloneSetProgressUpdated CloneSetConditionReason = "CloneSetUpdated"
	// CloneSetProgressPartitionAvailable (status True): the Pods the partition lets update are
	// updated and available.
	CloneSetProgressPartitionAvailable CloneSetConditionReason = "ProgressPartitionAvailable"
	// CloneSetAvailable (status True): every replica is updated and available.
	CloneSetAvailable CloneSetConditionReason = "CloneSetAvailable"
)

// CloneSetCondition is one observation of a CloneSet's state.
type CloneSetCondition struct {
	Type   CloneSetConditionType  `json:"type"`
	Status corev1.ConditionStatus `json:"status"`
	// LastUpdateTime is when the condition last changed status or reason. As in OpenKruise, only
	// the Progressing condition sets it.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty"`
	// LastTransitionTime is when the condition last changed status.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CloneSet manages a set of identical Pods and updates them in place where it can.
type CloneSet struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec CloneSetSpec `json:"spec,omitempty"`
	// +optional
	Status CloneSetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CloneSetList is a list of CloneSets.
type CloneSetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CloneSet `json:"items"`
}
