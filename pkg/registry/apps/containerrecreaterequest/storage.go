// Package containerrecreaterequest is the storage of the containerrecreaterequests resource and
// its status subresource.
package containerrecreaterequest

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Storage holds the REST storage of containerrecreaterequests and its status.
type Storage struct {
	ContainerRecreateRequest *REST
	Status                   *strategy.StatusREST
}

// REST is the containerrecreaterequests resource.
type REST struct {
	*genericregistry.Store
}

var _ rest.ShortNamesProvider = &REST{}

// ShortNames lets `kubectl get crr` work, as with OpenKruise.
func (*REST) ShortNames() []string { return []string{"crr"} }

// NewStorage returns the storage of containerrecreaterequests and its status.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	store, status, err := strategy.NewStores(scheme, optsGetter, kind, strategy.Resource[*apps.ContainerRecreateRequest]{
		Plural:   apps.Resource("containerrecreaterequests"),
		Singular: apps.Resource("containerrecreaterequest"),
		NewList:  func() runtime.Object { return &apps.ContainerRecreateRequestList{} },
		Table:    tableConvertor,
	})
	if err != nil {
		return Storage{}, err
	}
	return Storage{ContainerRecreateRequest: &REST{store}, Status: status}, nil
}

var tableConvertor = table.New(
	table.Column[*apps.ContainerRecreateRequest]{Name: "Phase", Type: "string", Description: "Phase of this ContainerRecreateRequest.",
		Cell: func(c *apps.ContainerRecreateRequest) any { return string(c.Status.Phase) }},
	table.Column[*apps.ContainerRecreateRequest]{Name: "Pod", Type: "string", Description: "Pod name of this ContainerRecreateRequest.",
		Cell: func(c *apps.ContainerRecreateRequest) any { return c.Spec.PodName }},
	table.Column[*apps.ContainerRecreateRequest]{Name: "Node", Type: "string", Description: "Node of the Pod of this ContainerRecreateRequest.",
		Cell: func(c *apps.ContainerRecreateRequest) any {
			return c.Labels[v1alpha1.ContainerRecreateRequestNodeNameKey]
		}},
)
