// Package daemonset is the storage of the daemonsets resource (OpenKruise's Advanced DaemonSet)
// and its status subresource.
package daemonset

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// NewStorage returns the storage of daemonsets and daemonsets/status.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (strategy.Storage[*apps.DaemonSet], error) {
	return strategy.NewStorage(scheme, optsGetter, kind)
}

var kind = strategy.Kind[*apps.DaemonSet]{
	Resource: "daemonsets",
	// `kubectl get ads` (and daemon) and `kubectl get all` list Advanced DaemonSets, as with
	// OpenKruise.
	ShortNames: []string{"daemon", "ads"},
	Categories: []string{"all"},
	Validation: strategy.Validate(validation.ValidateDaemonSet, validation.ValidateDaemonSetUpdate, validation.ValidateDaemonSetStatusUpdate),
	Table:      tableConvertor,
}

// The columns of OpenKruise's CRD.
var tableConvertor = table.New(
	table.Column[*apps.DaemonSet]{Name: "Desired", Type: "integer", Description: "The desired number of pods.",
		Cell: func(d *apps.DaemonSet) any { return d.Status.DesiredNumberScheduled }},
	table.Column[*apps.DaemonSet]{Name: "Current", Type: "integer", Description: "The current number of pods.",
		Cell: func(d *apps.DaemonSet) any { return d.Status.CurrentNumberScheduled }},
	table.Column[*apps.DaemonSet]{Name: "Ready", Type: "integer", Description: "The ready number of pods.",
		Cell: func(d *apps.DaemonSet) any { return d.Status.NumberReady }},
	table.Column[*apps.DaemonSet]{Name: "Up-to-date", Type: "integer", Description: "The updated number of pods.",
		Cell: func(d *apps.DaemonSet) any { return d.Status.UpdatedNumberScheduled }},
	table.Column[*apps.DaemonSet]{Name: "Available", Type: "integer", Description: "The available number of pods.",
		Cell: func(d *apps.DaemonSet) any { return d.Status.NumberAvailable }},
	table.Containers(podTemplate),
	table.Images(podTemplate),
)

func podTemplate(d *apps.DaemonSet) *corev1.PodSpec { return &d.Spec.Template.Spec }
