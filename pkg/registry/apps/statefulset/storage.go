// Package statefulset is the storage of the statefulsets resource (OpenKruise's Advanced
// StatefulSet, served at v1beta1 and v1alpha1 from one store) and its status and scale
// subresources.
package statefulset

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

// NewStorage returns the storage of statefulsets, statefulsets/status and statefulsets/scale.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (strategy.Storage[*apps.StatefulSet], error) {
	return strategy.NewStorage(scheme, optsGetter, kind)
}

var kind = strategy.Kind[*apps.StatefulSet]{
	Resource: "statefulsets",
	// `kubectl get asts` and `kubectl get all` list Advanced StatefulSets, as with OpenKruise.
	// OpenKruise also claims "sts", which kubectl resolves to apps/v1 StatefulSets anyway; it is
	// left to them.
	ShortNames: []string{"asts"},
	Categories: []string{"all"},
	Validation: strategy.Validate(validation.ValidateStatefulSet, validation.ValidateStatefulSetUpdate, validation.ValidateStatefulSetStatusUpdate),
	Table:      tableConvertor,
	Scale: &strategy.Replicas[*apps.StatefulSet]{
		Desired:    desired,
		SetDesired: func(s *apps.StatefulSet, n int32) { s.Spec.Replicas = &n },
		Current:    func(s *apps.StatefulSet) int32 { return s.Status.Replicas },
		Selector:   func(s *apps.StatefulSet) string { return s.Status.LabelSelector },
	},
}

// The columns of OpenKruise's CRD.
var tableConvertor = table.New(
	table.Column[*apps.StatefulSet]{Name: "Desired", Type: "integer", Description: "The desired number of pods.",
		Cell: func(s *apps.StatefulSet) any { return desired(s) }},
	table.Column[*apps.StatefulSet]{Name: "Current", Type: "integer", Description: "The number of currently all pods.",
		Cell: func(s *apps.StatefulSet) any { return s.Status.Replicas }},
	table.Column[*apps.StatefulSet]{Name: "Updated", Type: "integer", Description: "The number of pods updated.",
		Cell: func(s *apps.StatefulSet) any { return s.Status.UpdatedReplicas }},
	table.Column[*apps.StatefulSet]{Name: "Ready", Type: "integer", Description: "The number of pods ready.",
		Cell: func(s *apps.StatefulSet) any { return s.Status.ReadyReplicas }},
	table.Containers(podTemplate),
	table.Images(podTemplate),
)

func podTemplate(s *apps.StatefulSet) *corev1.PodSpec { return &s.Spec.Template.Spec }

func desired(s *apps.StatefulSet) int32 { return ptr.Deref(s.Spec.Replicas, 0) }
