// Package imagepulljob is the storage of the imagepulljobs resource and its status subresource.
package imagepulljob

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// NewStorage returns the storage of imagepulljobs and imagepulljobs/status.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (strategy.Storage[*apps.ImagePullJob], error) {
	return strategy.NewStorage(scheme, optsGetter, kind)
}

var kind = strategy.Kind[*apps.ImagePullJob]{
	Resource:   "imagepulljobs",
	Validation: strategy.Validate(validation.ValidateImagePullJob, validation.ValidateImagePullJobUpdate, validation.ValidateImagePullJobStatusUpdate),
	Table:      tableConvertor,
}

// tableConvertor prints OpenKruise's printer columns: TOTAL ACTIVE SUCCEED FAILED AGE, and MESSAGE
// at v1alpha1 (OpenKruise v1.9 dropped it from v1beta1).
var tableConvertor = table.New(
	table.Column[*apps.ImagePullJob]{Name: "Total", Type: "integer", Description: "Number of all nodes matched by this job",
		Cell: func(j *apps.ImagePullJob) any { return j.Status.Desired }},
	table.Column[*apps.ImagePullJob]{Name: "Active", Type: "integer", Description: "Number of image pull task active",
		Cell: func(j *apps.ImagePullJob) any { return j.Status.Active }},
	table.Column[*apps.ImagePullJob]{Name: "Succeed", Type: "integer", Description: "Number of image pull task succeeded",
		Cell: func(j *apps.ImagePullJob) any { return j.Status.Succeeded }},
	table.Column[*apps.ImagePullJob]{Name: "Failed", Type: "integer", Description: "Number of image pull tasks failed",
		Cell: func(j *apps.ImagePullJob) any { return j.Status.Failed }},
	table.Column[*apps.ImagePullJob]{Name: "Message", Type: "string", Description: "Summary of status when job is failed", AfterAge: true,
		Versions: []string{"v1alpha1"},
		Cell:     func(j *apps.ImagePullJob) any { return j.Status.Message }},
)
