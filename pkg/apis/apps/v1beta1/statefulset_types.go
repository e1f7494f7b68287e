package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// The Advanced StatefulSet at apps.kruise.io/v1beta1, its storage version: field names and JSON
// tags are OpenKruise's (kruise-api apps/v1beta1).

// StatefulSetSpec is the desired state of an Advanced StatefulSet.
type StatefulSetSpec struct {
	// Replicas is the desired number of Pods. Defaults to 1.
	Replicas *int32 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`
	// Selector is a label query over Pods that must match the template's labels.
	Selector *metav1.LabelSelector `json:"selector" protobuf:"bytes,2,opt,name=selector"`
	// Template describes the Pods; each is named <set>-<ordinal>.
	Template corev1.PodTemplateSpec `json:"template" protobuf:"bytes,3,opt,name=template"`
	// VolumeClaimTemplates are the claims each Pod gets, named <template>-<set>-<ordinal>.
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty" protobuf:"bytes,4,rep,name=volumeClaimTemplates"`
	// VolumeClaimUpdateStrategy says when claims follow a changed claim template.
	VolumeClaimUpdateStrategy VolumeClaimUpdateStrategy `json:"volumeClaimUpdateStrategy,omitempty" protobuf:"bytes,5,opt,name=volumeClaimUpdateStrategy"`
	// ServiceName is the governing Service of the set's Pods (their hostname's subdomain).
	ServiceName string `json:"serviceName,omitempty" protobuf:"bytes,6,opt,name=serviceName"`
	// PodManagementPolicy is OrderedReady (default: one Pod at a time, in ordinal order) or
	// Parallel.
	PodManagementPolicy appsv1.PodManagementPolicyType `json:"podManagementPolicy,omitempty" protobuf:"bytes,7,opt,name=podManagementPolicy,casttype=k8s.io/api/apps/v1.PodManagementPolicyType"`
	// UpdateStrategy says how Pods reach a new revision.
	UpdateStrategy StatefulSetUpdateStrategy `json:"updateStrategy,omitempty" protobuf:"bytes,8,opt,name=updateStrategy"`
	// RevisionHistoryLimit is how many old revisions are kept. Defaults to 10.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty" protobuf:"varint,9,opt,name=revisionHistoryLimit"`
	// ReserveOrdinals are ordinals (or ranges "a-b") that are never used: Pods skip them.
	ReserveOrdinals []intstr.IntOrString `json:"reserveOrdinals,omitempty" protobuf:"bytes,10,rep,name=reserveOrdinals"`
	// Lifecycle defines the hooks honoured around Pod deletion and in-place update.
	Lifecycle *pub.Lifecycle `json:"lifecycle,omitempty" protobuf:"bytes,11,opt,name=lifecycle"`
	// ScaleStrategy tunes scaling.
	ScaleStrategy *StatefulSetScaleStrategy `json:"scaleStrategy,omitempty" protobuf:"bytes,12,opt,name=scaleStrategy"`
	// PersistentVolumeClaimRetentionPolicy says what happens to the claims when the set is
	// deleted or scaled down. Defaults to Retain for both.
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty" protobuf:"bytes,13,opt,name=persistentVolumeClaimRetentionPolicy"`
	// Ordinals sets the first ordinal (default 0).
	Ordinals *StatefulSetOrdinals `json:"ordinals,omitempty" protobuf:"bytes,14,opt,name=ordinals"`
}

// VolumeClaimUpdateStrategyType is when claims follow a changed claim template.
type VolumeClaimUpdateStrategyType string

const (
	// OnPodRollingUpdateVolumeClaimUpdateStrategyType updates claims as their Pod is updated.
	OnPodRollingUpdateVolumeClaimUpdateStrategyType VolumeClaimUpdateStrategyType = "OnPodRollingUpdate"
	// OnPVCDeleteVolumeClaimUpdateStrategyType uses the new template only for claims created anew.
	OnPVCDeleteVolumeClaimUpdateStrategyType VolumeClaimUpdateStrategyType = "OnDelete"
)

