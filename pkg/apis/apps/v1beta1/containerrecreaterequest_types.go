package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ContainerRecreateRequest at v1beta1 is OpenKruise's (master, after v1.9): the spec is v1alpha1's
// (preStop a CRRProbeHandler), and the status has two fields that are annotations at v1alpha1:
// containerStatusSnapshot (crr.apps.kruise.io/sync-container-statuses) and conditions, whose
// PreRecreateGrace condition is crr.apps.kruise.io/unready-acquired.

// ContainerRecreateRequestPreRecreateGraceType is the condition that says the Pod was set not ready
// for strategy.unreadyGracePeriodSeconds; its lastTransitionTime is when.
const ContainerRecreateRequestPreRecreateGraceType = "PreRecreateGrace"

// ContainerRecreateRequestSpec is what to recreate, and how.
type ContainerRecreateRequestSpec struct {
	// PodName is the Pod whose containers are recreated, in the CRR's namespace.
	PodName string `json:"podName" protobuf:"bytes,1,opt,name=podName"`
	// Containers to recreate.
	// +patchMergeKey=name
	// +patchStrategy=merge
	Containers []ContainerRecreateRequestContainer `json:"containers" patchStrategy:"merge" patchMergeKey:"name" protobuf:"bytes,2,rep,name=containers"`
	// Strategy says how to recreate.
	// +optional
	Strategy *ContainerRecreateRequestStrategy `json:"strategy,omitempty" protobuf:"bytes,3,opt,name=strategy"`
	// ActiveDeadlineSeconds is how long the request may run before it is marked failed.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty" protobuf:"varint,4,opt,name=activeDeadlineSeconds"`
	// TTLSecondsAfterFinished deletes the request this long after it finished.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty" protobuf:"varint,5,opt,name=ttlSecondsAfterFinished"`
}

// ContainerRecreateRequestContainer is one container to recreate.
type ContainerRecreateRequestContainer struct {
	// Name of the container in the Pod.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// PreStop is run before the container is stopped; filled from the Pod.
	// +optional
	PreStop *CRRProbeHandler `json:"preStop,omitempty" protobuf:"bytes,2,opt,name=preStop"`
	// Ports of the container, filled from the Pod, for httpGet/tcpSocket preStop by port name.
	// +optional
	Ports []corev1.ContainerPort `json:"ports,omitempty" protobuf:"bytes,3,rep,name=ports"`
	// StatusContext is the container's identity when the request was made; filled from the Pod.
	// +optional
	StatusContext *ContainerRecreateRequestContainerContext `json:"statusContext,omitempty" protobuf:"bytes,4,opt,name=statusContext"`
}

// CRRProbeHandler is the action run before a container is stopped (v1alpha1's ProbeHandler).
type CRRProbeHandler struct {
	// +optional
	Exec *corev1.ExecAction `json:"exec,omitempty" protobuf:"bytes,1,opt,name=exec"`
	// +optional
	HTTPGet *corev1.HTTPGetAction `json:"httpGet,omitempty" protobuf:"bytes,2,opt,name=httpGet"`
	// +optional
	TCPSocket *corev1.TCPSocketAction `json:"tcpSocket,omitempty" protobuf:"bytes,3,opt,name=tcpSocket"`
}

// ContainerRecreateRequestContainerContext identifies the container instance to recreate.
type ContainerRecreateRequestContainerContext struct {
	// ContainerID the runtime reported.
	ContainerID string `json:"containerID" protobuf:"bytes,1,opt,name=containerID"`
	// RestartCount the kubelet reported.
	RestartCount int32 `json:"restartCount" protobuf:"varint,2,opt,name=restartCount"`
}

