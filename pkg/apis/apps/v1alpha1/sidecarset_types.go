package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

const (
	// SidecarSetHashAnnotation holds the hash of a SidecarSet's containers (on the SidecarSet)
	// or a JSON map of the injected SidecarSets' hashes (on a Pod).
	SidecarSetHashAnnotation = "kruise.io/sidecarset-hash"
	// SidecarSetHashWithoutImageAnnotation is SidecarSetHashAnnotation with images left out.
	SidecarSetHashWithoutImageAnnotation = "kruise.io/sidecarset-hash-without-image"
	// SidecarSetListAnnotation is the Pod annotation listing the injected SidecarSets, comma-joined.
	SidecarSetListAnnotation = "kruise.io/sidecarset-injected-list"
	// SidecarSetCustomVersionLabel labels a SidecarSet (and its revisions) with a user version.
	SidecarSetCustomVersionLabel = "apps.kruise.io/sidecarset-custom-version"
	// SidecarSetCanaryAnnotation, set to exactly "true" (case matters) together with
	// SidecarSetBaseAnnotation, makes a SidecarSet the canary of the base SidecarSet that annotation
	// names (OpenKruise master): a Pod both select gets the canary's sidecars and not the base's.
	// Two levels only (a base cannot itself be a canary); the base cannot change once set; a canary
	// only injects (its updateStrategy.type must be NotUpdate).
	SidecarSetCanaryAnnotation = "apps.kruise.io/sidecarset-canary"
	// SidecarSetBaseAnnotation names the base SidecarSet of a canary (see SidecarSetCanaryAnnotation).
	SidecarSetBaseAnnotation = "apps.kruise.io/sidecarset-base"
	// DefaultTargetContainersNameRegex is resourcesPolicy.targetContainersNameRegex when left
	// empty: every container is a target.
	DefaultTargetContainersNameRegex = ".*"
)

// SidecarSetSpec is the desired state of a SidecarSet.
type SidecarSetSpec struct {
	// Selector is a label query over the Pods to inject into.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty" protobuf:"bytes,1,opt,name=selector"`
	// Namespace limits injection to one namespace; empty means all.
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,2,opt,name=namespace"`
	// NamespaceSelector limits injection to the namespaces it matches. Exclusive with Namespace.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty" protobuf:"bytes,3,opt,name=namespaceSelector"`
	// InitContainers are injected into the Pod's init containers.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	InitContainers []SidecarContainer `json:"initContainers,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"bytes,4,rep,name=initContainers"`
	// Containers are injected into the Pod's containers.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	Containers []SidecarContainer `json:"containers,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"bytes,5,rep,name=containers"`
	// Volumes are injected into the Pod, unless it already has a volume of the same name.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	Volumes []corev1.Volume `json:"volumes,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"bytes,6,rep,name=volumes"`
	// UpdateStrategy says how injected sidecars are upgraded in place.
	// +optional
	UpdateStrategy SidecarSetUpdateStrategy `json:"updateStrategy,omitempty" protobuf:"bytes,7,opt,name=updateStrategy"`
	// InjectionStrategy says how (and whether) new Pods are injected.
	// +optional
	InjectionStrategy SidecarSetInjectionStrategy `json:"injectionStrategy,omitempty" protobuf:"bytes,8,opt,name=injectionStrategy"`
	// ImagePullSecrets are added to the Pod's imagePullSecrets.
	// +optional
	// +patchMergeKey=name
	// +patchStrategy=merge
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"bytes,9,rep,name=imagePullSecrets"`
	// RevisionHistoryLimit is how many old revisions are kept. Defaults to 10.
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty" protobuf:"varint,10,opt,name=revisionHistoryLimit"`
	// PatchPodMetadata are annotations patched into injected Pods.
	// +optional
	PatchPodMetadata []SidecarSetPatchPodMetadata `json:"patchPodMetadata,omitempty" protobuf:"bytes,11,rep,name=patchPodMetadata"`
}

