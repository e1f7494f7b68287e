// Package nodeimage is the storage of the cluster-scoped nodeimages resource (one per node, named
// after it) and its status subresource.
package nodeimage

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// NewStorage returns the storage of nodeimages and nodeimages/status.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (strategy.Storage[*apps.NodeImage], error) {
	return strategy.NewStorage(scheme, optsGetter, kind)
}

var kind = strategy.Kind[*apps.NodeImage]{
	Resource:      "nodeimages",
	ClusterScoped: true,
	Validation:    strategy.Validate(validation.ValidateNodeImage, validation.ValidateNodeImageUpdate, validation.ValidateNodeImageStatusUpdate),
	Table:         tableConvertor,
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
