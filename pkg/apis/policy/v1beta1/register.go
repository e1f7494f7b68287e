package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of OpenKruise's policy kinds.
const GroupName = "policy.kruise.io"

// SchemeGroupVersion is the group version objects of this package are registered with.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}

var (
	// SchemeBuilder collects the functions that add this version to a scheme.
	SchemeBuilder      runtime.SchemeBuilder
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme adds the types and conversions of this version to a scheme.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	// Generated conversion functions register themselves from their own init.
	localSchemeBuilder.Register(addKnownTypes)
}

// Resource takes an unqualified resource and returns a group-qualified GroupResource.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &PodUnavailableBudget{}, &PodUnavailableBudgetList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
