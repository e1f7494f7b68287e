package apps

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeImageSpec is the images a node should have.
type NodeImageSpec struct {
	// Images to pull on the node, by image name (the reference without its tag or digest).
	// +optional
	Images map[string]ImageSpec `json:"images,omitempty"`
}

// ImageSpec is how to pull the tags of one image.
type ImageSpec struct {
	// PullSecrets are the Secrets (namespace and name) used to pull it.
	// +optional
	PullSecrets []ReferenceObject `json:"pullSecrets,omitempty"`
	// Tags to pull (a tag, or a digest such as sha256:...), sorted by tag by the server.
	Tags []ImageTagSpec `json:"tags"`
	// SandboxConfig is the metadata passed to the CRI PullImage call.
	// +optional
	SandboxConfig *SandboxConfig `json:"sandboxConfig,omitempty"`
}

// ReferenceObject names an object by namespace and name.
type ReferenceObject struct {
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// Mode is "batch" for a pull secret synchronised once for every ImagePullJob that uses it
	// (OpenKruise v1.9, v1beta1 only). Stored only: inplace does not act on it.
	// +optional
	Mode string `json:"mode,omitempty"`
}

// ImageTagSpec is one tag to pull.
type ImageTagSpec struct {
	// Tag (or digest) of the image.
	Tag string `json:"tag"`
	// CreatedAt is when the tag was added; set by the server when missing.
	// +optional
	CreatedAt *metav1.Time `json:"createdAt,omitempty"`
	// PullPolicy is the timeout, retries, deadline and TTL of the pull.
	// +optional
	PullPolicy *ImageTagPullPolicy `json:"pullPolicy,omitempty"`
	// OwnerReferences are the objects (ImagePullJobs) that asked for the tag.
	// +optional
	OwnerReferences []corev1.ObjectReference `json:"ownerReferences,omitempty"`
	// Version counts changes of this tag's spec; the daemon reports the version it handled.
	// +optional
	Version int64 `json:"version,omitempty"`
	// ImagePullPolicy is Always or IfNotPresent.
	// +optional
	ImagePullPolicy ImagePullPolicy `json:"imagePullPolicy,omitempty"`
}

// ImageTagPullPolicy is the timeout, retries, deadline and TTL of one tag's pull.
type ImageTagPullPolicy struct {
	// TimeoutSeconds is how long one pull may take; default 600.
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// BackoffLimit is how many times the pull is retried; default 3.
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
	// TTLSecondsAfterFinished removes the tag this long after its pull finished.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
	// ActiveDeadlineSeconds is how long the pull may run from its start.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
}

// NodeImageStatus is the pulls of a node, as its daemon reports them.
type NodeImageStatus struct {
	// Desired is the number of tags in spec.
	Desired int32 `json:"desired"`
	// Succeeded is the number of pulls that succeeded.
	// +optional
	Succeeded int32 `json:"succeeded"`
	// Failed is the number of pulls that failed.
	// +optional
	Failed int32 `json:"failed"`
	// Pulling is the number of pulls not finished.
	// +optional
	Pulling int32 `json:"pulling"`
	// Waiting is the number of pulls not started (OpenKruise v1.9).
	// +optional
	Waiting int32 `json:"waiting"`
	// ImageStatuses are the pulls of each image, by image name.
	// +optional
	ImageStatuses map[string]ImageStatus `json:"imageStatuses,omitempty"`
	// FirstSyncStatus is when the node first finished every pull.
	// +optional
	FirstSyncStatus *SyncStatus `json:"firstSyncStatus,omitempty"`
}

// ImageStatus is the pulls of the tags of one image.
type ImageStatus struct {
	// Tags are the pulls of each tag, sorted by tag by the server.
	Tags []ImageTagStatus `json:"tags"`
}

// ImageTagStatus is the pull of one tag.
type ImageTagStatus struct {
	// Tag of the image.
	Tag string `json:"tag"`
	// Phase is Waiting, Pulling, Succeeded or Failed.
	Phase ImagePullPhase `json:"phase"`
	// Progress of the pull, 0 to 100.
	// +optional
	Progress int32 `json:"progress,omitempty"`
	// StartTime is when the pull started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the pull finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Version is the spec version of the tag this status is for.
	// +optional
	Version int64 `json:"version,omitempty"`
	// ImageID is the ID of the pulled image.
	// +optional
	ImageID string `json:"imageID,omitempty"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
}

// ImagePullPhase is the phase of one pull.
type ImagePullPhase string

const (
	// ImagePhaseWaiting: the pull has not started.
	ImagePhaseWaiting ImagePullPhase = "Waiting"
	// ImagePhasePulling: the pull runs.
	ImagePhasePulling ImagePullPhase = "Pulling"
	// ImagePhaseSucceeded: the image was pulled.
	ImagePhaseSucceeded ImagePullPhase = "Succeeded"
	// ImagePhaseFailed: the pull failed.
	ImagePhaseFailed ImagePullPhase = "Failed"
)

// SyncStatus is the outcome of a node's pulls.
type SyncStatus struct {
	// +optional
	SyncAt metav1.Time `json:"syncAt,omitempty"`
	// +optional
	Status SyncStatusPhase `json:"status,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// SyncStatusPhase is Succeeded or Failed.
type SyncStatusPhase string

const (
	// SyncStatusSucceeded: every pull on the node succeeded.
	SyncStatusSucceeded SyncStatusPhase = "Succeeded"
	// SyncStatusFailed: some pull on the node failed.
	SyncStatusFailed SyncStatusPhase = "Failed"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeImage is the images one node should have and its pulls of them; named after the node.
type NodeImage struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec NodeImageSpec `json:"spec,omitempty"`
	// +optional
	Status NodeImageStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeImageList is a list of NodeImages.
type NodeImageList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeImage `json:"items"`
}
