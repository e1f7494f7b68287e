// Package imagelistpulljob describes the ImageListPullJob to the shared storage
// (strategy.NewStorage): the imagelistpulljobs resource and its status subresource.
package imagelistpulljob

import (
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Kind describes the ImageListPullJob: its names, validation and printed columns.
var Kind = strategy.Kind[*apps.ImageListPullJob]{
	Resource:   "imagelistpulljobs",
	Validation: strategy.Validate(validation.ValidateImageListPullJob, validation.ValidateImageListPullJobUpdate, validation.ValidateImageListPullJobStatusUpdate),
	// Table prints OpenKruise's printer columns: TOTAL SUCCEEDED COMPLETED AGE.
	Table: table.New(
		table.Int("Total", "Number of image pull job", func(j *apps.ImageListPullJob) int32 { return j.Status.Desired }),
		table.Int("Succeeded", "Number of image pull job succeeded", func(j *apps.ImageListPullJob) int32 { return j.Status.Succeeded }),
		table.Int("Completed", "Number of ImagePullJobs which are finished", func(j *apps.ImageListPullJob) int32 { return j.Status.Completed }),
	),
}
