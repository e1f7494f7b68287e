package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The ImagePullJob and ImageListPullJob at apps.kruise.io/v1beta1, their storage version: the
// same fields as v1alpha1, as in OpenKruise v1.9 (kruise apis/apps/v1beta1).

// ImagePullPolicy says when an image is pulled: Always or IfNotPresent.
// +enum
type ImagePullPolicy string

const (
	// PullAlways pulls the image even when the node has it.
	PullAlways ImagePullPolicy = "Always"
	// PullIfNotPresent pulls the image only when the node does not have it.
	PullIfNotPresent ImagePullPolicy = "IfNotPresent"
)

// ImagePullJobSpec is what an ImagePullJob pulls, where and how.
type ImagePullJobSpec struct {
	// Image is the image to pull.
	Image string `json:"image" protobuf:"bytes,1,opt,name=image"`
	// ImagePullJobTemplate is the rest of the spec, shared with ImageListPullJob.
	ImagePullJobTemplate `json:",inline" protobuf:"bytes,2,opt,name=imagePullJobTemplate"`
}

// ImagePullJobTemplate is where and how an image is pulled.
type ImagePullJobTemplate struct {
	// PullSecrets are names of Secrets in the job's namespace used to pull the image.
	// +optional
	PullSecrets []string `json:"pullSecrets,omitempty" protobuf:"bytes,1,rep,name=pullSecrets"`
	// Selector selects the nodes that pull (names or a label selector); nil is every node.
	// +optional
	Selector *ImagePullJobNodeSelector `json:"selector,omitempty" protobuf:"bytes,2,opt,name=selector"`
	// PodSelector selects Pods: the nodes they run on pull. Mutually exclusive with Selector.
	// +optional
	PodSelector *ImagePullJobPodSelector `json:"podSelector,omitempty" protobuf:"bytes,3,opt,name=podSelector"`
	// Parallelism is how many nodes pull at the same time, a non-negative integer; unset is 1
	// and 0 pauses the job.
	// +optional
	Parallelism *intstr.IntOrString `json:"parallelism,omitempty" protobuf:"bytes,4,opt,name=parallelism"`
	// PullPolicy is the timeout and retries of each node's pull.
	// +optional
	PullPolicy *PullPolicy `json:"pullPolicy,omitempty" protobuf:"bytes,5,opt,name=pullPolicy"`
	// CompletionPolicy says when the job is finished (type Always, the default) or that it never
	// is (Never: nodes that join later pull too).
	CompletionPolicy CompletionPolicy `json:"completionPolicy" protobuf:"bytes,6,opt,name=completionPolicy"`
	// SandboxConfig is the metadata passed to the CRI PullImage call.
	// +optional
	SandboxConfig *SandboxConfig `json:"sandboxConfig,omitempty" protobuf:"bytes,7,opt,name=sandboxConfig"`
	// ImagePullPolicy is Always or IfNotPresent (the default).
	// +optional
	ImagePullPolicy ImagePullPolicy `json:"imagePullPolicy,omitempty" protobuf:"bytes,8,opt,name=imagePullPolicy,casttype=ImagePullPolicy"`
}

// ImagePullJobPodSelector selects Pods by label.
type ImagePullJobPodSelector struct {
	// LabelSelector is a label query over Pods.
	// +optional
	metav1.LabelSelector `json:",inline" protobuf:"bytes,1,opt,name=labelSelector"`
}

// ImagePullJobNodeSelector selects nodes by name or by label.
type ImagePullJobNodeSelector struct {
	// Names are the nodes that pull; mutually exclusive with the label selector.
	// +optional
	Names []string `json:"names,omitempty" protobuf:"bytes,1,rep,name=names"`
	// LabelSelector is a label query over nodes.
	// +optional
	metav1.LabelSelector `json:",inline" protobuf:"bytes,2,opt,name=labelSelector"`
}

// PullPolicy is the timeout and retries of one pull.
type PullPolicy struct {
	// TimeoutSeconds is how long one pull may take; default 600.
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty" protobuf:"varint,1,opt,name=timeoutSeconds"`
	// BackoffLimit is how many times a pull is retried before it fails; default 3.
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty" protobuf:"varint,2,opt,name=backoffLimit"`
}

// CompletionPolicy says when a job is finished.
type CompletionPolicy struct {
	// Type is Always (the default) or Never.
	// +optional
	Type CompletionPolicyType `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=CompletionPolicyType"`
	// ActiveDeadlineSeconds is how long the job may run from its start (type Always only).
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty" protobuf:"varint,2,opt,name=activeDeadlineSeconds"`
	// TTLSecondsAfterFinished deletes the job this long after it finished (type Always only).
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty" protobuf:"varint,3,opt,name=ttlSecondsAfterFinished"`
}

