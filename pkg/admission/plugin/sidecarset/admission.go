// Package sidecarset is the built-in admission plugin of SidecarSets. On CREATE and UPDATE it
// writes the annotations kruise.io/sidecarset-hash and kruise.io/sidecarset-hash-without-image
// (pkg/sidecarcontrol.Hash, OpenKruise's values: a Pod is upgraded in place only when its injected
// hash-without-image equals the SidecarSet's), and refuses a SidecarSet that clashes with another
// one that may select the same Pods (same container or init container name, same volume name with
// other content, an annotation both patch), as OpenKruise's SidecarSet webhook does — so a clash is
// refused when the SidecarSet is written, not discovered when a Pod is created.
package sidecarset

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/inplace-dev/inplace/pkg/admission/appsinitializer"
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	informers "github.com/inplace-dev/inplace/pkg/generated/informers/externalversions"
	listers "github.com/inplace-dev/inplace/pkg/generated/listers/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
)

// PluginName is the plugin's name in --enable-admission-plugins and --disable-admission-plugins.
const PluginName = "SidecarSet"

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin admits SidecarSets.
type Plugin struct {
	*admission.Handler
	sidecarSets listers.SidecarSetLister
}

var (
	_ admission.MutationInterface                 = &Plugin{}
	_ admission.ValidationInterface               = &Plugin{}
	_ appsinitializer.WantsInplaceInformerFactory = &Plugin{}
)

// New returns the plugin; it acts on CREATE and UPDATE.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetInplaceInformerFactory gives the plugin the SidecarSets it checks a new one against.
func (p *Plugin) SetInplaceInformerFactory(f informers.SharedInformerFactory) {
	informer := f.Apps().V1alpha1().SidecarSets()
	p.sidecarSets = informer.Lister()
	p.SetReadyFunc(informer.Informer().HasSynced)
}

// ValidateInitialization fails when the plugin did not get its lister.
func (p *Plugin) ValidateInitialization() error {
	if p.sidecarSets == nil {
		return fmt.Errorf("%s admission plugin: no SidecarSet informer", PluginName)
	}
	return nil
}

func shouldIgnore(a admission.Attributes) bool {
	return a.GetResource().GroupResource() != apps.Resource("sidecarsets") || a.GetSubresource() != ""
}

// versioned is the SidecarSet being written, as its v1alpha1 wire form (what OpenKruise hashes).
func versioned(a admission.Attributes, o admission.ObjectInterfaces) (*apps.SidecarSet, *v1alpha1.SidecarSet, error) {
	internal, ok := a.GetObject().(*apps.SidecarSet)
	if !ok {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("expected a SidecarSet, got %T", a.GetObject()))
	}
	out := &v1alpha1.SidecarSet{}
	if err := o.GetObjectConvertor().Convert(internal, out, nil); err != nil {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("converting the SidecarSet to v1alpha1: %w", err))
	}
	return internal, out, nil
}

// Admit writes the hash annotations.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if shouldIgnore(a) {
		return nil
	}
	internal, wire, err := versioned(a, o)
	if err != nil {
		return err
	}
	hash, err := sidecarcontrol.Hash(wire)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("hashing the SidecarSet's containers: %w", err))
	}
	withoutImage, err := sidecarcontrol.HashWithoutImage(wire)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("hashing the SidecarSet's containers: %w", err))
	}
	if internal.Annotations == nil {
		internal.Annotations = map[string]string{}
	}
	internal.Annotations[v1alpha1.SidecarSetHashAnnotation] = hash
	internal.Annotations[v1alpha1.SidecarSetHashWithoutImageAnnotation] = withoutImage
	return p.Validate(ctx, a, o)
}

// Validate refuses a SidecarSet that clashes with another one.
func (p *Plugin) Validate(_ context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if shouldIgnore(a) {
		return nil
	}
	internal, wire, err := versioned(a, o)
	if err != nil {
		return err
	}
	others, err := p.sidecarSets.List(labels.Everything())
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("listing SidecarSets: %w", err))
	}
	if errs := Clashes(wire, others); len(errs) > 0 {
		return apierrors.NewInvalid(apps.Kind("SidecarSet"), internal.Name, errs)
	}
	return nil
}

// Clashes lists, with field paths, how s clashes with the other SidecarSets (itself excluded).
func Clashes(s *v1alpha1.SidecarSet, others []*v1alpha1.SidecarSet) field.ErrorList {
	var errs field.ErrorList
	for _, other := range others {
		if other.Name == s.Name {
			continue
		}
		for _, why := range sidecarcontrol.Conflicts(s, other) {
			errs = append(errs, field.Forbidden(field.NewPath("spec"), fmt.Sprintf("may select the same Pods as SidecarSet %s: %s", other.Name, why)))
		}
	}
	return errs
}
