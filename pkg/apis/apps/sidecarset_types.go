package apps

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// SidecarSetSpec is the desired state of a SidecarSet.
type SidecarSetSpec struct {
	// Selector is a label query over the Pods to inject into.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Namespace limits injection to one namespace; empty means all.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// NamespaceSelector limits injection to the namespaces it matches. Exclusive with Namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// InitContainers are injected into the Pod's init containers.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	InitContainers []SidecarContainer `json:"initContainers,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	// Containers are injected into the Pod's containers.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	Containers []SidecarContainer `json:"containers,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	// Volumes are injected into the Pod, unless it already has a volume of the same name.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	Volumes []corev1.Volume `json:"volumes,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	// UpdateStrategy says how injected sidecars are upgraded in place.
	// +optional
	UpdateStrategy SidecarSetUpdateStrategy `json:"updateStrategy,omitempty"`
	// InjectionStrategy says how (and whether) new Pods are injected.
	// +optional
	InjectionStrategy SidecarSetInjectionStrategy `json:"injectionStrategy,omitempty"`
	// ImagePullSecrets are added to the Pod's imagePullSecrets.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	// RevisionHistoryLimit is how many old revisions are kept. Defaults to 10.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
	// PatchPodMetadata are annotations patched into injected Pods.
	// +optional
	PatchPodMetadata []SidecarSetPatchPodMetadata `json:"patchPodMetadata,omitempty"`
}

// SidecarSetPatchPodMetadata is metadata patched into injected Pods.
type SidecarSetPatchPodMetadata struct {
	// Annotations to patch.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// PatchPolicy is Retain (default), Overwrite or MergePatchJson.
	// +optional
	PatchPolicy SidecarSetPatchPolicyType `json:"patchPolicy,omitempty"`
}

// SidecarSetPatchPolicyType says how a patched annotation meets an existing one.
type SidecarSetPatchPolicyType string

const (
	// SidecarSetRetainPatchPolicy keeps the Pod's value.
	SidecarSetRetainPatchPolicy SidecarSetPatchPolicyType = "Retain"
	// SidecarSetOverwritePatchPolicy replaces the Pod's value.
	SidecarSetOverwritePatchPolicy SidecarSetPatchPolicyType = "Overwrite"
	// SidecarSetMergePatchJsonPatchPolicy merges JSON values.
	SidecarSetMergePatchJsonPatchPolicy SidecarSetPatchPolicyType = "MergePatchJson"
)

// SidecarContainer is a container to inject, with how it is placed and upgraded.
type SidecarContainer struct {
	corev1.Container `json:",inline"`
	// PodInjectPolicy places the sidecar before (default) or after the app containers.
	// +optional
	PodInjectPolicy PodInjectPolicyType `json:"podInjectPolicy,omitempty"`
	// UpgradeStrategy is ColdUpgrade (default) or HotUpgrade.
	// +optional
	UpgradeStrategy SidecarContainerUpgradeStrategy `json:"upgradeStrategy,omitempty"`
	// ShareVolumePolicy mounts the app containers' volumes into the sidecar when enabled.
	// +optional
	ShareVolumePolicy ShareVolumePolicy `json:"shareVolumePolicy,omitempty"`
	// ShareVolumeDevicePolicy gives the sidecar the app containers' volumeDevices when enabled
	// (OpenKruise v1.9). A pointer, as in OpenKruise, so that leaving it out keeps the
	// kruise.io/sidecarset-hash of existing SidecarSets. Stored only: inplace does not act on it.
	// +optional
	ShareVolumeDevicePolicy *ShareVolumePolicy `json:"shareVolumeDevicePolicy,omitempty"`
	// TransferEnv copies env vars from app containers into the sidecar.
	// +optional
	TransferEnv []TransferEnvVar `json:"transferEnv,omitempty"`
	// ResourcesPolicy computes the sidecar's resources from those of the Pod's containers when
	// the Pod is created (OpenKruise v1.9). Stored only: inplace does not act on it.
	// +optional
	ResourcesPolicy *ResourcesPolicy `json:"resourcesPolicy,omitempty"`
}

