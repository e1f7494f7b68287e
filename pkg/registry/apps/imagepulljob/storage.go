// Package imagepulljob describes the ImagePullJob to the shared storage (strategy.NewStorage):
// the imagepulljobs resource and its status subresource.
package imagepulljob

import (
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Kind describes the ImagePullJob: its names, validation and printed columns.
var Kind = strategy.Kind[*apps.ImagePullJob]{
	Resource:   "imagepulljobs",
	Validation: strategy.Validate(validation.ValidateImagePullJob, validation.ValidateImagePullJobUpdate, validation.ValidateImagePullJobStatusUpdate),
	// Table prints OpenKruise's printer columns: TOTAL ACTIVE SUCCEED FAILED AGE, and MESSAGE
	// at v1alpha1 (OpenKruise v1.9 dropped it from v1beta1).
	Table: table.New(
		table.Int("Total", "Number of all nodes matched by this job", func(j *apps.ImagePullJob) int32 { return j.Status.Desired }),
		table.Int("Active", "Number of image pull task active", func(j *apps.ImagePullJob) int32 { return j.Status.Active }),
		table.Int("Succeed", "Number of image pull task succeeded", func(j *apps.ImagePullJob) int32 { return j.Status.Succeeded }),
		table.Int("Failed", "Number of image pull tasks failed", func(j *apps.ImagePullJob) int32 { return j.Status.Failed }),
		table.Column[*apps.ImagePullJob]{Name: "Message", Type: "string", Description: "Summary of status when job is failed", AfterAge: true,
			Versions: []string{"v1alpha1"},
			Cell:     func(j *apps.ImagePullJob) any { return j.Status.Message }},
	),
}