// SidecarSetPatchPodMetadata is metadata patched into injected Pods.
type SidecarSetPatchPodMetadata struct {
	// Annotations to patch.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,1,rep,name=annotations"`
	// PatchPolicy is Retain (default), Overwrite or MergePatchJson.
	// +optional
	PatchPolicy SidecarSetPatchPolicyType `json:"patchPolicy,omitempty" protobuf:"bytes,2,opt,name=patchPolicy,casttype=SidecarSetPatchPolicyType"`
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
	corev1.Container `json:",inline" protobuf:"bytes,1,opt,name=container"`
	// PodInjectPolicy places the sidecar before (default) or after the app containers.
	// +optional
	PodInjectPolicy PodInjectPolicyType `json:"podInjectPolicy,omitempty" protobuf:"bytes,2,opt,name=podInjectPolicy,casttype=PodInjectPolicyType"`
	// UpgradeStrategy is ColdUpgrade (default) or HotUpgrade.
	// +optional
	UpgradeStrategy SidecarContainerUpgradeStrategy `json:"upgradeStrategy,omitempty" protobuf:"bytes,3,opt,name=upgradeStrategy"`
	// ShareVolumePolicy mounts the app containers' volumes into the sidecar when enabled.
	// +optional
	ShareVolumePolicy ShareVolumePolicy `json:"shareVolumePolicy,omitempty" protobuf:"bytes,4,opt,name=shareVolumePolicy"`
	// ShareVolumeDevicePolicy gives the sidecar the app containers' volumeDevices when enabled
	// (OpenKruise v1.9). A pointer, as in OpenKruise, so that leaving it out keeps the
	// kruise.io/sidecarset-hash of existing SidecarSets. Stored only: inplace does not act on it.
	// +optional
	ShareVolumeDevicePolicy *ShareVolumePolicy `json:"shareVolumeDevicePolicy,omitempty" protobuf:"bytes,5,opt,name=shareVolumeDevicePolicy"`
	// TransferEnv copies env vars from app containers into the sidecar.
	// +optional
	TransferEnv []TransferEnvVar `json:"transferEnv,omitempty" protobuf:"bytes,6,rep,name=transferEnv"`
	// ResourcesPolicy computes the sidecar's resources from those of the Pod's containers when
	// the Pod is created (OpenKruise v1.9). Stored only: inplace does not act on it.
	// +optional
	ResourcesPolicy *ResourcesPolicy `json:"resourcesPolicy,omitempty" protobuf:"bytes,7,opt,name=resourcesPolicy"`
}

// ResourcesPolicy computes a sidecar's resources from those of the Pod's target containers.
type ResourcesPolicy struct {
	// TargetContainersMode is how the target containers' resources are aggregated: sum or max.
	TargetContainersMode TargetContainersModeType `json:"targetContainersMode" protobuf:"bytes,1,opt,name=targetContainersMode,casttype=TargetContainersModeType"`
	// TargetContainersNameRegex selects the target containers by name. Defaults to ".*".
	// +optional
	TargetContainersNameRegex string `json:"targetContainersNameRegex,omitempty" protobuf:"bytes,2,opt,name=targetContainersNameRegex"`
	// ResourcesExpr are the expressions that compute the sidecar's resources.
	ResourcesExpr ResourcesExpr `json:"resourcesExpr" protobuf:"bytes,3,opt,name=resourcesExpr"`
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
	Limits *ResourceExprLimits `json:"limits,omitempty" protobuf:"bytes,1,opt,name=limits"`
	// +optional
	Requests *ResourceExprRequests `json:"requests,omitempty" protobuf:"bytes,2,opt,name=requests"`
}

// ResourceExprLimits are the expressions of a sidecar's limits, over the variables cpu and
// memory (the aggregated limits of the target containers).
type ResourceExprLimits struct {
	// +optional
	CPU string `json:"cpu,omitempty" protobuf:"bytes,1,opt,name=cpu"`
	// +optional
	Memory string `json:"memory,omitempty" protobuf:"bytes,2,opt,name=memory"`
}

// ResourceExprRequests are the expressions of a sidecar's requests, over the variables cpu and
// memory (the aggregated requests of the target containers).
type ResourceExprRequests struct {
	// +optional
	CPU string `json:"cpu,omitempty" protobuf:"bytes,1,opt,name=cpu"`
	// +optional
	Memory string `json:"memory,omitempty" protobuf:"bytes,2,opt,name=memory"`
}

// ShareVolumePolicy says whether the sidecar mounts the app containers' volumes.
type ShareVolumePolicy struct {
	// Type is enabled or disabled (default).
	// +optional
	Type ShareVolumePolicyType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=ShareVolumePolicyType"`
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
	SourceContainerName string `json:"sourceContainerName,omitempty" protobuf:"bytes,1,opt,name=sourceContainerName"`
	// SourceContainerNameFrom takes the source container name from Pod metadata.
	// +optional
	SourceContainerNameFrom *SourceContainerNameSource `json:"sourceContainerNameFrom,omitempty" protobuf:"bytes,2,opt,name=sourceContainerNameFrom"`
	// EnvName is one env var to copy.
	// +optional
	EnvName string `json:"envName,omitempty" protobuf:"bytes,3,opt,name=envName"`
	// EnvNames are several env vars to copy.
	// +optional
	EnvNames []string `json:"envNames,omitempty" protobuf:"bytes,4,rep,name=envNames"`
}

