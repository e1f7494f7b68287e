package policy

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// PubOperation is an operation on a Pod that a PodUnavailableBudget can protect.
type PubOperation string

const (
	PubUpdateOperation PubOperation = "UPDATE"
	PubDeleteOperation PubOperation = "DELETE"
	PubEvictOperation  PubOperation = "EVICT"
	PubResizeOperation PubOperation = "RESIZE"
)

// PubOperations are the operations a budget can protect, in OpenKruise's order.
var PubOperations = []PubOperation{PubDeleteOperation, PubUpdateOperation, PubEvictOperation, PubResizeOperation}

const (
	// PodPubNoProtectionAnnotation on a Pod ("true") takes it out of every budget's protection
	// (OpenKruise's way to force-delete a Pod).
	PodPubNoProtectionAnnotation = "pub.kruise.io/no-protect"
	// PodRelatedPubAnnotation on a Pod names the budget that protects it (OpenKruise master's key;
	// set by the controller and the Pod webhook together with DeprecatedPodRelatedPubAnnotation).
	PodRelatedPubAnnotation = "pub.kruise.io/related-pub"
	// DeprecatedPodRelatedPubAnnotation is OpenKruise v1.9's key for the same, still written and
	// read, so that Pods annotated by either keep their budget.
	DeprecatedPodRelatedPubAnnotation = "kruise.io/related-pub"
	// PubUnavailablePodLabelPrefix: a Pod with a label of this prefix counts as unavailable to
	// every budget, however ready it is (OpenKruise's way to take a Pod out of service gently).
	PubUnavailablePodLabelPrefix = "unavailable-pod.kruise.io/"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodUnavailableBudget limits how many of the Pods it selects may be unavailable at once because
// of a deletion, an eviction or an in-place change (image, metadata, resources, container
// recreate).
type PodUnavailableBudget struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec   PodUnavailableBudgetSpec
	Status PodUnavailableBudgetStatus
}

// PodUnavailableBudgetSpec is what the budget protects and how much.
type PodUnavailableBudgetSpec struct {
	// Selector selects the Pods; TargetReference, when set, takes precedence.
	Selector *metav1.LabelSelector
	// TargetReference names the workload whose Pods the budget protects.
	TargetReference *TargetReference
	// MaxUnavailable (int or percent of the total) takes precedence over MinAvailable.
	MaxUnavailable *intstr.IntOrString
	MinAvailable   *intstr.IntOrString
	// ProtectOperations are the operations checked; empty is DELETE, UPDATE and EVICT.
	ProtectOperations []PubOperation
	// ProtectTotalReplicas, when set, is the total the percentages apply to instead of the
	// workload's replicas.
	ProtectTotalReplicas *int32
	// IgnoredPodSelector selects Pods that always bypass the budget.
	IgnoredPodSelector *metav1.LabelSelector
}

// TargetReference names a workload.
type TargetReference struct {
	APIVersion string
	Kind       string
	Name       string
}

// PodUnavailableBudgetStatus is what the budget counts.
type PodUnavailableBudgetStatus struct {
	ObservedGeneration int64
	// DisruptedPods are Pods deleted or evicted under the budget that it has not yet seen go.
	DisruptedPods map[string]metav1.Time
	// UnavailablePods are Pods changed in place under the budget that are not yet available again.
	UnavailablePods    map[string]metav1.Time
	UnavailableAllowed int32
	CurrentAvailable   int32
	DesiredAvailable   int32
	TotalReplicas      int32
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodUnavailableBudgetList is a list of PodUnavailableBudgets.
type PodUnavailableBudgetList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []PodUnavailableBudget
}
