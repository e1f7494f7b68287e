// Package cloneset describes the CloneSet to the shared storage (strategy.NewStorage): the
// clonesets resource and its status and scale subresources, served at v1alpha1 and v1beta1.
package cloneset

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Kind describes the CloneSet: its names, validation, printed columns and replicas.
var Kind = strategy.Kind[*apps.CloneSet]{
	Resource: "clonesets",
	// `kubectl get clone` and `kubectl get all` list CloneSets, as with OpenKruise.
	ShortNames: []string{"clone"},
	Categories: []string{"all"},
	Validation: strategy.Validate(validation.ValidateCloneSet, validation.ValidateCloneSetUpdate, validation.ValidateCloneSetStatusUpdate),
	ErrorPaths: errorPaths,
	Table: table.New(
		table.Int("Desired", "The desired number of pods.", desired),
		table.Int("Updated", "The number of pods updated.", func(c *apps.CloneSet) int32 { return c.Status.UpdatedReplicas }),
		table.Int("Updated_Ready", "The number of pods updated and ready.", func(c *apps.CloneSet) int32 { return c.Status.UpdatedReadyReplicas }),
		table.Int("Ready", "The number of pods ready.", func(c *apps.CloneSet) int32 { return c.Status.ReadyReplicas }),
		table.Int("Total", "The number of pods the CloneSet owns.", func(c *apps.CloneSet) int32 { return c.Status.Replicas }),
		table.Containers(podTemplate),
		table.Images(podTemplate),
		table.Column[*apps.CloneSet]{Name: "Selector", Type: "string", Priority: 1, Description: "The label selector of the pods.",
			Cell: func(c *apps.CloneSet) any { return c.Status.LabelSelector }},
	),
	Scale: &strategy.Replicas[*apps.CloneSet]{
		Desired:    desired,
		SetDesired: func(c *apps.CloneSet, n int32) { c.Spec.Replicas = &n },
		Current:    func(c *apps.CloneSet) int32 { return c.Status.Replicas },
		Selector:   func(c *apps.CloneSet) string { return c.Status.LabelSelector },
	},
}

func podTemplate(c *apps.CloneSet) *corev1.PodSpec { return &c.Spec.Template.Spec }

func desired(c *apps.CloneSet) int32 { return ptr.Deref(c.Spec.Replicas, 0) }