// ContainerRecreateRequestStrategy says how to recreate.
type ContainerRecreateRequestStrategy struct {
	// FailurePolicy is Fail (default: stop at the first failure) or Ignore.
	// +optional
	FailurePolicy ContainerRecreateRequestFailurePolicyType `json:"failurePolicy,omitempty" protobuf:"bytes,1,opt,name=failurePolicy,casttype=ContainerRecreateRequestFailurePolicyType"`
	// OrderedRecreate recreates one container after the other, each once the previous runs.
	// +optional
	OrderedRecreate bool `json:"orderedRecreate,omitempty" protobuf:"varint,2,opt,name=orderedRecreate"`
	// ForceRecreate recreates even a container that is not running.
	// +optional
	ForceRecreate bool `json:"forceRecreate,omitempty" protobuf:"varint,3,opt,name=forceRecreate"`
	// TerminationGracePeriodSeconds overrides the Pod's grace period for the stop.
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty" protobuf:"varint,4,opt,name=terminationGracePeriodSeconds"`
	// UnreadyGracePeriodSeconds sets the Pod not ready this long before recreating.
	// +optional
	UnreadyGracePeriodSeconds *int64 `json:"unreadyGracePeriodSeconds,omitempty" protobuf:"varint,5,opt,name=unreadyGracePeriodSeconds"`
	// MinStartedSeconds is how long a recreated container must run to count as started.
	// +optional
	MinStartedSeconds int32 `json:"minStartedSeconds,omitempty" protobuf:"varint,6,opt,name=minStartedSeconds"`
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
	Phase ContainerRecreateRequestPhase `json:"phase" protobuf:"bytes,1,opt,name=phase,casttype=ContainerRecreateRequestPhase"`
	// CompletionTime is when the request finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,2,opt,name=completionTime"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,3,opt,name=message"`
	// ContainerRecreateStates is the progress of each container.
	// +optional
	ContainerRecreateStates []ContainerRecreateRequestContainerRecreateState `json:"containerRecreateStates,omitempty" protobuf:"bytes,4,rep,name=containerRecreateStates"`
	// ContainerStatusSnapshot is the status of the recreated containers in the Pod as the
	// controller last saw them running, during Recreating (v1alpha1's annotation
	// crr.apps.kruise.io/sync-container-statuses).
	// +optional
	ContainerStatusSnapshot []ContainerRecreateRequestSyncContainerStatus `json:"containerStatusSnapshot,omitempty" protobuf:"bytes,5,rep,name=containerStatusSnapshot"`
	// Conditions of the request. PreRecreateGrace (status True) is set when the Pod was set not
	// ready for strategy.unreadyGracePeriodSeconds, its lastTransitionTime when (v1alpha1's
	// annotation crr.apps.kruise.io/unready-acquired).
	// +optional
	// +patchMergeKey=type
	// +patchStrategy=merge
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,6,rep,name=conditions"`
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
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Phase of its recreation.
	Phase ContainerRecreateRequestPhase `json:"phase" protobuf:"bytes,2,opt,name=phase,casttype=ContainerRecreateRequestPhase"`
	// Message explains the phase.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,3,opt,name=message"`
	// IsKilled is true once the container was stopped.
	// +optional
	IsKilled bool `json:"isKilled,omitempty" protobuf:"varint,4,opt,name=isKilled"`
}

// ContainerRecreateRequestSyncContainerStatus is one container of status.containerStatusSnapshot.
type ContainerRecreateRequestSyncContainerStatus struct {
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Ready is whether the container passed its readiness probe.
	Ready bool `json:"ready" protobuf:"varint,2,opt,name=ready"`
	// RestartCount is the number of times the container was restarted.
	RestartCount int32 `json:"restartCount" protobuf:"varint,3,opt,name=restartCount"`
	// ContainerID is the runtime's ID of the container, as '<type>://<id>'.
	// +optional
	ContainerID string `json:"containerID,omitempty" protobuf:"bytes,4,opt,name=containerID"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ContainerRecreateRequest asks for containers of a running Pod to be recreated in place.
type ContainerRecreateRequest struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec ContainerRecreateRequestSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status ContainerRecreateRequestStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// ContainerRecreateRequestList is a list of ContainerRecreateRequests.
type ContainerRecreateRequestList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Items           []ContainerRecreateRequest `json:"items" protobuf:"bytes,2,rep,name=items"`
}
