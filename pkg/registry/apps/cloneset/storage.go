// Package cloneset is the storage of the clonesets resource and its status and scale subresources.
package cloneset

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Storage holds the REST storage of clonesets and its subresources.
type Storage struct {
	CloneSet *REST
	Status   *strategy.StatusREST
	Scale    *strategy.ScaleREST[*apps.CloneSet]
}

// REST is the clonesets resource.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets `kubectl get clone` work, as with OpenKruise.
func (*REST) ShortNames() []string { return []string{"clone"} }

// Categories puts clonesets in `kubectl get all`.
func (*REST) Categories() []string { return []string{"all"} }

// NewStorage returns the storage of clonesets, clonesets/status and clonesets/scale.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	store, status, err := strategy.NewStores(scheme, optsGetter, kind, strategy.Resource[*apps.CloneSet]{
		Plural:   apps.Resource("clonesets"),
		Singular: apps.Resource("cloneset"),
		NewList:  func() runtime.Object { return &apps.CloneSetList{} },
		Table:    tableConvertor,
	})
	if err != nil {
		return Storage{}, err
	}
	return Storage{CloneSet: &REST{store}, Status: status, Scale: strategy.NewScaleREST(store, strategy.Replicas[*apps.CloneSet]{
		Resource:   apps.Resource("clonesets/scale"),
		Desired:    replicas,
		SetDesired: func(c *apps.CloneSet, n int32) { c.Spec.Replicas = &n },
		Current:    func(c *apps.CloneSet) int32 { return c.Status.Replicas },
		Selector:   func(c *apps.CloneSet) string { return c.Status.LabelSelector },
	})}, nil
}

var tableConvertor = table.New(
	table.Column[*apps.CloneSet]{Name: "Desired", Type: "integer", Description: "The desired number of pods.",
		Cell: func(c *apps.CloneSet) any { return replicas(c) }},
	table.Column[*apps.CloneSet]{Name: "Updated", Type: "integer", Description: "The number of pods updated.",
		Cell: func(c *apps.CloneSet) any { return c.Status.UpdatedReplicas }},
	table.Column[*apps.CloneSet]{Name: "Updated_Ready", Type: "integer", Description: "The number of pods updated and ready.",
		Cell: func(c *apps.CloneSet) any { return c.Status.UpdatedReadyReplicas }},
	table.Column[*apps.CloneSet]{Name: "Ready", Type: "integer", Description: "The number of pods ready.",
		Cell: func(c *apps.CloneSet) any { return c.Status.ReadyReplicas }},
	table.Column[*apps.CloneSet]{Name: "Total", Type: "integer", Description: "The number of pods the CloneSet owns.",
		Cell: func(c *apps.CloneSet) any { return c.Status.Replicas }},
	table.Column[*apps.CloneSet]{Name: "Containers", Type: "string", Priority: 1, Description: "The containers of the pod template.",
		Cell: func(c *apps.CloneSet) any { return table.ContainerNames(&c.Spec.Template.Spec) }},
	table.Column[*apps.CloneSet]{Name: "Images", Type: "string", Priority: 1, Description: "The images of the pod template.",
		Cell: func(c *apps.CloneSet) any { return table.ContainerImages(&c.Spec.Template.Spec) }},
	table.Column[*apps.CloneSet]{Name: "Selector", Type: "string", Priority: 1, Description: "The label selector of the pods.",
		Cell: func(c *apps.CloneSet) any { return c.Status.LabelSelector }},
)

func replicas(c *apps.CloneSet) int32 {
	if c.Spec.Replicas == nil {
		return 0
	}
	return *c.Spec.Replicas
}
