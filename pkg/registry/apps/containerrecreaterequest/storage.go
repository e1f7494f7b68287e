// Package containerrecreaterequest describes the ContainerRecreateRequest to the shared storage
// (strategy.NewStorage): the containerrecreaterequests resource and its status subresource.
package containerrecreaterequest

import (
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Kind describes the ContainerRecreateRequest: its names, validation and printed columns.
var Kind = strategy.Kind[*apps.ContainerRecreateRequest]{
	Resource: "containerrecreaterequests",
	// `kubectl get crr` lists them, as with OpenKruise.
	ShortNames: []string{"crr"},
	Validation: strategy.Validate(validation.ValidateContainerRecreateRequest,
		validation.ValidateContainerRecreateRequestUpdate, validation.ValidateContainerRecreateRequestStatusUpdate),
	Table: table.New(
		table.Column[*apps.ContainerRecreateRequest]{Name: "Phase", Type: "string", Description: "Phase of this ContainerRecreateRequest.",
			Cell: func(c *apps.ContainerRecreateRequest) any { return string(c.Status.Phase) }},
		table.Column[*apps.ContainerRecreateRequest]{Name: "Pod", Type: "string", Description: "Pod name of this ContainerRecreateRequest.",
			Cell: func(c *apps.ContainerRecreateRequest) any { return c.Spec.PodName }},
		table.Column[*apps.ContainerRecreateRequest]{Name: "Node", Type: "string", Description: "Node of the Pod of this ContainerRecreateRequest.",
			Cell: func(c *apps.ContainerRecreateRequest) any {
				return c.Labels[v1alpha1.ContainerRecreateRequestNodeNameKey]
			}},
	),
}