// VolumeClaimUpdateStrategy says when claims follow a changed claim template.
type VolumeClaimUpdateStrategy struct {
	Type VolumeClaimUpdateStrategyType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=VolumeClaimUpdateStrategyType"`
}

// StatefulSetUpdateStrategy says how Pods reach a new revision.
type StatefulSetUpdateStrategy struct {
	// Type is RollingUpdate (default) or OnDelete.
	Type appsv1.StatefulSetUpdateStrategyType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=k8s.io/api/apps/v1.StatefulSetUpdateStrategyType"`
	// RollingUpdate tunes the RollingUpdate type.
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty" protobuf:"bytes,2,opt,name=rollingUpdate"`
}

// RollingUpdateStatefulSetStrategy tunes a rolling update.
type RollingUpdateStatefulSetStrategy struct {
	// Partition: Pods with an ordinal below it keep the old revision. Defaults to 0.
	Partition *int32 `json:"partition,omitempty" protobuf:"varint,1,opt,name=partition"`
	// MaxUnavailable is how many Pods may be unavailable during the update (a number or a
	// percentage of replicas). Defaults to 1.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty" protobuf:"bytes,2,opt,name=maxUnavailable"`
	// PodUpdatePolicy is ReCreate (default), InPlaceIfPossible or InPlaceOnly.
	PodUpdatePolicy PodUpdateStrategyType `json:"podUpdatePolicy,omitempty" protobuf:"bytes,3,opt,name=podUpdatePolicy,casttype=PodUpdateStrategyType"`
	// Paused stops the update where it is.
	Paused bool `json:"paused,omitempty" protobuf:"varint,4,opt,name=paused"`
	// UnorderedUpdate updates Pods by priority instead of reverse ordinal (Parallel only).
	UnorderedUpdate *UnorderedUpdateStrategy `json:"unorderedUpdate,omitempty" protobuf:"bytes,5,opt,name=unorderedUpdate"`
	// InPlaceUpdateStrategy tunes in-place updates.
	InPlaceUpdateStrategy *pub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty" protobuf:"bytes,6,opt,name=inPlaceUpdateStrategy"`
	// MinReadySeconds is how long an updated Pod must be ready before the next is updated.
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty" protobuf:"varint,7,opt,name=minReadySeconds"`
}

// UnorderedUpdateStrategy orders the update by priority.
type UnorderedUpdateStrategy struct {
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty" protobuf:"bytes,1,opt,name=priorityStrategy"`
}

// PodUpdateStrategyType is how one Pod reaches a new revision.
type PodUpdateStrategyType string

const (
	// RecreatePodUpdateStrategyType deletes the Pod and creates it again.
	RecreatePodUpdateStrategyType PodUpdateStrategyType = "ReCreate"
	// InPlaceIfPossiblePodUpdateStrategyType updates in place when the change allows it.
	InPlaceIfPossiblePodUpdateStrategyType PodUpdateStrategyType = "InPlaceIfPossible"
	// InPlaceOnlyPodUpdateStrategyType only updates in place.
	InPlaceOnlyPodUpdateStrategyType PodUpdateStrategyType = "InPlaceOnly"
)

// PersistentVolumeClaimRetentionPolicyType is Retain or Delete.
type PersistentVolumeClaimRetentionPolicyType string

const (
	// RetainPersistentVolumeClaimRetentionPolicyType keeps the claims.
	RetainPersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Retain"
	// DeletePersistentVolumeClaimRetentionPolicyType deletes the claims.
	DeletePersistentVolumeClaimRetentionPolicyType PersistentVolumeClaimRetentionPolicyType = "Delete"
)

