package cloneset

import (
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
)

// kind describes CloneSets to the shared strategy.
var kind = strategy.Kind[*apps.CloneSet]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String(), v1beta1.SchemeGroupVersion.String()},
	New:                  func() *apps.CloneSet { return &apps.CloneSet{} },
	Spec:                 func(o *apps.CloneSet) any { return &o.Spec },
	Status:               func(o *apps.CloneSet) any { return &o.Status },
	CopySpec:             func(dst, src *apps.CloneSet) { dst.Spec = src.Spec },
	CopyStatus:           func(dst, src *apps.CloneSet) { dst.Status = src.Status },
	Validate:             validation.ValidateCloneSet,
	ValidateUpdate:       validation.ValidateCloneSetUpdate,
	ValidateStatusUpdate: validation.ValidateCloneSetStatusUpdate,
	ErrorPaths:           errorPaths,
}
