package sidecarset

import (
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
)

// kind describes SidecarSets (cluster-scoped) to the shared strategy.
var kind = strategy.Kind[*apps.SidecarSet]{
	NamespaceScoped:      false,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	New:                  func() *apps.SidecarSet { return &apps.SidecarSet{} },
	Spec:                 func(o *apps.SidecarSet) any { return &o.Spec },
	Status:               func(o *apps.SidecarSet) any { return &o.Status },
	CopySpec:             func(dst, src *apps.SidecarSet) { dst.Spec = src.Spec },
	CopyStatus:           func(dst, src *apps.SidecarSet) { dst.Status = src.Status },
	Validate:             validation.ValidateSidecarSet,
	ValidateUpdate:       validation.ValidateSidecarSetUpdate,
	ValidateStatusUpdate: validation.ValidateSidecarSetStatusUpdate,
}