// StatefulSetPersistentVolumeClaimRetentionPolicy says what happens to claims on delete and scale-down.
type StatefulSetPersistentVolumeClaimRetentionPolicy struct {
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty" protobuf:"bytes,1,opt,name=whenDeleted,casttype=PersistentVolumeClaimRetentionPolicyType"`
	WhenScaled  PersistentVolumeClaimRetentionPolicyType `json:"whenScaled,omitempty" protobuf:"bytes,2,opt,name=whenScaled,casttype=PersistentVolumeClaimRetentionPolicyType"`
}

// StatefulSetOrdinals sets the ordinal numbering of the Pods.
type StatefulSetOrdinals struct {
	Start int32 `json:"start" protobuf:"varint,1,opt,name=start"`
}

// StatefulSetScaleStrategy tunes scaling.
type StatefulSetScaleStrategy struct {
	// MaxUnavailable limits the Pods unavailable while scaling (Parallel only).
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty" protobuf:"bytes,1,opt,name=maxUnavailable"`
}

// VolumeClaimStatus is how many Pods' claims match the current claim template.
type VolumeClaimStatus struct {
	VolumeClaimName         string `json:"volumeClaimName" protobuf:"bytes,1,opt,name=volumeClaimName"`
	CompatibleReplicas      int32  `json:"compatibleReplicas" protobuf:"varint,2,opt,name=compatibleReplicas"`
	CompatibleReadyReplicas int32  `json:"compatibleReadyReplicas" protobuf:"varint,3,opt,name=compatibleReadyReplicas"`
}

// StatefulSetStatus is the observed state of an Advanced StatefulSet.
type StatefulSetStatus struct {
	ObservedGeneration       int64  `json:"observedGeneration,omitempty" protobuf:"varint,1,opt,name=observedGeneration"`
	Replicas                 int32  `json:"replicas" protobuf:"varint,2,opt,name=replicas"`
	ReadyReplicas            int32  `json:"readyReplicas" protobuf:"varint,3,opt,name=readyReplicas"`
	AvailableReplicas        int32  `json:"availableReplicas" protobuf:"varint,4,opt,name=availableReplicas"`
	CurrentReplicas          int32  `json:"currentReplicas" protobuf:"varint,5,opt,name=currentReplicas"`
	UpdatedReplicas          int32  `json:"updatedReplicas" protobuf:"varint,6,opt,name=updatedReplicas"`
	UpdatedReadyReplicas     int32  `json:"updatedReadyReplicas,omitempty" protobuf:"varint,7,opt,name=updatedReadyReplicas"`
	UpdatedAvailableReplicas int32  `json:"updatedAvailableReplicas,omitempty" protobuf:"varint,8,opt,name=updatedAvailableReplicas"`
	CurrentRevision          string `json:"currentRevision,omitempty" protobuf:"bytes,9,opt,name=currentRevision"`
	UpdateRevision           string `json:"updateRevision,omitempty" protobuf:"bytes,10,opt,name=updateRevision"`
	CollisionCount           *int32 `json:"collisionCount,omitempty" protobuf:"varint,11,opt,name=collisionCount"`
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions    []appsv1.StatefulSetCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,12,rep,name=conditions"`
	LabelSelector string                        `json:"labelSelector,omitempty" protobuf:"bytes,13,opt,name=labelSelector"`
	VolumeClaims  []VolumeClaimStatus           `json:"volumeClaims,omitempty" protobuf:"bytes,14,rep,name=volumeClaims"`
}

// +genclient
// +genclient:method=GetScale,verb=get,subresource=scale,result=k8s.io/api/autoscaling/v1.Scale
// +genclient:method=UpdateScale,verb=update,subresource=scale,input=k8s.io/api/autoscaling/v1.Scale,result=k8s.io/api/autoscaling/v1.Scale
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// StatefulSet is OpenKruise's Advanced StatefulSet: stable Pod names and claims, updated in place
// where it can.
type StatefulSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   StatefulSetSpec   `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status StatefulSetStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// StatefulSetList is a list of Advanced StatefulSets.
type StatefulSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Items []StatefulSet `json:"items" protobuf:"bytes,2,rep,name=items"`
}
