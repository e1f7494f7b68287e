// Package sidecarset is the storage of the cluster-scoped sidecarsets resource and its status and
// inject subresources.
package sidecarset

import (
	"math/rand/v2"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
)

// Storage holds the REST storage of sidecarsets and its subresources.
type Storage struct {
	strategy.Storage[*apps.SidecarSet]
	Inject *InjectREST
}

// NewStorage returns the storage of sidecarsets, sidecarsets/status and sidecarsets/inject.
// namespaces reads the labels of a Pod's namespace for inject, revisions the SidecarSet's
// ControllerRevisions; both nil in standalone mode.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter, namespaces corev1client.NamespacesGetter,
	revisions sidecarcontrol.RevisionLister) (Storage, error) {
	s, err := strategy.NewStorage(scheme, optsGetter, Kind)
	if err != nil {
		return Storage{}, err
	}
	inject := &InjectREST{sidecarSets: s.Main, namespaces: namespaces, revisions: revisions, convertor: scheme,
		now: time.Now, random: rand.Float64}
	return Storage{Storage: s, Inject: inject}, nil
}

// Kind describes the SidecarSet: its names, validation and printed columns.
var Kind = strategy.Kind[*apps.SidecarSet]{
	Resource:      "sidecarsets",
	ClusterScoped: true,
	Validation:    strategy.Validate(validation.ValidateSidecarSet, validation.ValidateSidecarSetUpdate, validation.ValidateSidecarSetStatusUpdate),
	Table:         tableConvertor,
}

var tableConvertor = table.New(
	table.Int("Matched", "The number of pods matched.", func(s *apps.SidecarSet) int32 { return s.Status.MatchedPods }),
	table.Int("Updated", "The number of pods matched and updated.", func(s *apps.SidecarSet) int32 { return s.Status.UpdatedPods }),
	table.Int("Ready", "The number of pods matched and ready.", func(s *apps.SidecarSet) int32 { return s.Status.ReadyPods }),
)
