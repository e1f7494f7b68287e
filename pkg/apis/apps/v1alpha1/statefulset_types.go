package v1alpha1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// The Advanced StatefulSet at apps.kruise.io/v1alpha1: OpenKruise's v1alpha1 fields (a subset of
// v1beta1's, the storage version). The v1beta1 fields it lacks travel in the annotation
// StatefulSetV1beta1FieldsAnnotation, so a v1alpha1 client that reads, changes and writes back
// an object keeps them (see conversion.go).

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
	// ServiceName is the governing Service of the set's Pods (their hostname's subdomain).
	ServiceName string `json:"serviceName,omitempty" protobuf:"bytes,5,opt,name=serviceName"`
	// PodManagementPolicy is OrderedReady (default: one Pod at a time, in ordinal order) or
	// Parallel.
	PodManagementPolicy appsv1.PodManagementPolicyType `json:"podManagementPolicy,omitempty" protobuf:"bytes,6,opt,name=podManagementPolicy,casttype=k8s.io/api/apps/v1.PodManagementPolicyType"`
	// UpdateStrategy says how Pods reach a new revision.
	UpdateStrategy StatefulSetUpdateStrategy `json:"updateStrategy,omitempty" protobuf:"bytes,7,opt,name=updateStrategy"`
	// RevisionHistoryLimit is how many old revisions are kept. Defaults to 10.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty" protobuf:"varint,8,opt,name=revisionHistoryLimit"`
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

// StatefulSetStatus is the observed state of an Advanced StatefulSet.
type StatefulSetStatus struct {
	ObservedGeneration int64  `json:"observedGeneration,omitempty" protobuf:"varint,1,opt,name=observedGeneration"`
	Replicas           int32  `json:"replicas" protobuf:"varint,2,opt,name=replicas"`
	ReadyReplicas      int32  `json:"readyReplicas" protobuf:"varint,3,opt,name=readyReplicas"`
	AvailableReplicas  int32  `json:"availableReplicas" protobuf:"varint,4,opt,name=availableReplicas"`
	CurrentReplicas    int32  `json:"currentReplicas" protobuf:"varint,5,opt,name=currentReplicas"`
	UpdatedReplicas    int32  `json:"updatedReplicas" protobuf:"varint,6,opt,name=updatedReplicas"`
	CurrentRevision    string `json:"currentRevision,omitempty" protobuf:"bytes,7,opt,name=currentRevision"`
	UpdateRevision     string `json:"updateRevision,omitempty" protobuf:"bytes,8,opt,name=updateRevision"`
	CollisionCount     *int32 `json:"collisionCount,omitempty" protobuf:"varint,9,opt,name=collisionCount"`
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions    []appsv1.StatefulSetCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,10,rep,name=conditions"`
	LabelSelector string                        `json:"labelSelector,omitempty" protobuf:"bytes,11,opt,name=labelSelector"`
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
