package apps

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ContainerRecreateRequestSpec is what to recreate, and how.
type ContainerRecreateRequestSpec struct {
	// PodName is the Pod whose containers are recreated, in the CRR's namespace.
	PodName string `json:"podName"`
	// Containers to recreate.
	// +patchMergeKey=name
	// +patchStrategy=merge
	Containers []ContainerRecreateRequestContainer `json:"containers" patchStrategy:"merge" patchMergeKey:"name"`
	// Strategy says how to recreate.
	// +optional
	Strategy *ContainerRecreateRequestStrategy `json:"strategy,omitempty"`
	// ActiveDeadlineSeconds is how long the request may run before it is marked failed.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	// TTLSecondsAfterFinished deletes the request this long after it finished.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`
}

// ContainerRecreateRequestContainer is one container to recreate.
type ContainerRecreateRequestContainer struct {
	// Name of the container in the Pod.
	Name string `json:"name"`
	// PreStop is run before the container is stopped; filled from the Pod.
	// +optional
	PreStop *ProbeHandler `json:"preStop,omitempty"`
	// Ports of the container, filled from the Pod, for httpGet/tcpSocket preStop by port name.
	// +optional
	Ports []corev1.ContainerPort `json:"ports,omitempty"`
	// StatusContext is the container's identity when the request was made; filled from the Pod.
	// +optional
	StatusContext *ContainerRecreateRequestContainerContext `json:"statusContext,omitempty"`
}

// ProbeHandler is an action run against a container.
type ProbeHandler struct {
	// +optional
	Exec *corev1.ExecAction `json:"exec,omitempty"`
	// +optional
	HTTPGet *corev1.HTTPGetAction `json:"httpGet,omitempty"`
	// +optional
	TCPSocket *corev1.TCPSocketAction `json:"tcpSocket,omitempty"`
}

// ContainerRecreateRequestContainerContext identifies the container instance to recreate.
type ContainerRecreateRequestContainerContext struct {
	// ContainerID the runtime reported.
	ContainerID string `json:"containerID"`
	// RestartCount the kubelet reported.
	RestartCount int32 `json:"restartCount"`
}

// ContainerRecreateRequestStrategy says how to recreate.
type ContainerRecreateRequestStrategy struct {
	// FailurePolicy is Fail (default: stop at the first failure) or Ignore.
	// +optional
	FailurePolicy ContainerRecreateRequestFailurePolicyType `json:"failurePolicy,omitempty"`
	// OrderedRecreate recreates one container after the other, each once the previous runs.
	// +optional
	OrderedRecreate bool `json:"orderedRecreate,omitempty"`
	// ForceRecreate recreates even a container that is not running.
	// +optional
	ForceRecreate bool `json:"forceRecreate,omitempty"`
	// TerminationGracePeriodSeconds overrides the Pod's grace period for the stop.
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// UnreadyGracePeriodSeconds sets the Pod not ready this long before recreating.
	// +optional
	UnreadyGracePeriodSeconds *int64 `json:"unreadyGracePeriodSeconds,omitempty"`
	// MinStartedSeconds is how long a recreated container must run to count as started.
	// +optional
	MinStartedSeconds int32 `json:"minStartedSeconds,omitempty"`
}

// ContainerRecreateRequestFailurePolicyType is Fail or Ignore.
type ContainerRecreateRequestFailurePolicyType string

const (
	ContainerRecreateRequestFailurePolicyFail   ContainerRecreateRequestFailurePolicyType = "Fail"
	ContainerRecreateRequestFailurePolicyIgnore ContainerRecreateRequestFailurePolicyType = "Ignore"
)

// ContainerRecreateRequestStatus is the progress of a request.
type ContainerRecreateRequestStatus struct {
	// Phase of the request: Pending, Recreating or Completed.
	Phase ContainerRecreateRequestPhase `json:"phase"`
	// CompletionTime is when the request finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// ContainerRecreateStates is the progress of each container.
	// +optional
	ContainerRecreateStates []ContainerRecreateRequestContainerRecreateState `json:"containerRecreateStates,omitempty"`
}

// ContainerRecreateRequestPhase is the phase of a request or of one of its containers.
type ContainerRecreateRequestPhase string

const (
	ContainerRecreateRequestPending    ContainerRecreateRequestPhase = "Pending"
	ContainerRecreateRequestRecreating ContainerRecreateRequestPhase = "Recreating"
	ContainerRecreateRequestSucceeded  ContainerRecreateRequestPhase = "Succeeded"
	ContainerRecreateRequestFailed     ContainerRecreateRequestPhase = "Failed"
	ContainerRecreateRequestCompleted  ContainerRecreateRequestPhase = "Completed"
)

// ContainerRecreateRequestContainerRecreateState is the progress of one container.
type ContainerRecreateRequestContainerRecreateState struct {
	// Name of the container.
	Name string `json:"name"`
	// Phase of its recreation.
	Phase ContainerRecreateRequestPhase `json:"phase"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty"`
	// IsKilled is true once the container was stopped.
	// +optional
	IsKilled bool `json:"isKilled,omitempty"`
}

// ContainerRecreateRequestSyncContainerStatus is one entry of the sync-container-statuses annotation.
type ContainerRecreateRequestSyncContainerStatus struct {
	Name         string `json:"name"`
	Ready        bool   `json:"ready"`
	RestartCount int32  `json:"restartCount"`
	ContainerID  string `json:"containerID,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ContainerRecreateRequest asks for containers of a running Pod to be recreated in place.
type ContainerRecreateRequest struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ContainerRecreateRequestSpec `json:"spec,omitempty"`
	// +optional
	Status ContainerRecreateRequestStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ContainerRecreateRequestList is a list of ContainerRecreateRequests.
type ContainerRecreateRequestList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ContainerRecreateRequest `json:"items"`
}
