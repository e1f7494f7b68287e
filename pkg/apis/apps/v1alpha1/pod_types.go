package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// InPlaceUpdateSpec is what an in-place update changes in a running Pod.
type InPlaceUpdateSpec struct {
	// Revision is the revision the Pod is updated to; it is written to the Pod's
	// controller-revision-hash label and to the in-place update state.
	// +optional
	Revision string `json:"revision,omitempty" protobuf:"bytes,1,opt,name=revision"`
	// Containers lists the containers to change and what to change in each.
	// +optional
	// +listType=map
	// +listMapKey=name
	Containers []InPlaceUpdateContainer `json:"containers,omitempty" protobuf:"bytes,2,rep,name=containers"`
	// Metadata holds labels and annotations to set on the Pod (merged into the existing ones).
	// +optional
	Metadata *InPlaceUpdateMetadata `json:"metadata,omitempty" protobuf:"bytes,3,opt,name=metadata"`
	// GracePeriodSeconds is how long the Pod stays not ready before its containers change.
	// +optional
	GracePeriodSeconds int32 `json:"gracePeriodSeconds,omitempty" protobuf:"varint,4,opt,name=gracePeriodSeconds"`
	// SidecarSet, when set, makes this the in-place upgrade of the sidecar containers that
	// SidecarSet injected into the Pod, as inplace-controller's SidecarSet controller requests it.
	// It is tracked apart from the workload's update (Pod annotation
	// kruise.io/sidecarset-inplace-update-state), so both run at once; revision is the SidecarSet's
	// hash, recorded in the Pod's kruise.io/sidecarset-hash annotation instead of the
	// controller-revision-hash label; only images of that SidecarSet's containers and annotations
	// (a hot upgrade's, and the SidecarSet's patchPodMetadata) may change (no labels, resources
	// or grace period).
	// +optional
	SidecarSet *InPlaceUpdateSidecarSet `json:"sidecarSet,omitempty" protobuf:"bytes,5,opt,name=sidecarSet"`
	// CompletionLabels are labels set on the Pod by the same write that records the update
	// completed, sparing a write of their own: a workload's lifecycle state after the update
	// (lifecycle.apps.kruise.io/state, whose timestamp annotation is then set to the completion
	// time), say. Not for a SidecarSet upgrade.
	// +optional
	CompletionLabels map[string]string `json:"completionLabels,omitempty" protobuf:"bytes,6,rep,name=completionLabels"`
	// StayInService keeps the Pod in service while its containers change: InPlaceUpdateReady
	// stays True (the kubelet's own readiness still counts), for a change of containers that do
	// not serve the Pod's traffic (a log shipper, a metrics agent). Not with gracePeriodSeconds
	// (the time a Pod spends out of service before it changes) nor for a SidecarSet upgrade
	// (sidecarSet.leaveService decides there).
	// +optional
	StayInService bool `json:"stayInService,omitempty" protobuf:"varint,7,opt,name=stayInService"`
}

// InPlaceUpdateSidecarSet names the SidecarSet whose sidecars an in-place update upgrades.
type InPlaceUpdateSidecarSet struct {
	// Name of the SidecarSet.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// ControllerRevision is the SidecarSet's ControllerRevision of the hash upgraded to.
	// +optional
	ControllerRevision string `json:"controllerRevision,omitempty" protobuf:"bytes,2,opt,name=controllerRevision"`
	// LeaveService takes the Pod out of service (InPlaceUpdateReady False, for Pods with that
	// readiness gate) until the sidecars run their new images. By default the Pod stays in
	// service, as OpenKruise keeps it.
	// +optional
	LeaveService bool `json:"leaveService,omitempty" protobuf:"varint,3,opt,name=leaveService"`
}

// InPlaceUpdateContainer is the change of one container.
type InPlaceUpdateContainer struct {
	// Name of the container in the Pod.
	Name string `json:"name" protobuf:"bytes,1,opt,name=name"`
	// Image is the new image.
	// +optional
	Image string `json:"image,omitempty" protobuf:"bytes,2,opt,name=image"`
	// Resources are the new requests and limits; they go through the Pod's resize subresource.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty" protobuf:"bytes,3,opt,name=resources"`
}

// InPlaceUpdateMetadata is Pod metadata to set or remove.
type InPlaceUpdateMetadata struct {
	// Labels to set.
	// +optional
	Labels map[string]string `json:"labels,omitempty" protobuf:"bytes,1,rep,name=labels"`
	// Annotations to set.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty" protobuf:"bytes,2,rep,name=annotations"`
	// RemoveLabels are label keys to remove (a key the Pod lacks is ignored).
	// +optional
	// +listType=set
	RemoveLabels []string `json:"removeLabels,omitempty" protobuf:"bytes,3,rep,name=removeLabels"`
	// RemoveAnnotations are annotation keys to remove (a key the Pod lacks is ignored).
	// +optional
	// +listType=set
	RemoveAnnotations []string `json:"removeAnnotations,omitempty" protobuf:"bytes,4,rep,name=removeAnnotations"`
}

// InPlaceUpdateStatus is the Pod's in-place update state after the request.
type InPlaceUpdateStatus struct {
	// State is the Pod's in-place update state annotation, decoded.
	// +optional
	State *pub.InPlaceUpdateState `json:"state,omitempty" protobuf:"bytes,1,opt,name=state"`
	// Message says what happened and what comes next.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,2,opt,name=message"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// InPlaceUpdate is the body of POST pods/NAME/inplaceupdate: it starts an in-place update of the
// core Pod NAME and answers with the resulting state.
type InPlaceUpdate struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// +optional
	Spec InPlaceUpdateSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	// +optional
	Status InPlaceUpdateStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +genclient
// +genclient:skipVerbs=get,list,watch,create,update,updateStatus,patch,apply,applyStatus,delete,deleteCollection
// +genclient:method=InPlaceUpdate,verb=create,subresource=inplaceupdate,input=InPlaceUpdate,result=InPlaceUpdate
// +genclient:method=Recreate,verb=create,subresource=recreate,input=ContainerRecreateRequest,result=ContainerRecreateRequest
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Pod is the handle of this group's Pod subresources (inplaceupdate, recreate). The object behind
// them is the core Pod of the same namespace and name; this kind carries nothing of its own, is
// never stored, and has no verbs, so `kubectl get pods` keeps meaning the core resource.
type Pod struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
}
