// Package pod holds this group's Pod subresources: POST pods/NAME/inplaceupdate and
// POST pods/NAME/recreate. The object behind them is the core Pod NAME; this group stores no Pods
// and its pods resource answers no verbs of its own, so `kubectl get pods` stays the core resource.
package pod

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/policy"
)

// Storage holds the pods resource of this group and its subresources.
type Storage struct {
	Pod           *REST
	InPlaceUpdate *InPlaceUpdateREST
	Recreate      *RecreateREST
}

// Budgets takes a unit of a Pod's PodUnavailableBudget before the Pod is disrupted by op at time
// at, or refuses with the error the client gets (a 429 naming the budget); with dryRun it only
// checks.
type Budgets interface {
	Charge(ctx context.Context, pod *corev1.Pod, op policy.PubOperation, at time.Time, dryRun bool) error
}

// NewStorage returns the pods handle and its subresources. pods reaches the core Pods; it is nil in
// standalone mode, where the subresources answer 503. sidecarSets, when not nil, lists the
// SidecarSets whose resourcesPolicy sidecars follow a resize of their app (InPlaceUpdateREST).
// budgets are charged by both subresources before they change a Pod.
func NewStorage(pods corev1client.PodsGetter, crrs RecreateStorage, sidecarSets func() ([]*v1alpha1.SidecarSet, error), budgets Budgets) Storage {
	return Storage{
		Pod:           &REST{},
		InPlaceUpdate: &InPlaceUpdateREST{pods: pods, now: time.Now, sidecarSets: sidecarSets, budgets: budgets},
		Recreate:      &RecreateREST{pods: pods, crrs: crrs, budgets: budgets},
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
