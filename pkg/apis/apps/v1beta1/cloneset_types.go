package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// CloneSet at v1beta1 is OpenKruise's master-branch shape (OpenKruise v1.9 serves CloneSet at
// v1alpha1 only): the update strategy is a type (RollingUpdate or OnDelete) with the rolling
// update's parameters under rollingUpdate, podUpdatePolicy there being v1alpha1's type; the
// image pre-download settings are fields of inPlaceUpdateStrategy instead of v1alpha1's
// annotations; scaleStrategy has enablePVCReuse (v1alpha1's disablePVCReuse, inverted) and
// excludePreparingDelete (v1alpha1's label).

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
	// reason ProgressDeadlineExceeded. Unset means no deadline and no Progressing condition.
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
	// EnablePVCReuse reuses the PVCs of a Pod deleted outside of the CloneSet for its
	// replacement. Defaults to false (v1alpha1's disablePVCReuse, inverted, whose default reuses).
	// +optional
	EnablePVCReuse bool `json:"enablePVCReuse,omitempty" protobuf:"varint,3,opt,name=enablePVCReuse"`
	// ExcludePreparingDelete leaves Pods waiting in PreparingDelete out of the replica count
	// when scaling (v1alpha1's label apps.kruise.io/cloneset-scaling-exclude-preparing-delete).
	// +optional
	ExcludePreparingDelete bool `json:"excludePreparingDelete,omitempty" protobuf:"varint,4,opt,name=excludePreparingDelete"`
}

// CloneSetUpdateStrategyType is RollingUpdate or OnDelete.
type CloneSetUpdateStrategyType string

const (
	// RollingUpdateCloneSetUpdateStrategyType updates Pods as rollingUpdate says (the default).
	RollingUpdateCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteCloneSetUpdateStrategyType never updates an existing Pod: a Pod deleted by the
	// user, and a Pod created by scaling, comes at the update revision.
	OnDeleteCloneSetUpdateStrategyType CloneSetUpdateStrategyType = "OnDelete"
)

// CloneSetPodUpdateStrategyType is how one Pod of a rolling update reaches the new revision.
type CloneSetPodUpdateStrategyType string

const (
	// RecreateCloneSetPodUpdateStrategyType deletes the Pod and creates a new one (the default).
	RecreateCloneSetPodUpdateStrategyType CloneSetPodUpdateStrategyType = "ReCreate"
	// InPlaceIfPossibleCloneSetPodUpdateStrategyType updates in place when the change allows it
	// and recreates otherwise.
	InPlaceIfPossibleCloneSetPodUpdateStrategyType CloneSetPodUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyCloneSetPodUpdateStrategyType only updates in place and never recreates.
	InPlaceOnlyCloneSetPodUpdateStrategyType CloneSetPodUpdateStrategyType = "InPlaceOnly"
)

// CloneSetUpdateStrategy says how Pods are updated to a new revision.
type CloneSetUpdateStrategy struct {
	// Type is RollingUpdate (the default) or OnDelete.
	// +optional
	Type CloneSetUpdateStrategyType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=CloneSetUpdateStrategyType"`
	// RollingUpdate tunes a RollingUpdate.
	// +optional
	RollingUpdate *RollingUpdateCloneSetStrategy `json:"rollingUpdate,omitempty" protobuf:"bytes,2,opt,name=rollingUpdate"`
}

// RollingUpdateCloneSetStrategy tunes a rolling update.
type RollingUpdateCloneSetStrategy struct {
	// Partition is the number or percentage of Pods kept at the old revision. Defaults to 0.
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty" protobuf:"bytes,1,opt,name=partition"`
	// MaxUnavailable is the most Pods that may be unavailable during the update, a number or a
	// percentage. Defaults to 20%.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty" protobuf:"bytes,2,opt,name=maxUnavailable"`
	// MaxSurge is the most Pods that may be created above the desired replicas during the
	// update, a number or a percentage. Defaults to 0.
	// +optional
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty" protobuf:"bytes,3,opt,name=maxSurge"`
	// PodUpdatePolicy is ReCreate (the default), InPlaceIfPossible or InPlaceOnly.
	// +optional
	PodUpdatePolicy CloneSetPodUpdateStrategyType `json:"podUpdatePolicy,omitempty" protobuf:"bytes,4,opt,name=podUpdatePolicy,casttype=CloneSetPodUpdateStrategyType"`
	// Paused stops the update where it is.
	// +optional
	Paused bool `json:"paused,omitempty" protobuf:"varint,5,opt,name=paused"`
	// PriorityStrategy orders Pods for update.
	// +optional
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty" protobuf:"bytes,6,opt,name=priorityStrategy"`
	// ScatterStrategy spreads Pods with the given labels over the update order.
	// +optional
	ScatterStrategy pub.UpdateScatterStrategy `json:"scatterStrategy,omitempty" protobuf:"bytes,7,rep,name=scatterStrategy"`
	// InPlaceUpdateStrategy tunes in-place updates and the pre-download of the new images.
	// +optional
	InPlaceUpdateStrategy *InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty" protobuf:"bytes,8,opt,name=inPlaceUpdateStrategy"`
}

// InPlaceUpdateStrategy tunes in-place updates; in v1beta1 it also holds the image pre-download
// settings v1alpha1 keeps in the CloneSet's annotations apps.kruise.io/image-predownload-*.
type InPlaceUpdateStrategy struct {
	// GracePeriodSeconds is the time between marking a Pod not ready and updating its images.
	// +optional
	GracePeriodSeconds int32 `json:"gracePeriodSeconds,omitempty" protobuf:"varint,1,opt,name=gracePeriodSeconds"`
	// ImagePreDownloadParallelism is the parallelism of the ImagePullJob that pre-downloads a new
	// revision's images (v1alpha1: annotation apps.kruise.io/image-predownload-parallelism).
	// +optional
	ImagePreDownloadParallelism *intstr.IntOrString `json:"imagePreDownloadParallelism,omitempty" protobuf:"bytes,2,opt,name=imagePreDownloadParallelism"`
	// ImagePreDownloadTimeoutSeconds is that job's pull timeout, default 600 (v1alpha1:
	// annotation apps.kruise.io/image-predownload-timeout-seconds).
	// +optional
	ImagePreDownloadTimeoutSeconds *int32 `json:"imagePreDownloadTimeoutSeconds,omitempty" protobuf:"varint,3,opt,name=imagePreDownloadTimeoutSeconds"`
	// ImagePreDownloadMinUpdatedReadyPods is how many updated Pods must be ready before the
	// pre-download starts (v1alpha1: annotation
	// apps.kruise.io/image-predownload-min-updated-ready-pods).
	// +optional
	ImagePreDownloadMinUpdatedReadyPods *int32 `json:"imagePreDownloadMinUpdatedReadyPods,omitempty" protobuf:"varint,4,opt,name=imagePreDownloadMinUpdatedReadyPods"`
}

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

// CloneSetCondition is one observation of a CloneSet's state.
type CloneSetCondition struct {
	// Type is FailedScale, FailedUpdate or Progressing.
	Type   CloneSetConditionType  `json:"type" protobuf:"bytes,1,opt,name=type,casttype=CloneSetConditionType"`
	Status corev1.ConditionStatus `json:"status" protobuf:"bytes,2,opt,name=status,casttype=k8s.io/api/core/v1.ConditionStatus"`
	// LastUpdateTime is when the condition last changed status or reason.
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
