package apps

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
	Selector *metav1.LabelSelector `json:"selector"`
	// Template describes the Pod run on each eligible node.
	Template corev1.PodTemplateSpec `json:"template"`
	// UpdateStrategy says how Pods reach a new revision.
	UpdateStrategy DaemonSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// MinReadySeconds is how long a new Pod must be ready to count as available.
	MinReadySeconds int32 `json:"minReadySeconds,omitempty"`
	// BurstReplicas limits the Pods created or deleted in one sync (a number or a percentage).
	// Defaults to 250.
	BurstReplicas *intstr.IntOrString `json:"burstReplicas,omitempty"`
	// RevisionHistoryLimit is how many old revisions are kept. Defaults to 10.
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	// Lifecycle defines the hooks honoured around Pod deletion and in-place update.
	Lifecycle *pub.Lifecycle `json:"lifecycle,omitempty"`
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
	// DeprecatedSurgingRollingUpdateType is Standard with maxSurge 1 and maxUnavailable 0;
	// defaulting turns it into Standard.
	DeprecatedSurgingRollingUpdateType RollingUpdateType = "Surging"
)

// DaemonSetUpdateStrategy says how Pods reach a new revision.
type DaemonSetUpdateStrategy struct {
	Type          DaemonSetUpdateStrategyType `json:"type,omitempty"`
	RollingUpdate *RollingUpdateDaemonSet     `json:"rollingUpdate,omitempty"`
}

// RollingUpdateDaemonSet tunes a rolling update.
type RollingUpdateDaemonSet struct {
	// Type is Standard (default), InPlaceIfPossible or the deprecated Surging.
	Type RollingUpdateType `json:"rollingUpdateType,omitempty"`
	// MaxUnavailable is how many nodes may be without an available Pod during the update.
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// MaxSurge is how many nodes may run an extra new Pod beside the old one.
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`
	// Selector limits the update to the Pods of the nodes it matches.
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Partition is the number (or percentage, since OpenKruise v1.9) of Pods kept at the old
	// revision.
	Partition *intstr.IntOrString `json:"partition,omitempty"`
	// Paused stops the update where it is.
	Paused *bool `json:"paused,omitempty"`
}

// DaemonSetStatus is the observed state of an Advanced DaemonSet.
type DaemonSetStatus struct {
	CurrentNumberScheduled int32                       `json:"currentNumberScheduled"`
	NumberMisscheduled     int32                       `json:"numberMisscheduled"`
	DesiredNumberScheduled int32                       `json:"desiredNumberScheduled"`
	NumberReady            int32                       `json:"numberReady"`
	ObservedGeneration     int64                       `json:"observedGeneration,omitempty"`
	UpdatedNumberScheduled int32                       `json:"updatedNumberScheduled"`
	NumberAvailable        int32                       `json:"numberAvailable,omitempty"`
	NumberUnavailable      int32                       `json:"numberUnavailable,omitempty"`
	CollisionCount         *int32                      `json:"collisionCount,omitempty"`
	Conditions             []appsv1.DaemonSetCondition `json:"conditions,omitempty"`
	DaemonSetHash          string                      `json:"daemonSetHash,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DaemonSet is OpenKruise's Advanced DaemonSet: one Pod per eligible node, updated in place where
// it can.
type DaemonSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   DaemonSetSpec   `json:"spec,omitempty"`
	Status DaemonSetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// DaemonSetList is a list of Advanced DaemonSets.
type DaemonSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []DaemonSet `json:"items"`
}
