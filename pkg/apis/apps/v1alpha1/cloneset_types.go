package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

const (
	// CloneSetInstanceID is the label that ties a Pod to its PVCs.
	CloneSetInstanceID = "apps.kruise.io/cloneset-instance-id"
	// SpecifiedDeleteKey is the Pod label that asks the workload to delete this Pod first.
	SpecifiedDeleteKey = "apps.kruise.io/specified-delete"
	// DefaultCloneSetMaxUnavailable is updateStrategy.maxUnavailable when left empty.
	DefaultCloneSetMaxUnavailable = "20%"
)

// CloneSetSpec is the desired state of a CloneSet.
type CloneSetSpec struct {
	// Replicas is the desired number of Pods. Defaults to 1.
	// +optional
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`
	// Selector is a label query over Pods that should match the replica count.
	// It must match the Pod template's labels.
	Selector *metav1.LabelSelector `json:"selector" protobuf:"bytes,2,opt,name=selector"`
	// Template describes the Pods that will be created.
	Template corev1.PodTemplateSpec `json:"template" protobuf:"bytes,3,opt,name=template"`
	// VolumeClaimTemplates are PVCs created for each Pod, bound to it by the instance-id label.
	// +optional
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty" protobuf:"bytes,4,rep,name=volumeClaimTemplates"`
	// ScaleStrategy says how Pods are created and deleted when scaling.
	// +optional
	ScaleStrategy CloneSetScaleStrategy `json:"scaleStrategy,omitempty" protobuf:"bytes,5,opt,name=scaleStrategy"`
	// UpdateStrategy says how Pods are updated to a new revision.
	// +optional
	UpdateStrategy CloneSetUpdateStrategy `json:"updateStrategy,omitempty" protobuf:"bytes,6,opt,name=updateStrategy"`
	// RevisionHistoryLimit is how many old revisions are kept. Defaults to 10.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty" protobuf:"varint,7,opt,name=revisionHistoryLimit"`
	// MinReadySeconds is how long a new Pod must be ready, without any container crashing,
	// to count as available. Defaults to 0.
	// +optional
	MinReadySeconds int32 `json:"minReadySeconds,omitempty" protobuf:"varint,8,opt,name=minReadySeconds"`
	// Lifecycle defines the hooks honoured around Pod deletion and in-place update.
	// +optional
	Lifecycle *pub.Lifecycle `json:"lifecycle,omitempty" protobuf:"bytes,9,opt,name=lifecycle"`
	// ProgressDeadlineSeconds is how long, in seconds, the CloneSet may take to become available
	// (or paused, or done up to its partition) before its Progressing condition turns False with
	// reason ProgressDeadlineExceeded, counted from the moment that condition last changed reason.
	// Unset (the default) or math.MaxInt32 means no deadline and no Progressing condition.
	// +optional
	ProgressDeadlineSeconds *int32 `json:"progressDeadlineSeconds,omitempty" protobuf:"varint,10,opt,name=progressDeadlineSeconds"`
}

// CloneSetScaleStrategy says how Pods are created and deleted when scaling.
type CloneSetScaleStrategy struct {
	// PodsToDelete names Pods to delete first; they are removed from the list once deleted.
	// +optional
	PodsToDelete []string `json:"podsToDelete,omitempty" protobuf:"bytes,1,rep,name=podsToDelete"`
	// MaxUnavailable limits how many Pods may be unavailable while scaling up.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty" protobuf:"bytes,2,opt,name=maxUnavailable"`
	// DisablePVCReuse deletes the PVCs of a Pod that was deleted outside of the CloneSet
	// instead of reusing them for its replacement.
	// +optional
	DisablePVCReuse bool `json:"disablePVCReuse,omitempty" protobuf:"varint,3,opt,name=disablePVCReuse"`
}

