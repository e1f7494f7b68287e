package apiserver

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/install"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/apis/policy"
	policyinstall "github.com/inplace-dev/inplace/pkg/apis/policy/install"
	policyv1beta1 "github.com/inplace-dev/inplace/pkg/apis/policy/v1beta1"
)

var (
	// Scheme holds every kind inplace-apiserver serves or reads.
	Scheme = runtime.NewScheme()
	// Codecs encode and decode the kinds of Scheme.
	Codecs = serializer.NewCodecFactory(Scheme)
)

func init() {
	install.Install(Scheme)
	policyinstall.Install(Scheme)
	utilruntime.Must(addForeignKinds(Scheme))

	// Kinds every API server must know, as in k8s.io/sample-apiserver.
	metav1.AddToGroupVersion(Scheme, schema.GroupVersion{Version: "v1"})
	unversioned := schema.GroupVersion{Group: "", Version: "v1"}
	Scheme.AddUnversionedTypes(unversioned,
		&metav1.Status{},
		&metav1.APIVersions{},
		&metav1.APIGroupList{},
		&metav1.APIGroup{},
		&metav1.APIResourceList{},
	)
}

// addForeignKinds registers the kinds of other groups that our subresources speak: the
// autoscaling/v1 Scale of clonesets/scale and the core v1 Pod of sidecarsets/inject. The request
// handlers decode a body into the internal version of its group; these groups have no internal Go
// types here, so the versioned type is registered as its own internal form (no conversion).
func addForeignKinds(scheme *runtime.Scheme) error {
	foreign := map[schema.GroupVersion][]runtime.Object{
		autoscalingv1.SchemeGroupVersion: {&autoscalingv1.Scale{}},
		corev1.SchemeGroupVersion:        {&corev1.Pod{}},
	}
	for gv, objs := range foreign {
		scheme.AddKnownTypes(gv, objs...)
		scheme.AddKnownTypes(schema.GroupVersion{Group: gv.Group, Version: runtime.APIVersionInternal}, objs...)
	}
	return nil
}

// StorageVersioner picks the version each kind is stored at in etcd: policy.kruise.io at v1beta1;
// in apps.kruise.io v1beta1 for
// the kinds OpenKruise v1.9 stores there (the Advanced StatefulSet and DaemonSet, the SidecarSet,
// the ImagePullJob, the ImageListPullJob and the NodeImage), v1alpha1 for every other kind. Reads accept any version that was ever stored, so an object an earlier
// release stored at v1alpha1 is read as it is and rewritten at v1beta1 on its next write.
var StorageVersioner runtime.GroupVersioner = storageVersioner{}

// storedAtV1beta1 are the kinds stored at v1beta1.
var storedAtV1beta1 = map[string]bool{
	"StatefulSet": true, "StatefulSetList": true,
	"SidecarSet": true, "SidecarSetList": true,
	"ImagePullJob": true, "ImagePullJobList": true,
	"ImageListPullJob": true, "ImageListPullJobList": true,
	"NodeImage": true, "NodeImageList": true,
	"DaemonSet": true, "DaemonSetList": true,
}

type storageVersioner struct{}

func (storageVersioner) KindForGroupVersionKinds(kinds []schema.GroupVersionKind) (schema.GroupVersionKind, bool) {
	for _, k := range kinds {
		if k.Group == policy.GroupName {
			// PodUnavailableBudget: v1beta1, OpenKruise master's storage version.
			return policyv1beta1.SchemeGroupVersion.WithKind(k.Kind), true
		}
		if k.Group != apps.GroupName {
			continue
		}
		if storedAtV1beta1[k.Kind] {
			return v1beta1.SchemeGroupVersion.WithKind(k.Kind), true
		}
		return v1alpha1.SchemeGroupVersion.WithKind(k.Kind), true
	}
	return schema.GroupVersionKind{}, false
}

func (storageVersioner) Identifier() string { return "inplace-storage-versions" }