// CompletionPolicyType is Always or Never.
type CompletionPolicyType string

const (
	// Always: the job finishes once every selected node is done, or at its deadline.
	Always CompletionPolicyType = "Always"
	// Never: the job stays active, and nodes that join later pull too.
	Never CompletionPolicyType = "Never"
)

// SandboxConfig is metadata passed to the CRI PullImage call.
type SandboxConfig struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty" protobuf:"bytes,1,rep,name=labels"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,2,rep,name=annotations"`
}

// ImagePullJobStatus is the progress of an ImagePullJob.
type ImagePullJobStatus struct {
	// StartTime is when the controller started the job.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,1,opt,name=startTime"`
	// CompletionTime is when the job finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,2,opt,name=completionTime"`
	// Desired is the number of nodes that should pull.
	Desired int32 `json:"desired" protobuf:"varint,3,opt,name=desired"`
	// Active is the number of pulls running.
	// +optional
	Active int32 `json:"active" protobuf:"varint,4,opt,name=active"`
	// Succeeded is the number of pulls that succeeded.
	// +optional
	Succeeded int32 `json:"succeeded" protobuf:"varint,5,opt,name=succeeded"`
	// Failed is the number of pulls that failed.
	// +optional
	Failed int32 `json:"failed" protobuf:"varint,6,opt,name=failed"`
	// Message summarises the job's state.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,7,opt,name=message"`
	// FailedNodes are the nodes whose pull failed.
	// +optional
	FailedNodes []string `json:"failedNodes,omitempty" protobuf:"bytes,8,rep,name=failedNodes"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ImagePullJob pulls one image on a set of nodes ahead of the Pods that need it.
type ImagePullJob struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec ImagePullJobSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status ImagePullJobStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ImagePullJobList is a list of ImagePullJobs.
type ImagePullJobList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []ImagePullJob `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// ImageListPullJobSpec is the images an ImageListPullJob pulls, where and how.
type ImageListPullJobSpec struct {
	// Images to pull; the controller makes one ImagePullJob for each.
	Images []string `json:"images" protobuf:"bytes,1,rep,name=images"`
	// ImagePullJobTemplate is where and how, as for an ImagePullJob.
	ImagePullJobTemplate `json:",inline" protobuf:"bytes,2,opt,name=imagePullJobTemplate"`
}

// ImageListPullJobStatus is the progress of an ImageListPullJob.
type ImageListPullJobStatus struct {
	// StartTime is when the controller started the job.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,1,opt,name=startTime"`
	// CompletionTime is when every ImagePullJob of it finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,2,opt,name=completionTime"`
	// Desired is the number of ImagePullJobs, normally len(spec.images).
	Desired int32 `json:"desired" protobuf:"varint,3,opt,name=desired"`
	// Active is the number of ImagePullJobs running.
	// +optional
	Active int32 `json:"active" protobuf:"varint,4,opt,name=active"`
	// Completed is the number of ImagePullJobs finished.
	// +optional
	Completed int32 `json:"completed" protobuf:"varint,5,opt,name=completed"`
	// Succeeded is the number of ImagePullJobs finished with every node succeeded.
	// +optional
	Succeeded int32 `json:"succeeded" protobuf:"varint,6,opt,name=succeeded"`
	// FailedImageStatuses are the ImagePullJobs with failed nodes.
	// +optional
	FailedImageStatuses []FailedImageStatus `json:"failedImageStatuses,omitempty" protobuf:"bytes,7,rep,name=failedImageStatuses"`
}

// FailedImageStatus is an ImagePullJob of the list with failed nodes.
type FailedImageStatus struct {
	// ImagePullJob is the name of the ImagePullJob.
	// +optional
	ImagePullJob string `json:"imagePullJob,omitempty" protobuf:"bytes,1,opt,name=imagePullJob"`
	// Name is the image.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,2,opt,name=name"`
	// Message is that job's message.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,3,opt,name=message"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ImageListPullJob pulls a list of images on a set of nodes, through one ImagePullJob per image.
type ImageListPullJob struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec ImageListPullJobSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status ImageListPullJobStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ImageListPullJobList is a list of ImageListPullJobs.
type ImageListPullJobList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []ImageListPullJob `json:"items" protobuf:"bytes,2,rep,name=items"`
}
