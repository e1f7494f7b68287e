package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The NodeImage at apps.kruise.io/v1beta1, its storage version: v1alpha1's fields and, as in
// OpenKruise v1.9, a pull secret's mode (v1alpha1 carries it in an annotation).

// NodeImageSpec is the images a node should have.
type NodeImageSpec struct {
	// Images to pull on the node, by image name (the reference without its tag or digest).
	// +optional
	Images map[string]ImageSpec `json:"images,omitempty" protobuf:"bytes,1,rep,name=images"`
}

// ImageSpec is how to pull the tags of one image.
type ImageSpec struct {
	// PullSecrets are the Secrets (namespace and name) used to pull it.
	// +optional
	PullSecrets []ReferenceObject `json:"pullSecrets,omitempty" protobuf:"bytes,1,rep,name=pullSecrets"`
	// Tags to pull (a tag, or a digest such as sha256:...), sorted by tag by the server.
	Tags []ImageTagSpec `json:"tags" protobuf:"bytes,2,rep,name=tags"`
	// SandboxConfig is the metadata passed to the CRI PullImage call.
	// +optional
	SandboxConfig *SandboxConfig `json:"sandboxConfig,omitempty" protobuf:"bytes,3,opt,name=sandboxConfig"`
}

// ReferenceObject names an object by namespace and name.
type ReferenceObject struct {
	// +optional
	Namespace string `json:"namespace,omitempty" protobuf:"bytes,1,opt,name=namespace"`
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,2,opt,name=name"`
	// Mode is "batch" for a pull secret synchronised once for every ImagePullJob that uses it
	// (OpenKruise v1.9), empty for one synchronised per job. Stored only: inplace does not act on it.
	// +optional
	Mode string `json:"mode,omitempty" protobuf:"bytes,3,opt,name=mode"`
}

// ImageTagSpec is one tag to pull.
type ImageTagSpec struct {
	// Tag (or digest) of the image.
	Tag string `json:"tag" protobuf:"bytes,1,opt,name=tag"`
	// CreatedAt is when the tag was added; set by the server when missing.
	// +optional
	CreatedAt *metav1.Time `json:"createdAt,omitempty" protobuf:"bytes,2,opt,name=createdAt"`
	// PullPolicy is the timeout, retries, deadline and TTL of the pull.
	// +optional
	PullPolicy *ImageTagPullPolicy `json:"pullPolicy,omitempty" protobuf:"bytes,3,opt,name=pullPolicy"`
	// OwnerReferences are the objects (ImagePullJobs) that asked for the tag.
	// +optional
	OwnerReferences []corev1.ObjectReference `json:"ownerReferences,omitempty" protobuf:"bytes,4,rep,name=ownerReferences"`
	// Version counts changes of this tag's spec; the daemon reports the version it handled.
	// +optional
	Version int64 `json:"version,omitempty" protobuf:"varint,5,opt,name=version"`
	// ImagePullPolicy is Always or IfNotPresent.
	// +optional
	ImagePullPolicy ImagePullPolicy `json:"imagePullPolicy,omitempty" protobuf:"bytes,6,opt,name=imagePullPolicy,casttype=ImagePullPolicy"`
}

// ImageTagPullPolicy is the timeout, retries, deadline and TTL of one tag's pull.
type ImageTagPullPolicy struct {
	// TimeoutSeconds is how long one pull may take; default 600.
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty" protobuf:"varint,1,opt,name=timeoutSeconds"`
	// BackoffLimit is how many times the pull is retried; default 3.
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty" protobuf:"varint,2,opt,name=backoffLimit"`
	// TTLSecondsAfterFinished removes the tag this long after its pull finished.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty" protobuf:"varint,3,opt,name=ttlSecondsAfterFinished"`
	// ActiveDeadlineSeconds is how long the pull may run from its start.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty" protobuf:"varint,4,opt,name=activeDeadlineSeconds"`
}

// NodeImageStatus is the pulls of a node, as its daemon reports them.
type NodeImageStatus struct {
	// Desired is the number of tags in spec.
	Desired int32 `json:"desired" protobuf:"varint,1,opt,name=desired"`
	// Succeeded is the number of pulls that succeeded.
	// +optional
	Succeeded int32 `json:"succeeded" protobuf:"varint,2,opt,name=succeeded"`
	// Failed is the number of pulls that failed.
	// +optional
	Failed int32 `json:"failed" protobuf:"varint,3,opt,name=failed"`
	// Pulling is the number of pulls not finished.
	// +optional
	Pulling int32 `json:"pulling" protobuf:"varint,4,opt,name=pulling"`
	// Waiting is the number of pulls not started (OpenKruise v1.9).
	// +optional
	Waiting int32 `json:"waiting" protobuf:"varint,5,opt,name=waiting"`
	// ImageStatuses are the pulls of each image, by image name.
	// +optional
	ImageStatuses map[string]ImageStatus `json:"imageStatuses,omitempty" protobuf:"bytes,6,rep,name=imageStatuses"`
	// FirstSyncStatus is when the node first finished every pull.
	// +optional
	FirstSyncStatus *SyncStatus `json:"firstSyncStatus,omitempty" protobuf:"bytes,7,opt,name=firstSyncStatus"`
}

// ImageStatus is the pulls of the tags of one image.
type ImageStatus struct {
	// Tags are the pulls of each tag, sorted by tag by the server.
	Tags []ImageTagStatus `json:"tags" protobuf:"bytes,1,rep,name=tags"`
}

// ImageTagStatus is the pull of one tag.
type ImageTagStatus struct {
	// Tag of the image.
	Tag string `json:"tag" protobuf:"bytes,1,opt,name=tag"`
	// Phase is Waiting, Pulling, Succeeded or Failed.
	Phase ImagePullPhase `json:"phase" protobuf:"bytes,2,opt,name=phase,casttype=ImagePullPhase"`
	// Progress of the pull, 0 to 100.
	// +optional
	Progress int32 `json:"progress,omitempty" protobuf:"varint,3,opt,name=progress"`
	// StartTime is when the pull started.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,4,opt,name=startTime"`
	// CompletionTime is when the pull finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,5,opt,name=completionTime"`
	// Version is the spec version of the tag this status is for.
	// +optional
	Version int64 `json:"version,omitempty" protobuf:"varint,6,opt,name=version"`
	// ImageID is the ID of the pulled image.
	// +optional
	ImageID string `json:"imageID,omitempty" protobuf:"bytes,7,opt,name=imageID"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,8,opt,name=message"`
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
	SyncAt metav1.Time `json:"syncAt,omitempty" protobuf:"bytes,1,opt,name=syncAt"`
	// +optional
	Status SyncStatusPhase `json:"status,omitempty" protobuf:"bytes,2,opt,name=status,casttype=SyncStatusPhase"`
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,3,opt,name=message"`
}

// SyncStatusPhase is Succeeded or Failed.
type SyncStatusPhase string

const (
	// SyncStatusSucceeded: every pull on the node succeeded.
	SyncStatusSucceeded SyncStatusPhase = "Succeeded"
	// SyncStatusFailed: some pull on the node failed.
	SyncStatusFailed SyncStatusPhase = "Failed"
)

// +genclient
// +genclient:nonNamespaced
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeImage is the images one node should have and its pulls of them; named after the node.
type NodeImage struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec NodeImageSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status NodeImageStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// NodeImageList is a list of NodeImages.
type NodeImageList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []NodeImage `json:"items" protobuf:"bytes,2,rep,name=items"`
}
