// Package install registers the apps.kruise.io API group, all its versions and the internal hub.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
)

// Install registers the API group and adds its types to the scheme.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(apps.AddToScheme(scheme))
	utilruntime.Must(v1alpha1.AddToScheme(scheme))
	utilruntime.Must(v1beta1.AddToScheme(scheme))
	// v1beta1 first, as kube-apiserver orders the versions of OpenKruise's CRDs: discovery prefers
	// it, so `kubectl get statefulsets.apps.kruise.io` reads v1beta1 as with OpenKruise; kinds
	// served only at v1alpha1 are found there.
	utilruntime.Must(scheme.SetVersionPriority(v1beta1.SchemeGroupVersion, v1alpha1.SchemeGroupVersion))
}
