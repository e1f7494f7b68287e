// Package imagelistpulljob is the storage of the imagelistpulljobs resource and its status
// subresource.
package imagelistpulljob

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

// Storage holds the REST storage of imagelistpulljobs and its status.
type Storage struct {
	ImageListPullJob *genericregistry.Store
	Status           *strategy.StatusREST
}

// NewStorage returns the storage of imagelistpulljobs and imagelistpulljobs/status.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	store, status, err := strategy.NewStores(scheme, optsGetter, kind, strategy.Resource[*apps.ImageListPullJob]{
		Plural:   apps.Resource("imagelistpulljobs"),
		Singular: apps.Resource("imagelistpulljob"),
		NewList:  func() runtime.Object { return &apps.ImageListPullJobList{} },
		Table:    tableConvertor,
	})
	if err != nil {
		return Storage{}, err
	}
	return Storage{ImageListPullJob: store, Status: status}, nil
}

// kind describes ImageListPullJobs to the shared strategy.
var kind = strategy.Kind[*apps.ImageListPullJob]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	New:                  func() *apps.ImageListPullJob { return &apps.ImageListPullJob{} },
	Spec:                 func(o *apps.ImageListPullJob) any { return &o.Spec },
	Status:               func(o *apps.ImageListPullJob) any { return &o.Status },
	CopySpec:             func(dst, src *apps.ImageListPullJob) { dst.Spec = src.Spec },
	CopyStatus:           func(dst, src *apps.ImageListPullJob) { dst.Status = src.Status },
	Validate:             validation.ValidateImageListPullJob,
	ValidateUpdate:       validation.ValidateImageListPullJobUpdate,
	ValidateStatusUpdate: validation.ValidateImageListPullJobStatusUpdate,
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
