// Package nodeimage is the storage of the cluster-scoped nodeimages resource (one per node, named
// after it) and its status subresource.
package nodeimage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Storage holds the REST storage of nodeimages and its status.
type Storage struct {
	NodeImage *genericregistry.Store
	Status    *strategy.StatusREST
}

// NewStorage returns the storage of nodeimages and nodeimages/status.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	store, status, err := strategy.NewStores(scheme, optsGetter, kind, strategy.Resource[*apps.NodeImage]{
		Plural:   apps.Resource("nodeimages"),
		Singular: apps.Resource("nodeimage"),
		NewList:  func() runtime.Object { return &apps.NodeImageList{} },
		Table:    tableConvertor,
	})
	if err != nil {
		return Storage{}, err
	}
	return Storage{NodeImage: store, Status: status}, nil
}

// kind describes NodeImages (cluster-scoped) to the shared strategy.
var kind = strategy.Kind[*apps.NodeImage]{
	NamespaceScoped:      false,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	New:                  func() *apps.NodeImage { return &apps.NodeImage{} },
	Spec:                 func(o *apps.NodeImage) any { return &o.Spec },
	Status:               func(o *apps.NodeImage) any { return &o.Status },
	CopySpec:             func(dst, src *apps.NodeImage) { dst.Spec = src.Spec },
	CopyStatus:           func(dst, src *apps.NodeImage) { dst.Status = src.Status },
	Validate:             validation.ValidateNodeImage,
	ValidateUpdate:       validation.ValidateNodeImageUpdate,
	ValidateStatusUpdate: validation.ValidateNodeImageStatusUpdate,
}

// tableConvertor prints OpenKruise's printer columns: DESIRED PULLING SUCCEED FAILED AGE.
var tableConvertor = table.New(
	table.Column[*apps.NodeImage]{Name: "Desired", Type: "integer", Description: "Number of all images on this node",
		Cell: func(n *apps.NodeImage) any { return n.Status.Desired }},
	table.Column[*apps.NodeImage]{Name: "Pulling", Type: "integer", Description: "Number of image pull task active",
		Cell: func(n *apps.NodeImage) any { return n.Status.Pulling }},
	table.Column[*apps.NodeImage]{Name: "Succeed", Type: "integer", Description: "Number of image pull task succeeded",
		Cell: func(n *apps.NodeImage) any { return n.Status.Succeeded }},
	table.Column[*apps.NodeImage]{Name: "Failed", Type: "integer", Description: "Number of image pull tasks failed",
		Cell: func(n *apps.NodeImage) any { return n.Status.Failed }},
)
