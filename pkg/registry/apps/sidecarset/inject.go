package sidecarset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
)

// InjectREST is POST sidecarsets/NAME/inject: it takes a core Pod and answers the Pod as it would
// be after that SidecarSet's injection, with no side effect.
type InjectREST struct{}

var (
	_ rest.NamedCreater             = &InjectREST{}
	_ rest.GroupVersionKindProvider = &InjectREST{}
)

// GroupVersionKind says the body and the answer are core v1 Pods.
func (*InjectREST) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return corev1.SchemeGroupVersion.WithKind("Pod")
}

// New returns an empty Pod.
func (*InjectREST) New() runtime.Object { return &corev1.Pod{} }

// Destroy does nothing.
func (*InjectREST) Destroy() {}

// Create answers the injected Pod.
func (*InjectREST) Create(_ context.Context, name string, _ runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("sidecarsets/inject of %q: not implemented yet in this version of inplace", name))
}
