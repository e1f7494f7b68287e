// Package daemonset is the storage of the daemonsets resource (OpenKruise's Advanced DaemonSet)
// and its status subresource.
package daemonset

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
	"github.com/inplace-dev/inplace/pkg/registry/apps/strategy"
	"github.com/inplace-dev/inplace/pkg/registry/apps/table"
)

// Storage holds the REST storage of daemonsets and its status.
type Storage struct {
	DaemonSet *REST
	Status    *strategy.StatusREST
}

// REST is the daemonsets resource.
type REST struct {
	*genericregistry.Store
}

var (
	_ rest.ShortNamesProvider = &REST{}
	_ rest.CategoriesProvider = &REST{}
)

// ShortNames lets `kubectl get ads` (and daemon) work, as with OpenKruise.
func (*REST) ShortNames() []string { return []string{"daemon", "ads"} }

// Categories puts Advanced DaemonSets in `kubectl get all`.
func (*REST) Categories() []string { return []string{"all"} }

// NewStorage returns the storage of daemonsets and daemonsets/status.
func NewStorage(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (Storage, error) {
	store, status, err := strategy.NewStores(scheme, optsGetter, kind, strategy.Resource[*apps.DaemonSet]{
		Plural:   apps.Resource("daemonsets"),
		Singular: apps.Resource("daemonset"),
		NewList:  func() runtime.Object { return &apps.DaemonSetList{} },
		Table:    tableConvertor,
	})
	if err != nil {
		return Storage{}, err
	}
	return Storage{DaemonSet: &REST{store}, Status: status}, nil
}

// kind describes Advanced DaemonSets to the shared strategy.
var kind = strategy.Kind[*apps.DaemonSet]{
	NamespaceScoped:      true,
	APIVersions:          []string{v1alpha1.SchemeGroupVersion.String()},
	New:                  func() *apps.DaemonSet { return &apps.DaemonSet{} },
	Spec:                 func(o *apps.DaemonSet) any { return &o.Spec },
	Status:               func(o *apps.DaemonSet) any { return &o.Status },
	CopySpec:             func(dst, src *apps.DaemonSet) { dst.Spec = src.Spec },
	CopyStatus:           func(dst, src *apps.DaemonSet) { dst.Status = src.Status },
	Validate:             validation.ValidateDaemonSet,
	ValidateUpdate:       validation.ValidateDaemonSetUpdate,
	ValidateStatusUpdate: validation.ValidateDaemonSetStatusUpdate,
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
	table.Column[*apps.DaemonSet]{Name: "Containers", Type: "string", Priority: 1, Description: "The containers of the pod template.",
		Cell: func(d *apps.DaemonSet) any { return table.ContainerNames(&d.Spec.Template.Spec) }},
	table.Column[*apps.DaemonSet]{Name: "Images", Type: "string", Priority: 1, Description: "The images of the pod template.",
		Cell: func(d *apps.DaemonSet) any { return table.ContainerImages(&d.Spec.Template.Spec) }},
)