// ResourcesPolicy computes a sidecar's resources from those of the Pod's target containers.
type ResourcesPolicy struct {
	// TargetContainersMode is how the target containers' resources are aggregated: sum or max.
	TargetContainersMode TargetContainersModeType `json:"targetContainersMode"`
	// TargetContainersNameRegex selects the target containers by name. Defaults to ".*".
	// +optional
	TargetContainersNameRegex string `json:"targetContainersNameRegex,omitempty"`
	// ResourcesExpr are the expressions that compute the sidecar's resources.
	ResourcesExpr ResourcesExpr `json:"resourcesExpr"`
}

// TargetContainersModeType is how the target containers' resources are aggregated.
type TargetContainersModeType string

const (
	// TargetContainersModeSum adds up the target containers' resources.
	TargetContainersModeSum TargetContainersModeType = "sum"
	// TargetContainersModeMax takes the largest of the target containers' resources.
	TargetContainersModeMax TargetContainersModeType = "max"
)

// ResourcesExpr are the expressions that compute a sidecar's limits and requests.
type ResourcesExpr struct {
	// +optional
	Limits *ResourceExprLimits `json:"limits,omitempty"`
	// +optional
	Requests *ResourceExprRequests `json:"requests,omitempty"`
}

// ResourceExprLimits are the expressions of a sidecar's limits, over the variables cpu and
// memory (the aggregated limits of the target containers).
type ResourceExprLimits struct {
	// +optional
	CPU string `json:"cpu,omitempty"`
	// +optional
	Memory string `json:"memory,omitempty"`
}

// ResourceExprRequests are the expressions of a sidecar's requests, over the variables cpu and
// memory (the aggregated requests of the target containers).
type ResourceExprRequests struct {
	// +optional
	CPU string `json:"cpu,omitempty"`
	// +optional
	Memory string `json:"memory,omitempty"`
}

// ShareVolumePolicy says whether the sidecar mounts the app containers' volumes.
type ShareVolumePolicy struct {
	// Type is enabled or disabled (default).
	// +optional
	Type ShareVolumePolicyType `json:"type,omitempty"`
}

// PodInjectPolicyType places an injected container relative to the app containers.
type PodInjectPolicyType string

const (
	BeforeAppContainerType PodInjectPolicyType = "BeforeAppContainer"
	AfterAppContainerType  PodInjectPolicyType = "AfterAppContainer"
)

// ShareVolumePolicyType is enabled or disabled.
type ShareVolumePolicyType string

const (
	ShareVolumePolicyEnabled  ShareVolumePolicyType = "enabled"
	ShareVolumePolicyDisabled ShareVolumePolicyType = "disabled"
)

// TransferEnvVar copies env vars of an app container into the sidecar.
type TransferEnvVar struct {
	// SourceContainerName is the app container to copy from.
	// +optional
	SourceContainerName string `json:"sourceContainerName,omitempty"`
	// SourceContainerNameFrom takes the source container name from Pod metadata.
	// +optional
	SourceContainerNameFrom *SourceContainerNameSource `json:"sourceContainerNameFrom,omitempty"`
	// EnvName is one env var to copy.
	// +optional
	EnvName string `json:"envName,omitempty"`
	// EnvNames are several env vars to copy.
	// +optional
	EnvNames []string `json:"envNames,omitempty"`
}

// SourceContainerNameSource selects the source container name from Pod metadata.
type SourceContainerNameSource struct {
	// +optional
	FieldRef *corev1.ObjectFieldSelector `json:"fieldRef,omitempty"`
}

// SidecarContainerUpgradeType is how a sidecar container is upgraded.
type SidecarContainerUpgradeType string

const (
	SidecarContainerColdUpgrade SidecarContainerUpgradeType = "ColdUpgrade"
	SidecarContainerHotUpgrade  SidecarContainerUpgradeType = "HotUpgrade"
)

