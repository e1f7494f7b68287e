// Package sidecarset is the built-in admission plugin of SidecarSets. On CREATE and UPDATE it
// writes the annotations kruise.io/sidecarset-hash and kruise.io/sidecarset-hash-without-image
// (pkg/sidecarcontrol.Hash, OpenKruise's values: a Pod is upgraded in place only when its injected
// hash-without-image equals the SidecarSet's), and refuses a SidecarSet that clashes with another
// one that may select the same Pods (same container or init container name, same volume name with
// other content, an annotation both patch), as OpenKruise's SidecarSet webhook does — so a clash is
// refused when the SidecarSet is written, not discovered when a Pod is created. A canary SidecarSet
// (annotations apps.kruise.io/sidecarset-canary and apps.kruise.io/sidecarset-base, OpenKruise
// master) must name a base SidecarSet that exists and is not itself a canary; a canary and its base
// never inject into the same Pod, so they do not clash.
package sidecarset

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"

	"github.com/inplace-dev/inplace/pkg/admission/appsinitializer"
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	clientset "github.com/inplace-dev/inplace/pkg/generated/clientset/versioned"
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
	// client reads a canary's base when the cache does not have it (yet): a base created just
	// before its canary must not be refused as missing. nil in tests that need no live read.
	client clientset.Interface
}

var (
	_ admission.MutationInterface                 = &Plugin{}
	_ admission.ValidationInterface               = &Plugin{}
	_ appsinitializer.WantsInplaceInformerFactory = &Plugin{}
	_ appsinitializer.WantsInplaceClientSet       = &Plugin{}
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

// SetInplaceClientSet gives the plugin the client it reads a canary's base with.
func (p *Plugin) SetInplaceClientSet(c clientset.Interface) { p.client = c }

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

// Validate refuses a SidecarSet that clashes with another one, and a canary whose base is missing
// or is a canary.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
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
	errs, err := p.canaryBase(ctx, wire)
	if err != nil {
		return err
	}
	if errs = append(errs, Clashes(wire, others)...); len(errs) > 0 {
		return apierrors.NewInvalid(apps.Kind("SidecarSet"), internal.Name, errs)
	}
	return nil
}

// canaryBase checks the base a canary SidecarSet names, as OpenKruise master's
// validateSidecarSetCanaryAnnotations does: it must exist and must not be a canary itself (two
// levels only). The checks that read no other SidecarSet (not its own base, base immutable,
// updateStrategy NotUpdate) are the SidecarSet's validation (pkg/apis/apps/validation).
func (p *Plugin) canaryBase(ctx context.Context, s *v1alpha1.SidecarSet) (field.ErrorList, error) {
	canary, baseName := sidecarcontrol.IsCanary(s)
	if !canary || baseName == s.Name {
		return nil, nil
	}
	path := field.NewPath("metadata", "annotations").Key(v1alpha1.SidecarSetBaseAnnotation)
	base, err := p.sidecarSets.Get(baseName)
	if apierrors.IsNotFound(err) && p.client != nil {
		base, err = p.client.AppsV1alpha1().SidecarSets().Get(ctx, baseName, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return field.ErrorList{field.Invalid(path, baseName, fmt.Sprintf(
			"the base SidecarSet %s of this canary (annotation %s) does not exist; create it first", baseName, v1alpha1.SidecarSetCanaryAnnotation))}, nil
	}
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("reading the base SidecarSet %s: %w", baseName, err))
	}
	if baseIsCanary, baseOfBase := sidecarcontrol.IsCanary(base); baseIsCanary {
		return field.ErrorList{field.Invalid(path, baseName, fmt.Sprintf(
			"the base SidecarSet %s is itself a canary (of %s); a canary's base cannot be a canary", baseName, baseOfBase))}, nil
	}
	return nil, nil
}

// canaryPair reports whether one of a and b is a canary of the other: a Pod gets the canary's
// sidecars or the base's, never both (sidecarcontrol.Matching), so they may share container names.
// OpenKruise skips the base only when checking the canary; here the pair is skipped both ways, so
// that a base can still be updated while a canary with its container names exists.
func canaryPair(a, b *v1alpha1.SidecarSet) bool {
	if canary, base := sidecarcontrol.IsCanary(a); canary && base == b.Name {
		return true
	}
	canary, base := sidecarcontrol.IsCanary(b)
	return canary && base == a.Name
}

// Clashes lists, with field paths, how s clashes with the other SidecarSets (itself, its base and
// its canaries excluded).
func Clashes(s *v1alpha1.SidecarSet, others []*v1alpha1.SidecarSet) field.ErrorList {
	var errs field.ErrorList
	for _, other := range others {
		if other.Name == s.Name || canaryPair(s, other) {
			continue
		}
		for _, why := range sidecarcontrol.Conflicts(s, other) {
			errs = append(errs, field.Forbidden(field.NewPath("spec"), fmt.Sprintf("may select the same Pods as SidecarSet %s: %s", other.Name, why)))
		}
	}
	return errs
}
