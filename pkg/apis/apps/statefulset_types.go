package apps

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// The Advanced StatefulSet's hub holds every field of apps.kruise.io/v1beta1 (its storage
// version); v1alpha1 serves a subset of them and carries the rest through an annotation.

// StatefulSetSpec is the desired state of an Advanced StatefulSet.
type StatefulSetSpec struct {
	// Replicas is the desired number of Pods. Defaults to 1.
	Replicas *int32 `json:"replicas,omitempty"`
	// Selector is a label query over Pods that must match the template's labels.
	Selector *metav1.LabelSelector `json:"selector"`
	// Template describes the Pods; each is named <set>-<ordinal>.
	Template corev1.PodTemplateSpec `json:"template"`
	// VolumeClaimTemplates are the claims each Pod gets, named <template>-<set>-<ordinal>.
	VolumeClaimTemplates []corev1.PersistentVolumeClaim `json:"volumeClaimTemplates,omitempty"`
	// VolumeClaimUpdateStrategy says when claims follow a changed claim template.
	VolumeClaimUpdateStrategy VolumeClaimUpdateStrategy `json:"volumeClaimUpdateStrategy,omitempty"`
	// ServiceName is the governing Service of the set's Pods (their hostname's subdomain).
	ServiceName string `json:"serviceName,omitempty"`
	// PodManagementPolicy is OrderedReady (default: one Pod at a time, in ordinal order) or
	// Parallel.
	PodManagementPolicy appsv1.PodManagementPolicyType `json:"podManagementPolicy,omitempty"`
	// UpdateStrategy says how Pods reach a new revision.
	UpdateStrategy StatefulSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// RevisionHistoryLimit is how many old revisions are kept. Defaults to 10.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	// ReserveOrdinals are ordinals (or ranges "a-b") that are never used: Pods skip them.
	ReserveOrdinals []intstr.IntOrString `json:"reserveOrdinals,omitempty"`
	// Lifecycle defines the hooks honoured around Pod deletion and in-place update.
	Lifecycle *pub.Lifecycle `json:"lifecycle,omitempty"`
	// ScaleStrategy tunes scaling.
	ScaleStrategy *StatefulSetScaleStrategy `json:"scaleStrategy,omitempty"`
	// PersistentVolumeClaimRetentionPolicy says what happens to the claims when the set is
	// deleted or scaled down. Defaults to Retain for both.
	PersistentVolumeClaimRetentionPolicy *StatefulSetPersistentVolumeClaimRetentionPolicy `json:"persistentVolumeClaimRetentionPolicy,omitempty"`
	// Ordinals sets the first ordinal (default 0).
	Ordinals *StatefulSetOrdinals `json:"ordinals,omitempty"`
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
	Type VolumeClaimUpdateStrategyType `json:"type,omitempty"`
}

// StatefulSetUpdateStrategy says how Pods reach a new revision.
type StatefulSetUpdateStrategy struct {
	// Type is RollingUpdate (default) or OnDelete.
	Type appsv1.StatefulSetUpdateStrategyType `json:"type,omitempty"`
	// RollingUpdate tunes the RollingUpdate type.
	RollingUpdate *RollingUpdateStatefulSetStrategy `json:"rollingUpdate,omitempty"`
}

// RollingUpdateStatefulSetStrategy tunes a rolling update.
type RollingUpdateStatefulSetStrategy struct {
	// Partition: Pods with an ordinal below it keep the old revision. Defaults to 0.
	Partition *int32 `json:"partition,omitempty"`
	// MaxUnavailable is how many Pods may be unavailable during the update (a number or a
	// percentage of replicas). Defaults to 1.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// PodUpdatePolicy is ReCreate (default), InPlaceIfPossible or InPlaceOnly.
	PodUpdatePolicy PodUpdateStrategyType `json:"podUpdatePolicy,omitempty"`
	// Paused stops the update where it is.
	Paused bool `json:"paused,omitempty"`
	// UnorderedUpdate updates Pods by priority instead of reverse ordinal (Parallel only).
	UnorderedUpdate *UnorderedUpdateStrategy `json:"unorderedUpdate,omitempty"`
	// InPlaceUpdateStrategy tunes in-place updates.
	InPlaceUpdateStrategy *pub.InPlaceUpdateStrategy `json:"inPlaceUpdateStrategy,omitempty"`
	// MinReadySeconds is how long an updated Pod must be ready before the next is updated.
	MinReadySeconds *int32 `json:"minReadySeconds,omitempty"`
}

// UnorderedUpdateStrategy orders the update by priority.
type UnorderedUpdateStrategy struct {
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`
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
	WhenDeleted PersistentVolumeClaimRetentionPolicyType `json:"whenDeleted,omitempty"`
	WhenScaled  PersistentVolumeClaimRetentionPolicyType `json:"whenScaled,omitempty"`
}

// StatefulSetOrdinals sets the ordinal numbering of the Pods.
type StatefulSetOrdinals struct {
	Start int32 `json:"start"`
}

// StatefulSetScaleStrategy tunes scaling.
type StatefulSetScaleStrategy struct {
	// MaxUnavailable limits the Pods unavailable while scaling (Parallel only).
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// VolumeClaimStatus is how many Pods' claims match the current claim template.
type VolumeClaimStatus struct {
	VolumeClaimName         string `json:"volumeClaimName"`
	CompatibleReplicas      int32  `json:"compatibleReplicas"`
	CompatibleReadyReplicas int32  `json:"compatibleReadyReplicas"`
}

// StatefulSetStatus is the observed state of an Advanced StatefulSet.
type StatefulSetStatus struct {
	ObservedGeneration       int64                         `json:"observedGeneration,omitempty"`
	Replicas                 int32                         `json:"replicas"`
	ReadyReplicas            int32                         `json:"readyReplicas"`
	AvailableReplicas        int32                         `json:"availableReplicas"`
	CurrentReplicas          int32                         `json:"currentReplicas"`
	UpdatedReplicas          int32                         `json:"updatedReplicas"`
	UpdatedReadyReplicas     int32                         `json:"updatedReadyReplicas,omitempty"`
	UpdatedAvailableReplicas int32                         `json:"updatedAvailableReplicas,omitempty"`
	CurrentRevision          string                        `json:"currentRevision,omitempty"`
	UpdateRevision           string                        `json:"updateRevision,omitempty"`
	CollisionCount           *int32                        `json:"collisionCount,omitempty"`
	Conditions               []appsv1.StatefulSetCondition `json:"conditions,omitempty"`
	LabelSelector            string                        `json:"labelSelector,omitempty"`
	VolumeClaims             []VolumeClaimStatus           `json:"volumeClaims,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// StatefulSet is OpenKruise's Advanced StatefulSet: stable Pod names and claims, updated in place
// where it can.
type StatefulSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StatefulSetSpec   `json:"spec,omitempty"`
	Status StatefulSetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// StatefulSetList is a list of Advanced StatefulSets.
type StatefulSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []StatefulSet `json:"items"`
}
