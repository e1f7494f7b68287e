// Package daemonset describes OpenKruise's Advanced DaemonSet to the shared storage
// (strategy.NewStorage): the daemonsets resource and its status subresource.
package daemonset

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Kind describes the DaemonSet: its names, validation and printed columns.
var Kind = strategy.Kind[*apps.DaemonSet]{
	Resource: "daemonsets",
	// `kubectl get ads` (and daemon) and `kubectl get all` list Advanced DaemonSets, as with
	// OpenKruise.
	ShortNames: []string{"daemon", "ads"},
	Categories: []string{"all"},
	Validation: strategy.Validate(validation.ValidateDaemonSet, validation.ValidateDaemonSetUpdate, validation.ValidateDaemonSetStatusUpdate),
	// The columns of OpenKruise's CRD.
	Table: table.New(
		table.Int("Desired", "The desired number of pods.", func(d *apps.DaemonSet) int32 { return d.Status.DesiredNumberScheduled }),
		table.Int("Current", "The current number of pods.", func(d *apps.DaemonSet) int32 { return d.Status.CurrentNumberScheduled }),
		table.Int("Ready", "The ready number of pods.", func(d *apps.DaemonSet) int32 { return d.Status.NumberReady }),
		table.Int("Up-to-date", "The updated number of pods.", func(d *apps.DaemonSet) int32 { return d.Status.UpdatedNumberScheduled }),
		table.Int("Available", "The available number of pods.", func(d *apps.DaemonSet) int32 { return d.Status.NumberAvailable }),
		table.Containers(podTemplate),
		table.Images(podTemplate),
	),
}

func podTemplate(d *apps.DaemonSet) *corev1.PodSpec { return &d.Spec.Template.Spec }
