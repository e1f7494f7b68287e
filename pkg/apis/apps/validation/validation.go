// Package validation checks apps.kruise.io objects (internal versions) before they are stored.
//
// The rules follow OpenKruise's admission webhooks (what they refuse, this package refuses), with a
// compact Pod template validation of our own in place of Kubernetes' internal core validation.
// Every error carries the path of the field at fault. One file per kind (cloneset.go,
// sidecarset.go, containerrecreaterequest.go, ...), inplaceupdate.go for the pods/inplaceupdate
// body, updatestrategy.go for the priority and scatter strategies the workloads share,
// podtemplate.go for Pod templates and containers, helpers.go for the small shared checks.
package validation

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// MinCRRActiveDeadlineSeconds is the smallest activeDeadlineSeconds a ContainerRecreateRequest may
// ask for (OpenKruise's limit).
const MinCRRActiveDeadlineSeconds = 3

var (
	metadataPath = field.NewPath("metadata")
	specPath     = field.NewPath("spec")
	statusPath   = field.NewPath("status")
)