// SidecarContainerUpgradeStrategy is how a sidecar container is upgraded.
type SidecarContainerUpgradeStrategy struct {
	// UpgradeType is ColdUpgrade (default) or HotUpgrade.
	// +optional
	UpgradeType SidecarContainerUpgradeType `json:"upgradeType,omitempty"`
	// HotUpgradeEmptyImage is the image the idle container of a hot-upgrade pair runs.
	// Required with HotUpgrade.
	// +optional
	HotUpgradeEmptyImage string `json:"hotUpgradeEmptyImage,omitempty"`
}

// SidecarSetInjectionStrategy says how (and whether) new Pods are injected.
type SidecarSetInjectionStrategy struct {
	// Paused stops injection into new Pods.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Revision injects a given revision instead of the latest.
	// +optional
	Revision *SidecarSetInjectRevision `json:"revision,omitempty"`
}

// SidecarSetInjectRevision names a revision to inject.
type SidecarSetInjectRevision struct {
	// CustomVersion is the value of the custom-version label of the revision.
	// +optional
	CustomVersion *string `json:"customVersion,omitempty"`
	// RevisionName is the name of the ControllerRevision.
	// +optional
	RevisionName *string `json:"revisionName,omitempty"`
	// Policy is Always (default) or Partial.
	// +optional
	Policy SidecarSetInjectRevisionPolicy `json:"policy,omitempty"`
}

// SidecarSetInjectRevisionPolicy says when the named revision is injected.
type SidecarSetInjectRevisionPolicy string

const (
	AlwaysSidecarSetInjectRevisionPolicy  SidecarSetInjectRevisionPolicy = "Always"
	PartialSidecarSetInjectRevisionPolicy SidecarSetInjectRevisionPolicy = "Partial"
)

// SidecarSetUpdateStrategy says how injected sidecars are upgraded in place.
type SidecarSetUpdateStrategy struct {
	// Type is RollingUpdate (default) or NotUpdate.
	// +optional
	Type SidecarSetUpdateStrategyType `json:"type,omitempty"`
	// Paused stops the upgrade where it is.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// Selector limits the upgrade to the Pods it matches.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
	// Partition is the number or percentage of Pods kept at the old sidecars. Defaults to 0.
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty"`
	// MaxUnavailable is the most Pods that may be unavailable during the upgrade. Defaults to 1.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// PriorityStrategy orders Pods for upgrade.
	// +optional
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty"`
	// ScatterStrategy spreads Pods with the given labels over the upgrade order.
	// +optional
	ScatterStrategy pub.UpdateScatterStrategy `json:"scatterStrategy,omitempty"`
}

// SidecarSetUpdateStrategyType is RollingUpdate or NotUpdate.
type SidecarSetUpdateStrategyType string

const (
	NotUpdateSidecarSetStrategyType     SidecarSetUpdateStrategyType = "NotUpdate"
	RollingUpdateSidecarSetStrategyType SidecarSetUpdateStrategyType = "RollingUpdate"
)

// SidecarSetStatus is the observed state of a SidecarSet.
type SidecarSetStatus struct {
	// ObservedGeneration is the most recent generation observed by the controller.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// MatchedPods is the number of Pods the SidecarSet was injected into.
	MatchedPods int32 `json:"matchedPods"`
	// UpdatedPods is the number of matched Pods with the latest sidecars.
	UpdatedPods int32 `json:"updatedPods"`
	// ReadyPods is the number of matched Pods that are ready.
	ReadyPods int32 `json:"readyPods"`
	// UpdatedReadyPods is the number of updated Pods that are ready.
	UpdatedReadyPods int32 `json:"updatedReadyPods,omitempty"`
	// LatestRevision is the name of the latest ControllerRevision.
	LatestRevision string `json:"latestRevision,omitempty"`
	// CollisionCount counts revision hash collisions.
	CollisionCount *int32 `json:"collisionCount,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SidecarSet injects sidecar containers into matching Pods at creation and upgrades them in place.
type SidecarSet struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec SidecarSetSpec `json:"spec,omitempty"`
	// +optional
	Status SidecarSetStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SidecarSetList is a list of SidecarSets.
type SidecarSetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SidecarSet `json:"items"`
}
