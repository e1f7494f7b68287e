package containerrecreaterequest

import (
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1beta1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
)

// kind describes ContainerRecreateRequests to the shared strategy.
var kind = strategy.Kind[*apps.ContainerRecreateRequest]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String(), v1beta1.SchemeGroupVersion.String()},
	New:                  func() *apps.ContainerRecreateRequest { return &apps.ContainerRecreateRequest{} },
	Spec:                 func(o *apps.ContainerRecreateRequest) any { return &o.Spec },
	Status:               func(o *apps.ContainerRecreateRequest) any { return &o.Status },
	CopySpec:             func(dst, src *apps.ContainerRecreateRequest) { dst.Spec = src.Spec },
	CopyStatus:           func(dst, src *apps.ContainerRecreateRequest) { dst.Status = src.Status },
	Validate:             validation.ValidateContainerRecreateRequest,
	ValidateUpdate:       validation.ValidateContainerRecreateRequestUpdate,
	ValidateStatusUpdate: validation.ValidateContainerRecreateRequestStatusUpdate,
}
