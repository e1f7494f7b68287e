// Package cloneset is the storage of the clonesets resource and its status and scale subresources.
package cloneset

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// NewStorage returns the storage of clonesets, clonesets/status and clonesets/scale.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (strategy.Storage[*apps.CloneSet], error) {
	return strategy.NewStorage(scheme, optsGetter, kind)
}

var kind = strategy.Kind[*apps.CloneSet]{
	Resource: "clonesets",
	// `kubectl get clone` and `kubectl get all` list CloneSets, as with OpenKruise.
	ShortNames: []string{"clone"},
	Categories: []string{"all"},
	Validation: strategy.Validate(validation.ValidateCloneSet, validation.ValidateCloneSetUpdate, validation.ValidateCloneSetStatusUpdate),
	ErrorPaths: errorPaths,
	Table:      tableConvertor,
	Scale: &strategy.Replicas[*apps.CloneSet]{
		Desired:    desired,
		SetDesired: func(c *apps.CloneSet, n int32) { c.Spec.Replicas = &n },
		Current:    func(c *apps.CloneSet) int32 { return c.Status.Replicas },
		Selector:   func(c *apps.CloneSet) string { return c.Status.LabelSelector },
	},
}

var tableConvertor = table.New(
	table.Column[*apps.CloneSet]{Name: "Desired", Type: "integer", Description: "The desired number of pods.",
		Cell: func(c *apps.CloneSet) any { return desired(c) }},
	table.Column[*apps.CloneSet]{Name: "Updated", Type: "integer", Description: "The number of pods updated.",
		Cell: func(c *apps.CloneSet) any { return c.Status.UpdatedReplicas }},
	table.Column[*apps.CloneSet]{Name: "Updated_Ready", Type: "integer", Description: "The number of pods updated and ready.",
		Cell: func(c *apps.CloneSet) any { return c.Status.UpdatedReadyReplicas }},
	table.Column[*apps.CloneSet]{Name: "Ready", Type: "integer", Description: "The number of pods ready.",
		Cell: func(c *apps.CloneSet) any { return c.Status.ReadyReplicas }},
	table.Column[*apps.CloneSet]{Name: "Total", Type: "integer", Description: "The number of pods the CloneSet owns.",
		Cell: func(c *apps.CloneSet) any { return c.Status.Replicas }},
	table.Containers(podTemplate),
	table.Images(podTemplate),
	table.Column[*apps.CloneSet]{Name: "Selector", Type: "string", Priority: 1, Description: "The label selector of the pods.",
		Cell: func(c *apps.CloneSet) any { return c.Status.LabelSelector }},
)

func podTemplate(c *apps.CloneSet) *corev1.PodSpec { return &c.Spec.Template.Spec }

func desired(c *apps.CloneSet) int32 { return ptr.Deref(c.Spec.Replicas, 0) }