// SourceContainerNameSource selects the source container name from Pod metadata.
type SourceContainerNameSource struct {
	// +optional
	FieldRef *corev1.ObjectFieldSelector `json:"fieldRef,omitempty" protobuf:"bytes,1,opt,name=fieldRef"`
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
	UpgradeType SidecarContainerUpgradeType `json:"upgradeType,omitempty" protobuf:"bytes,1,opt,name=upgradeType,casttype=SidecarContainerUpgradeType"`
	// HotUpgradeEmptyImage is the image the idle container of a hot-upgrade pair runs.
	// Required with HotUpgrade.
	// +optional
	HotUpgradeEmptyImage string `json:"hotUpgradeEmptyImage,omitempty" protobuf:"bytes,2,opt,name=hotUpgradeEmptyImage"`
}

// SidecarSetInjectionStrategy says how (and whether) new Pods are injected.
type SidecarSetInjectionStrategy struct {
	// Paused stops injection into new Pods.
	// +optional
	Paused bool `json:"paused,omitempty" protobuf:"varint,1,opt,name=paused"`
	// Revision injects a given revision instead of the latest.
	// +optional
	Revision *SidecarSetInjectRevision `json:"revision,omitempty" protobuf:"bytes,2,opt,name=revision"`
}

// SidecarSetInjectRevision names a revision to inject.
type SidecarSetInjectRevision struct {
	// CustomVersion is the value of the custom-version label of the revision.
	// +optional
	CustomVersion *string `json:"customVersion,omitempty" protobuf:"bytes,1,opt,name=customVersion"`
	// RevisionName is the name of the ControllerRevision.
	// +optional
	RevisionName *string `json:"revisionName,omitempty" protobuf:"bytes,2,opt,name=revisionName"`
	// Policy is Always (default) or Partial.
	// +optional
	Policy SidecarSetInjectRevisionPolicy `json:"policy,omitempty" protobuf:"bytes,3,opt,name=policy,casttype=SidecarSetInjectRevisionPolicy"`
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
	Type SidecarSetUpdateStrategyType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=SidecarSetUpdateStrategyType"`
	// Paused stops the upgrade where it is.
	// +optional
	Paused bool `json:"paused,omitempty" protobuf:"varint,2,opt,name=paused"`
	// Selector limits the upgrade to the Pods it matches.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty" protobuf:"bytes,3,opt,name=selector"`
	// Partition is the number or percentage of Pods kept at the old sidecars. Defaults to 0.
	// +optional
	Partition *intstr.IntOrString `json:"partition,omitempty" protobuf:"bytes,4,opt,name=partition"`
	// MaxUnavailable is the most Pods that may be unavailable during the upgrade. Defaults to 1.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty" protobuf:"bytes,5,opt,name=maxUnavailable"`
	// PriorityStrategy orders Pods for upgrade.
	// +optional
	PriorityStrategy *pub.UpdatePriorityStrategy `json:"priorityStrategy,omitempty" protobuf:"bytes,6,opt,name=priorityStrategy"`
	// ScatterStrategy spreads Pods with the given labels over the upgrade order.
	// +optional
	ScatterStrategy pub.UpdateScatterStrategy `json:"scatterStrategy,omitempty" protobuf:"bytes,7,rep,name=scatterStrategy"`
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
	ObservedGeneration int64 `json:"observedGeneration,omitempty" protobuf:"varint,1,opt,name=observedGeneration"`
	// MatchedPods is the number of Pods the SidecarSet was injected into.
	MatchedPods int32 `json:"matchedPods" protobuf:"varint,2,opt,name=matchedPods"`
	// UpdatedPods is the number of matched Pods with the latest sidecars.
	UpdatedPods int32 `json:"updatedPods" protobuf:"varint,3,opt,name=updatedPods"`
	// ReadyPods is the number of matched Pods that are ready.
	ReadyPods int32 `json:"readyPods" protobuf:"varint,4,opt,name=readyPods"`
	// UpdatedReadyPods is the number of updated Pods that are ready.
	UpdatedReadyPods int32 `json:"updatedReadyPods,omitempty" protobuf:"varint,5,opt,name=updatedReadyPods"`
	// LatestRevision is the name of the latest ControllerRevision.
	LatestRevision string `json:"latestRevision,omitempty" protobuf:"bytes,6,opt,name=latestRevision"`
	// CollisionCount counts revision hash collisions.
	CollisionCount *int32 `json:"collisionCount,omitempty" protobuf:"varint,7,opt,name=collisionCount"`
}

// +genclient
// +genclient:nonNamespaced
// +genclient:method=Inject,verb=create,subresource=inject,input=k8s.io/api/core/v1.Pod,result=k8s.io/api/core/v1.Pod
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SidecarSet injects sidecar containers into matching Pods at creation and upgrades them in place.
type SidecarSet struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec SidecarSetSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status SidecarSetStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// SidecarSetList is a list of SidecarSets.
type SidecarSetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []SidecarSet `json:"items" protobuf:"bytes,2,rep,name=items"`
}