// CloneSetUpdateStrategy says how Pods are updated to a new revision.
type CloneSetUpdateStrategy struct {
	// Type is ReCreate (default), InPlaceIfPossible, InPlaceOnly or OnDelete.
	// +optional
	Type CloneSetUpdateStrategyType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=CloneSetUpdateStrategyType"`
	// Partition is the number or percentage of Pods kept at the old revision. Defaults to 0.
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty" protobuf:"bytes,2,opt,name=partition"`
	// MaxUnavailable is the most Pods that may be unavailable during the update,
	// a number or a percentage. Defaults to 20%.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty" protobuf:"bytes,3,opt,name=maxUnavailable"`
	// MaxSurge is the most Pods that may be created above the desired replicas during the
	// update, a number or a percentage. Defaults to 0.
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty" protobuf:"bytes,4,opt,name=maxSurge"`
	// Paused stops the update where it is.
	// +optional
	Paused bool `json:"paused,omitempty" protobuf:"varint,5,opt,name=paused"`
	// PriorityStrategy orders Pods for update.
	// +optional
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty" protobuf:"bytes,6,opt,name=priorityStrategy"`
	// ScatterStrategy spreads Pods with the given labels over the update order.
	// +optional
	ScatterStrategy pub.UpdateScatterStrategy `json:"scatterStrategy,omitempty" protobuf:"bytes,7,rep,name=scatterStrategy"`
	// InPlaceUpdateStrategy tunes in-place updates.
	// +optional
	InPlaceUpdateStrategy *pub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty" protobuf:"bytes,8,opt,name=inPlaceUpdateStrategy"`
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
	// or in place of one the user deleted, come at the update revision (OpenKruise v1.9).
	OnDeleteCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "OnDelete"
)

// CloneSetStatus is the observed state of a CloneSet.
type CloneSetStatus struct {
	// ObservedGeneration is the most recent generation observed by the controller.
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,1,opt,name=observedGeneration"`
	// Replicas is the number of Pods the CloneSet owns.
	Replicas int32 `json:"replicas" protobuf:"varint,2,opt,name=replicas"`
	// ReadyReplicas is the number of ready Pods.
	ReadyReplicas int32 `json:"readyReplicas" protobuf:"varint,3,opt,name=readyReplicas"`
	// AvailableReplicas is the number of Pods ready for at least minReadySeconds.
	AvailableReplicas int32 `json:"availableReplicas" protobuf:"varint,4,opt,name=availableReplicas"`
	// UpdatedReplicas is the number of Pods at the update revision.
	UpdatedReplicas int32 `json:"updatedReplicas" protobuf:"varint,5,opt,name=updatedReplicas"`
	// UpdatedReadyReplicas is the number of ready Pods at the update revision.
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas" protobuf:"varint,6,opt,name=updatedReadyReplicas"`
	// UpdatedAvailableReplicas is the number of available Pods at the update revision.
	UpdatedAvailableReplicas int32 `json:"updatedAvailableReplicas,omitempty" protobuf:"varint,7,opt,name=updatedAvailableReplicas"`
	// ExpectedUpdatedReplicas is the number of Pods that should be at the update revision
	// once partition is honoured.
	ExpectedUpdatedReplicas int32 `json:"expectedUpdatedReplicas,omitempty" protobuf:"varint,8,opt,name=expectedUpdatedReplicas"`
	// UpdateRevision is the revision of the current template.
	UpdateRevision string `json:"updateRevision,omitempty" protobuf:"bytes,9,opt,name=updateRevision"`
	// CurrentRevision is the revision all Pods were at before the update began.
	CurrentRevision string `json:"currentRevision,omitempty" protobuf:"bytes,10,opt,name=currentRevision"`
	// CollisionCount counts hash collisions of revisions; it salts the next revision name.
	CollisionCount *int32 `json:"collisionCount,omitempty" protobuf:"varint,11,opt,name=collisionCount"`
	// Conditions are the latest observations of the CloneSet's state.
	Conditions []CloneSetCondition `json:"conditions,omitempty" protobuf:"bytes,12,rep,name=conditions"`
	// LabelSelector is the selector in string form, for the scale subresource and HPA.
	LabelSelector string `json:"labelSelector,omitempty" protobuf:"bytes,13,opt,name=labelSelector"`
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
	Type   CloneSetConditionType  `json:"type" protobuf:"bytes,1,opt,name=type,casttype=CloneSetConditionType"`
	Status corev1.ConditionStatus `json:"status" protobuf:"bytes,2,opt,name=status,casttype=k8s.io/api/core/v1.ConditionStatus"`
	// LastUpdateTime is when the condition last changed status or reason. As in OpenKruise, only
	// the Progressing condition sets it.
	// +optional
	LastUpdateTime metav1.Time `json:"lastUpdateTime,omitempty" protobuf:"bytes,3,opt,name=lastUpdateTime"`
	// LastTransitionTime is when the condition last changed status.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty" protobuf:"bytes,4,opt,name=lastTransitionTime"`
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,5,opt,name=reason"`
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,6,opt,name=message"`
}

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CloneSet manages a set of identical Pods and updates them in place where it can.
type CloneSet struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec CloneSetSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status CloneSetStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// CloneSetList is a list of CloneSets.
type CloneSetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []CloneSet `json:"items" protobuf:"bytes,2,rep,name=items"`
}
