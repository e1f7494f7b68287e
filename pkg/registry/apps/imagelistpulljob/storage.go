// Package imagelistpulljob is the storage of the imagelistpulljobs resource and its status
// subresource.
package imagelistpulljob

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// NewStorage returns the storage of imagelistpulljobs and imagelistpulljobs/status.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (strategy.Storage[*apps.ImageListPullJob], error) {
	return strategy.NewStorage(scheme, optsGetter, kind)
}

var kind = strategy.Kind[*apps.ImageListPullJob]{
	Resource:   "imagelistpulljobs",
	Validation: strategy.Validate(validation.ValidateImageListPullJob, validation.ValidateImageListPullJobUpdate, validation.ValidateImageListPullJobStatusUpdate),
	Table:      tableConvertor,
}

// tableConvertor prints OpenKruise's printer columns: TOTAL SUCCEEDED COMPLETED AGE.
var tableConvertor = table.New(
	table.Column[*apps.ImageListPullJob]{Name: "Total", Type: "integer", Description: "Number of image pull job",
		Cell: func(j *apps.ImageListPullJob) any { return j.Status.Desired }},
	table.Column[*apps.ImageListPullJob]{Name: "Succeeded", Type: "integer", Description: "Number of image pull job succeeded",
		Cell: func(j *apps.ImageListPullJob) any { return j.Status.Succeeded }},
	table.Column[*apps.ImageListPullJob]{Name: "Completed", Type: "integer", Description: "Number of ImagePullJobs which are finished",
		Cell: func(j *apps.ImageListPullJob) any { return j.Status.Completed }},
)
