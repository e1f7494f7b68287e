package pub

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// InPlaceUpdateReady is the Pod condition (and readiness gate) that is False while containers
	// of the Pod are being updated in place.
	InPlaceUpdateReady corev1.PodConditionType = "InPlaceUpdateReady"

	// InPlaceUpdateStateKey is the Pod annotation holding the JSON InPlaceUpdateState.
	InPlaceUpdateStateKey = "apps.kruise.io/inplace-update-state"
	// InPlaceUpdateStateKeyOld is the legacy key of InPlaceUpdateStateKey; it is still read.
	InPlaceUpdateStateKeyOld = "inplace-update-state"
	// InPlaceUpdateGraceKey is the Pod annotation holding the pending update while a grace period runs.
	InPlaceUpdateGraceKey = "apps.kruise.io/inplace-update-grace"
	// InPlaceUpdateGraceKeyOld is the legacy key of InPlaceUpdateGraceKey; it is still read.
	InPlaceUpdateGraceKeyOld = "inplace-update-grace"
	// RuntimeContainerMetaKey is the Pod annotation the daemon writes with what the runtime reports.
	RuntimeContainerMetaKey = "apps.kruise.io/runtime-containers-meta"
)

// InPlaceUpdateState records the progress of an in-place update inside the Pod it updates, so that
// any program can be restarted at any moment and the update resumes.
type InPlaceUpdateState struct {
	// Revision is the revision the Pod is being updated to.
	Revision string `json:"revision" protobuf:"bytes,1,opt,name=revision"`
	// UpdateTimestamp is when the update started.
	UpdateTimestamp metav1.Time `json:"updateTimestamp" protobuf:"bytes,2,opt,name=updateTimestamp"`
	// LastContainerStatuses records the imageID of each updated container before the update,
	// so that a changed imageID proves the new image runs.
	LastContainerStatuses map[string]InPlaceUpdateContainerStatus `json:"lastContainerStatuses" protobuf:"bytes,3,rep,name=lastContainerStatuses"`
	// UpdateEnvFromMetadata is true when containers must restart to see changed Pod metadata
	// through env fieldRefs.
	UpdateEnvFromMetadata bool `json:"updateEnvFromMetadata,omitempty" protobuf:"varint,4,opt,name=updateEnvFromMetadata"`
	// UpdateResources is true when the update resizes containers.
	UpdateResources bool `json:"updateResources,omitempty" protobuf:"varint,5,opt,name=updateResources"`
	// UpdateImages is true when the update changes container images.
	UpdateImages bool `json:"updateImages,omitempty" protobuf:"varint,6,opt,name=updateImages"`
	// NextContainerImages are images of later batches, applied once PreCheckBeforeNext holds.
	NextContainerImages map[string]string `json:"nextContainerImages,omitempty" protobuf:"bytes,7,rep,name=nextContainerImages"`
	// NextContainerRefMetadata is the metadata later batches must see through env fieldRefs.
	NextContainerRefMetadata map[string]metav1.ObjectMeta `json:"nextContainerRefMetadata,omitempty" protobuf:"bytes,8,rep,name=nextContainerRefMetadata"`
	// NextContainerResources are resources of later batches.
	NextContainerResources map[string]corev1.ResourceRequirements `json:"nextContainerResources,omitempty" protobuf:"bytes,9,rep,name=nextContainerResources"`
	// PreCheckBeforeNext is what must hold before the next batch starts.
	PreCheckBeforeNext *InPlaceUpdatePreCheckBeforeNext `json:"preCheckBeforeNext,omitempty" protobuf:"bytes,10,opt,name=preCheckBeforeNext"`
	// ContainerBatchesRecord lists the batches started so far, in order.
	ContainerBatchesRecord []InPlaceUpdateContainerBatch `json:"containerBatchesRecord,omitempty" protobuf:"bytes,11,rep,name=containerBatchesRecord"`
}

// InPlaceUpdatePreCheckBeforeNext is what must hold before the next batch of containers is updated.
type InPlaceUpdatePreCheckBeforeNext struct {
	// ContainersRequiredReady must all be ready first.
	ContainersRequiredReady []string `json:"containersRequiredReady,omitempty" protobuf:"bytes,1,rep,name=containersRequiredReady"`
}

// InPlaceUpdateContainerBatch is one batch of containers updated together.
type InPlaceUpdateContainerBatch struct {
	// Timestamp is when the batch started.
	Timestamp metav1.Time `json:"timestamp" protobuf:"bytes,1,opt,name=timestamp"`
	// Containers are the names of the containers in the batch.
	Containers []string `json:"containers" protobuf:"bytes,2,rep,name=containers"`
}

// InPlaceUpdateContainerStatus is what was recorded of a container before it was updated.
type InPlaceUpdateContainerStatus struct {
	// ImageID the container ran before the update.
	ImageID string `json:"imageID,omitempty" protobuf:"bytes,1,opt,name=imageID"`
}

// InPlaceUpdateStrategy defines how in-place updates are carried out.
type InPlaceUpdateStrategy struct {
	// GracePeriodSeconds is the time between marking the Pod not ready and updating its containers.
	GracePeriodSeconds int32 `json:"gracePeriodSeconds,omitempty" protobuf:"varint,1,opt,name=gracePeriodSeconds"`
}

// RuntimeContainerMetaSet is the JSON of the RuntimeContainerMetaKey annotation.
type RuntimeContainerMetaSet struct {
	Containers []RuntimeContainerMeta `json:"containers" protobuf:"bytes,1,rep,name=containers"`
}

// RuntimeContainerMeta is what the container runtime reports of one container.
type RuntimeContainerMeta struct {
	Name         string                 `json:"name" protobuf:"bytes,1,opt,name=name"`
	ContainerID  string                 `json:"containerID" protobuf:"bytes,2,opt,name=containerID"`
	RestartCount int32                  `json:"restartCount" protobuf:"varint,3,opt,name=restartCount"`
	Hashes       RuntimeContainerHashes `json:"hashes" protobuf:"bytes,4,opt,name=hashes"`
}

// RuntimeContainerHashes are hashes of a running container's spec.
type RuntimeContainerHashes struct {
	// PlainHash is the hash of the container spec the kubelet computed.
	PlainHash uint64 `json:"plainHash" protobuf:"varint,1,opt,name=plainHash"`
	// PlainHashWithoutResources is PlainHash with resources left out.
	PlainHashWithoutResources uint64 `json:"plainHashWithoutResources" protobuf:"varint,2,opt,name=plainHashWithoutResources"`
	// ExtractedEnvFromMetadataHash is the hash of env values taken from Pod metadata.
	ExtractedEnvFromMetadataHash uint64 `json:"extractedEnvFromMetadataHash,omitempty" protobuf:"varint,3,opt,name=extractedEnvFromMetadataHash"`
}
