package statefulset

import (
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
)

// kind describes Advanced StatefulSets to the shared strategy.
var kind = strategy.Kind[*apps.StatefulSet]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1beta1.SchemeGroupVersion.String(), v1alpha1.SchemeGroupVersion.String()},
	New:                  func() *apps.StatefulSet { return &apps.StatefulSet{} },
	Spec:                 func(o *apps.StatefulSet) any { return &o.Spec },
	Status:               func(o *apps.StatefulSet) any { return &o.Status },
	CopySpec:             func(dst, src *apps.StatefulSet) { dst.Spec = src.Spec },
	CopyStatus:           func(dst, src *apps.StatefulSet) { dst.Status = src.Status },
	Validate:             validation.ValidateStatefulSet,
	ValidateUpdate:       validation.ValidateStatefulSetUpdate,
	ValidateStatusUpdate: validation.ValidateStatefulSetStatusUpdate,
}
