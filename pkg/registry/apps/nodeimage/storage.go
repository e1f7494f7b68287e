// Package nodeimage describes the NodeImage to the shared storage (strategy.NewStorage): the
// cluster-scoped nodeimages resource (one per node, named after it) and its status subresource.
package nodeimage

import (
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Kind describes the NodeImage: its names, validation and printed columns.
var Kind = strategy.Kind[*apps.NodeImage]{
	Resource:      "nodeimages",
	ClusterScoped: true,
	Validation:    strategy.Validate(validation.ValidateNodeImage, validation.ValidateNodeImageUpdate, validation.ValidateNodeImageStatusUpdate),
	// Table prints OpenKruise's printer columns: DESIRED PULLING SUCCEED FAILED AGE.
	Table: table.New(
		table.Int("Desired", "Number of all images on this node", func(n *apps.NodeImage) int32 { return n.Status.Desired }),
		table.Int("Pulling", "Number of image pull task active", func(n *apps.NodeImage) int32 { return n.Status.Pulling }),
		table.Int("Succeed", "Number of image pull task succeeded", func(n *apps.NodeImage) int32 { return n.Status.Succeeded }),
		table.Int("Failed", "Number of image pull tasks failed", func(n *apps.NodeImage) int32 { return n.Status.Failed }),
	),
}
