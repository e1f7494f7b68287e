// Package statefulset is the storage of the statefulsets resource (OpenKruise's Advanced
// StatefulSet, served at v1beta1 and v1alpha1 from one store) and its status and scale
// subresources.
package statefulset

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Storage holds the REST storage of statefulsets and its subresources.
type Storage struct {
	StatefulSet *REST
	Status      *strategy.StatusREST
	Scale       *strategy.ScaleREST[*apps.StatefulSet]
}

// REST is the statefulsets resource.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets `kubectl get asts` work, as with OpenKruise. OpenKruise also claims "sts",
// which kubectl resolves to apps/v1 StatefulSets anyway; it is left to them.
func (*REST) ShortNames() []string { return []string{"asts"} }

// Categories puts Advanced StatefulSets in `kubectl get all`.
func (*REST) Categories() []string { return []string{"all"} }

// NewStorage returns the storage of statefulsets, statefulsets/status and statefulsets/scale.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	store, status, err := strategy.NewStores(scheme, optsGetter, kind, strategy.Resource[*apps.StatefulSet]{
		Plural:   apps.Resource("statefulsets"),
		Singular: apps.Resource("statefulset"),
		NewList:  func() runtime.Object { return &apps.StatefulSetList{} },
		Table:    tableConvertor,
	})
	if err != nil {
		return Storage{}, err
	}
	return Storage{StatefulSet: &REST{store}, Status: status, Scale: strategy.NewScaleREST(store, strategy.Replicas[*apps.StatefulSet]{
		Resource:   apps.Resource("statefulsets/scale"),
		Desired:    replicas,
		SetDesired: func(s *apps.StatefulSet, n int32) { s.Spec.Replicas = &n },
		Current:    func(s *apps.StatefulSet) int32 { return s.Status.Replicas },
		Selector:   func(s *apps.StatefulSet) string { return s.Status.LabelSelector },
	})}, nil
}

// The columns of OpenKruise's CRD.
var tableConvertor = table.New(
	table.Column[*apps.StatefulSet]{Name: "Desired", Type: "integer", Description: "The desired number of pods.",
		Cell: func(s *apps.StatefulSet) any { return replicas(s) }},
	table.Column[*apps.StatefulSet]{Name: "Current", Type: "integer", Description: "The number of currently all pods.",
		Cell: func(s *apps.StatefulSet) any { return s.Status.Replicas }},
	table.Column[*apps.StatefulSet]{Name: "Updated", Type: "integer", Description: "The number of pods updated.",
		Cell: func(s *apps.StatefulSet) any { return s.Status.UpdatedReplicas }},
	table.Column[*apps.StatefulSet]{Name: "Ready", Type: "integer", Description: "The number of pods ready.",
		Cell: func(s *apps.StatefulSet) any { return s.Status.ReadyReplicas }},
	table.Column[*apps.StatefulSet]{Name: "Containers", Type: "string", Priority: 1, Description: "The containers of the pod template.",
		Cell: func(s *apps.StatefulSet) any { return table.ContainerNames(&s.Spec.Template.Spec) }},
	table.Column[*apps.StatefulSet]{Name: "Images", Type: "string", Priority: 1, Description: "The images of the pod template.",
		Cell: func(s *apps.StatefulSet) any { return table.ContainerImages(&s.Spec.Template.Spec) }},
)

func replicas(s *apps.StatefulSet) int32 {
	if s.Spec.Replicas == nil {
		return 0
	}
	return *s.Spec.Replicas
}
