// Package install registers the policy.kruise.io API group, all its versions and the internal hub.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/inplace-dev/inplace/pkg/apis/policy"
	"github.com/inplace-dev/inplace/pkg/apis/policy/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/policy/v1beta1"
)

// Install registers the API group and adds its types to the scheme.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(policy.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(v1beta1.AddToScheme(scheme))
	// v1beta1 first, as OpenKruise's CRD marks it the storage version: discovery prefers it.
	utilruntime.Must(scheme.SetVersionPriority(v1beta1.SchemeGroupVersion, v1alpha1.SchemeGroupVersion))
}
