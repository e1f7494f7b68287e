// Package statefulset describes OpenKruise's Advanced StatefulSet to the shared storage
// (strategy.NewStorage): the statefulsets resource, served at v1beta1 and v1alpha1 from one store,
// and its status and scale subresources.
package statefulset

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Kind describes the StatefulSet: its names, validation, printed columns and replicas.
var Kind = strategy.Kind[*apps.StatefulSet]{
	Resource: "statefulsets",
	// `kubectl get asts` and `kubectl get all` list Advanced StatefulSets, as with OpenKruise.
	// OpenKruise also claims "sts", which kubectl resolves to apps/v1 StatefulSets anyway; it is
	// left to them.
	ShortNames: []string{"asts"},
	Categories: []string{"all"},
	Validation: strategy.Validate(validation.ValidateStatefulSet, validation.ValidateStatefulSetUpdate, validation.ValidateStatefulSetStatusUpdate),
	// The columns of OpenKruise's CRD.
	Table: table.New(
		table.Int("Desired", "The desired number of pods.", desired),
		table.Int("Current", "The number of currently all pods.", func(s *apps.StatefulSet) int32 { return s.Status.Replicas }),
		table.Int("Updated", "The number of pods updated.", func(s *apps.StatefulSet) int32 { return s.Status.UpdatedReplicas }),
		table.Int("Ready", "The number of pods ready.", func(s *apps.StatefulSet) int32 { return s.Status.ReadyReplicas }),
		table.Containers(podTemplate),
		table.Images(podTemplate),
	),
	Scale: &strategy.Replicas[*apps.StatefulSet]{
		Desired:    desired,
		SetDesired: func(s *apps.StatefulSet, n int32) { s.Spec.Replicas = &n },
		Current:    func(s *apps.StatefulSet) int32 { return s.Status.Replicas },
		Selector:   func(s *apps.StatefulSet) string { return s.Status.LabelSelector },
	},
}

func podTemplate(s *apps.StatefulSet) *corev1.PodSpec { return &s.Spec.Template.Spec }

func desired(s *apps.StatefulSet) int32 { return ptr.Deref(s.Spec.Replicas, 0) }
