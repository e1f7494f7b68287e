// Package pod holds this group's Pod subresources: POST pods/NAME/inplaceupdate and
// POST pods/NAME/recreate. The object behind them is the core Pod NAME; this group stores no Pods
// and its pods resource answers no verbs of its own, so `kubectl get pods` stays the core resource.
package pod

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

// Storage holds the pods resource of this group and its subresources.
type Storage struct {
	Pod           *REST
	InPlaceUpdate *InPlaceUpdateREST
	Recreate      *RecreateREST
}

// NewStorage returns the pods handle and its subresources. pods reaches the core Pods; it is nil in
// standalone mode, where the subresources answer 503.
func NewStorage(pods corev1client.PodsGetter) Storage {
	return Storage{
		Pod:           &REST{},
		InPlaceUpdate: &InPlaceUpdateREST{pods: pods, now: time.Now},
		Recreate:      &RecreateREST{},
	}
}

// REST is the parent of the Pod subresources. The API server needs a parent storage to know the
// subresources' scope; it implements no verb, so it serves nothing itself.
type REST struct{}

var (
	_ rest.Storage              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

// New returns the handle kind.
func (*REST) New() runtime.Object { return &apps.Pod{} }

// Destroy does nothing: there is no store behind Pods here.
func (*REST) Destroy() {}

// GetSingularName is pod, as for the core resource.
func (*REST) GetSingularName() string { return "pod" }

// NamespaceScoped is true: Pods live in namespaces.
func (*REST) NamespaceScoped() bool { return true }

// RecreateREST is POST pods/NAME/recreate.
type RecreateREST struct{}

var _ rest.NamedCreater = &RecreateREST{}

// New returns an empty ContainerRecreateRequest body.
func (*RecreateREST) New() runtime.Object { return &apps.ContainerRecreateRequest{} }

// Destroy does nothing.
func (*RecreateREST) Destroy() {}

// Create creates a ContainerRecreateRequest for the Pod name.
func (*RecreateREST) Create(_ context.Context, name string, _ runtime.Object, _ rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	return nil, notImplemented("pods/recreate", name)
}

func notImplemented(subresource, name string) error {
	return apierrors.NewServiceUnavailable(fmt.Sprintf("%s of %q: not implemented yet in this version of inplace", subresource, name))
}
