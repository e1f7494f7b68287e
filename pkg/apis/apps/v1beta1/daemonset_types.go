package v1beta1

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// DaemonSetSpec is the desired state of an Advanced DaemonSet.
type DaemonSetSpec struct {
	// Selector is a label query over Pods that must match the template's labels.
	Selector *metav1.LabelSelector `json:"selector" protobuf:"bytes,1,opt,name=selector"`
	// Template describes the Pod run on each eligible node.
	Template corev1.PodTemplateSpec `json:"template" protobuf:"bytes,2,opt,name=template"`
	// UpdateStrategy says how Pods reach a new revision.
	UpdateStrategy DaemonSetUpdateStrategy `json:"updateStrategy,omitempty" protobuf:"bytes,3,opt,name=updateStrategy"`
	// MinReadySeconds is how long a new Pod must be ready to count as available.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty" protobuf:"varint,4,opt,name=minReadySeconds"`
	// BurstReplicas limits the Pods created or deleted in one sync (a number or a percentage).
	// Defaults to 250.
	BurstReplicas *intstr.IntOrString `json:"burstReplicas,omitempty" protobuf:"bytes,5,opt,name=burstReplicas"`
	// RevisionHistoryLimit is how many old revisions are kept. Defaults to 10.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty" protobuf:"varint,6,opt,name=revisionHistoryLimit"`
	// Lifecycle defines the hooks honoured around Pod deletion and in-place update.
	Lifecycle *pub.Lifecycle `json:"lifecycle,omitempty" protobuf:"bytes,7,opt,name=lifecycle"`
	// ScaleStrategy tunes the creation of Pods (v1alpha1 has it as the annotation
	// daemonset.kruise.io/progressive-create-pod).
	// +optional
	ScaleStrategy *DaemonSetScaleStrategy `json:"scaleStrategy,omitempty" protobuf:"bytes,8,opt,name=scaleStrategy"`
}

// DaemonSetScaleStrategy tunes the creation of an Advanced DaemonSet's Pods.
type DaemonSetScaleStrategy struct {
	// PartitionedScaling makes the partition hold back the creation of Pods too, not only their
	// update. Defaults to false.
	// +optional
	PartitionedScaling bool `json:"partitionedScaling,omitempty" protobuf:"varint,1,opt,name=partitionedScaling"`
}

// DaemonSetUpdateStrategyType is RollingUpdate or OnDelete.
type DaemonSetUpdateStrategyType string

const (
	// RollingUpdateDaemonSetStrategyType replaces Pods progressively.
	RollingUpdateDaemonSetStrategyType DaemonSetUpdateStrategyType = "RollingUpdate"
	// OnDeleteDaemonSetStrategyType updates a Pod only when it is deleted.
	OnDeleteDaemonSetStrategyType DaemonSetUpdateStrategyType = "OnDelete"
)

// RollingUpdateType is how each Pod of a rolling update is replaced.
type RollingUpdateType string

const (
	// StandardRollingUpdateType recreates Pods (or surges with maxSurge).
	StandardRollingUpdateType RollingUpdateType = "Standard"
	// InplaceRollingUpdateType updates in place when the change allows it.
	InplaceRollingUpdateType RollingUpdateType = "InPlaceIfPossible"
)

// DaemonSetUpdateStrategy says how Pods reach a new revision.
type DaemonSetUpdateStrategy struct {
	Type          DaemonSetUpdateStrategyType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=DaemonSetUpdateStrategyType"`
	RollingUpdate *RollingUpdateDaemonSet     `json:"rollingUpdate,omitempty" protobuf:"bytes,2,opt,name=rollingUpdate"`
}

// RollingUpdateDaemonSet tunes a rolling update.
type RollingUpdateDaemonSet struct {
	// Type is Standard (default) or InPlaceIfPossible.
	Type RollingUpdateType `json:"rollingUpdateType,omitempty" protobuf:"bytes,1,opt,name=rollingUpdateType,casttype=RollingUpdateType"`
	// MaxUnavailable is how many nodes may be without an available Pod during the update.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty" protobuf:"bytes,2,opt,name=maxUnavailable"`
	// MaxSurge is how many nodes may run an extra new Pod beside the old one.
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty" protobuf:"bytes,3,opt,name=maxSurge"`
	// Selector limits the update to the Pods of the nodes it matches.
	Selector *metav1.LabelSelector `json:"selector,omitempty" protobuf:"bytes,4,opt,name=selector"`
	// Partition is the number (or percentage, since OpenKruise v1.9) of Pods kept at the old
	// revision.
	Partition *intstr.IntOrString `json:"partition,omitempty" protobuf:"bytes,5,opt,name=partition"`
	// Paused stops the update where it is.
	Paused *bool `json:"paused,omitempty" protobuf:"varint,6,opt,name=paused"`
}

// DaemonSetStatus is the observed state of an Advanced DaemonSet.
type DaemonSetStatus struct {
	CurrentNumberScheduled int32  `json:"currentNumberScheduled" protobuf:"varint,1,opt,name=currentNumberScheduled"`
	NumberMisscheduled     int32  `json:"numberMisscheduled" protobuf:"varint,2,opt,name=numberMisscheduled"`
	DesiredNumberScheduled int32  `json:"desiredNumberScheduled" protobuf:"varint,3,opt,name=desiredNumberScheduled"`
	NumberReady            int32  `json:"numberReady" protobuf:"varint,4,opt,name=numberReady"`
	ObservedGeneration     int64  `json:"observedGeneration,omitempty" protobuf:"varint,5,opt,name=observedGeneration"`
	UpdatedNumberScheduled int32  `json:"updatedNumberScheduled" protobuf:"varint,6,opt,name=updatedNumberScheduled"`
	NumberAvailable        int32  `json:"numberAvailable,omitempty" protobuf:"varint,7,opt,name=numberAvailable"`
	NumberUnavailable      int32  `json:"numberUnavailable,omitempty" protobuf:"varint,8,opt,name=numberUnavailable"`
	CollisionCount         *int32 `json:"collisionCount,omitempty" protobuf:"varint,9,opt,name=collisionCount"`
	// +patchMergeKey=type
	// +patchStrategy=merge
	Conditions []appsv1.DaemonSetCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,10,rep,name=conditions"`
	// UpdateRevision is the hash of the latest revision (v1alpha1's daemonSetHash).
	UpdateRevision string `json:"updateRevision,omitempty" protobuf:"bytes,11,opt,name=updateRevision"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DaemonSet is OpenKruise's Advanced DaemonSet: one Pod per eligible node, updated in place where
// it can.
type DaemonSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   DaemonSetSpec   `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status DaemonSetStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DaemonSetList is a list of Advanced DaemonSets.
type DaemonSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Items []DaemonSet `json:"items" protobuf:"bytes,2,rep,name=items"`
}
