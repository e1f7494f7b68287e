package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PubOperation is an operation on a Pod that a PodUnavailableBudget can protect: DELETE, UPDATE,
// EVICT or RESIZE.
type PubOperation string

const (
	PubUpdateOperation PubOperation = "UPDATE"
	PubDeleteOperation PubOperation = "DELETE"
	PubEvictOperation  PubOperation = "EVICT"
	PubResizeOperation PubOperation = "RESIZE"
)

const (
	// PubProtectOperationAnnotation lists the protected operations, comma-separated
	// ("DELETE,EVICT"); absent means DELETE, UPDATE and EVICT. v1beta1's spec.protectOperations.
	PubProtectOperationAnnotation = "kruise.io/pub-protect-operations"
	// PubProtectTotalReplicasAnnotation is the total the percentages apply to. v1beta1's
	// spec.protectTotalReplicas.
	PubProtectTotalReplicasAnnotation = "pub.kruise.io/protect-total-replicas"
	// PubIgnoredPodSelectorAnnotation carries v1beta1's spec.ignoredPodSelector (JSON) at v1alpha1,
	// which has no such field, so that a v1alpha1 client's update keeps it.
	PubIgnoredPodSelectorAnnotation = "inplace.dev/pub-ignored-pod-selector"
)

// PodUnavailableBudgetSpec defines the desired state of PodUnavailableBudget.
type PodUnavailableBudgetSpec struct {
	// Selector label query over pods managed by the budget.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty" protobuf:"bytes,1,opt,name=selector"`
	// TargetReference identifies a workload whose Pods the budget protects. Selector and
	// TargetReference are mutually exclusive.
	// +optional
	TargetReference *TargetReference `json:"targetRef,omitempty" protobuf:"bytes,2,opt,name=targetRef"`
	// An operation is allowed if at most "maxUnavailable" Pods are unavailable after it.
	// MaxUnavailable and MinAvailable are mutually exclusive.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty" protobuf:"bytes,3,opt,name=maxUnavailable"`
	// An operation is allowed if at least "minAvailable" Pods are available after it.
	// +optional
	MinAvailable *intstr.IntOrString `json:"minAvailable,omitempty" protobuf:"bytes,4,opt,name=minAvailable"`
}

// TargetReference contains enough information to identify a workload.
type TargetReference struct {
	// API version of the referent.
	// +optional
	APIVersion string `json:"apiVersion,omitempty" protobuf:"bytes,1,opt,name=apiVersion"`
	// Kind of the referent.
	// +optional
	Kind string `json:"kind,omitempty" protobuf:"bytes,2,opt,name=kind"`
	// Name of the referent.
	// +optional
	Name string `json:"name,omitempty" protobuf:"bytes,3,opt,name=name"`
}

// PodUnavailableBudgetStatus defines the observed state of PodUnavailableBudget.
type PodUnavailableBudgetStatus struct {
	// Most recent generation observed when updating this status.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration" protobuf:"varint,1,opt,name=observedGeneration"`
	// DisruptedPods are Pods whose deletion or eviction was allowed and not yet observed.
	// +optional
	DisruptedPods map[string]metav1.Time `json:"disruptedPods,omitempty" protobuf:"bytes,2,rep,name=disruptedPods"`
	// UnavailablePods are Pods changed in place that are not yet available again.
	// +optional
	UnavailablePods map[string]metav1.Time `json:"unavailablePods,omitempty" protobuf:"bytes,3,rep,name=unavailablePods"`
	// UnavailableAllowed is the number of Pods that may be made unavailable now.
	UnavailableAllowed int32 `json:"unavailableAllowed" protobuf:"varint,4,opt,name=unavailableAllowed"`
	// CurrentAvailable is the number of available Pods.
	CurrentAvailable int32 `json:"currentAvailable" protobuf:"varint,5,opt,name=currentAvailable"`
	// DesiredAvailable is the minimum number of available Pods.
	DesiredAvailable int32 `json:"desiredAvailable" protobuf:"varint,6,opt,name=desiredAvailable"`
	// TotalReplicas is the number of Pods the budget counts.
	TotalReplicas int32 `json:"totalReplicas" protobuf:"varint,7,opt,name=totalReplicas"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodUnavailableBudget limits how many of the Pods it selects may be unavailable at once because
// of a deletion, an eviction or an in-place change. At v1alpha1 the protected operations and the
// protected total are annotations (see the constants above).
type PodUnavailableBudget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   PodUnavailableBudgetSpec   `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status PodUnavailableBudgetStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodUnavailableBudgetList contains a list of PodUnavailableBudget.
type PodUnavailableBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Items []PodUnavailableBudget `json:"items" protobuf:"bytes,2,rep,name=items"`
}
