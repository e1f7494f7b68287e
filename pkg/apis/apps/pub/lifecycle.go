package pub

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

const (
	// LifecycleStateKey is the Pod label holding its LifecycleStateType.
	LifecycleStateKey = "lifecycle.apps.kruise.io/state"
	// LifecycleTimestampKey is the Pod annotation holding when the lifecycle state last changed
	// (RFC 3339).
	LifecycleTimestampKey = "lifecycle.apps.kruise.io/timestamp"

	// KruisePodReadyConditionType is the shared Pod condition (and readiness gate) that hooks and
	// recreate requests set False to take a Pod out of service.
	KruisePodReadyConditionType corev1.PodConditionType = "KruisePodReady"

	// ContainerLaunchPriorityEnvName is the container env holding its launch priority (an integer).
	ContainerLaunchPriorityEnvName = "KRUISE_CONTAINER_PRIORITY"
	// ContainerLaunchBarrierEnvName is the env injected into prioritised containers.
	ContainerLaunchBarrierEnvName = "KRUISE_CONTAINER_BARRIER"
	// ContainerLaunchPriorityKey is the Pod annotation that asks for containers to launch in order.
	ContainerLaunchPriorityKey = "apps.kruise.io/container-launch-priority"
	// ContainerLaunchOrdered is the ContainerLaunchPriorityKey value: launch in container order.
	ContainerLaunchOrdered = "Ordered"
	// ContainerLaunchPriorityCompletedKey is set on the Pod once all priorities were released.
	ContainerLaunchPriorityCompletedKey = "apps.kruise.io/container-launch-priority-completed"
)

// LifecycleTimestamp is the value of the LifecycleTimestampKey annotation for t, as OpenKruise
// writes it.
func LifecycleTimestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// LifecycleStateType is the value of the LifecycleStateKey label.
type LifecycleStateType string

const (
	LifecycleStatePreparingNormal LifecycleStateType = "PreparingNormal"
	LifecycleStateNormal          LifecycleStateType = "Normal"
	LifecycleStatePreparingUpdate LifecycleStateType = "PreparingUpdate"
	LifecycleStateUpdating        LifecycleStateType = "Updating"
	LifecycleStateUpdated         LifecycleStateType = "Updated"
	LifecycleStatePreparingDelete LifecycleStateType = "PreparingDelete"
)

// Lifecycle holds the hooks a workload honours around a Pod's life.
type Lifecycle struct {
	// PreDelete is the hook before the Pod is deleted.
	PreDelete *LifecycleHook `json:"preDelete,omitempty" protobuf:"bytes,1,opt,name=preDelete"`
	// InPlaceUpdate is the hook before the Pod is updated in place and after it has been.
	InPlaceUpdate *LifecycleHook `json:"inPlaceUpdate,omitempty" protobuf:"bytes,2,opt,name=inPlaceUpdate"`
	// PreNormal is the hook after the Pod is created and before it becomes Normal.
	PreNormal *LifecycleHook `json:"preNormal,omitempty" protobuf:"bytes,3,opt,name=preNormal"`
}

// LifecycleHook says what holds a Pod in a preparing state: while the Pod carries any of these
// labels or finalizers, the workload waits.
type LifecycleHook struct {
	// LabelsHandler are labels whose presence (with these values) holds the Pod.
	LabelsHandler map[string]string `json:"labelsHandler,omitempty" protobuf:"bytes,1,rep,name=labelsHandler"`
	// FinalizersHandler are finalizers whose presence holds the Pod.
	FinalizersHandler []string `json:"finalizersHandler,omitempty" protobuf:"bytes,2,rep,name=finalizersHandler"`
	// MarkPodNotReady sets KruisePodReady False while the Pod is PreparingUpdate or PreparingDelete.
	MarkPodNotReady bool `json:"markPodNotReady,omitempty" protobuf:"varint,3,opt,name=markPodNotReady"`
}
