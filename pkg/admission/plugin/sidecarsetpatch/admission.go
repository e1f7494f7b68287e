// Package sidecarsetpatch is the built-in admission plugin that holds a SidecarSet's
// spec.patchPodMetadata to OpenKruise's allow-list: the key SidecarSet_PatchPodMetadata_WhiteList
// of the ConfigMap kruise-configuration in inplace's own namespace names, per SidecarSet label
// selector, the Pod annotation keys (regular expressions) a SidecarSet may patch into the Pods it
// injects. Without an allow-list, or without a rule for the SidecarSet, nothing may be patched,
// unless the feature gate SidecarSetPatchPodMetadataDefaultsAllowed is on (off by default): the
// behaviour of OpenKruise v1.9's SidecarSet webhook (pkg/sidecarcontrol.ValidatePatchPodMetadata).
//
// Unlike OpenKruise, an UPDATE is checked only when it changes spec.patchPodMetadata or the
// labels (which choose the rules): an allow-list narrowed later does not block unrelated writes
// to a SidecarSet written before, such as the removal of a finalizer while it is deleted.
//
// The ConfigMap is read with a live GET when a write needs it (rare: SidecarSet writes that carry
// patchPodMetadata), so an allow-list written just before the SidecarSet always counts. The plugin
// needs kube-apiserver and so does not run in standalone mode, where there are no Pods to patch.
package sidecarsetpatch

import (
	"context"
	"fmt"
	"io"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	genericinitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/kubernetes"

	"github.com/inplace-dev/inplace/pkg/admission/appsinitializer"
	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
)

// PluginName is the plugin's name in --enable-admission-plugins and --disable-admission-plugins.
const PluginName = "SidecarSetPatchPodMetadata"

// Register registers the plugin.
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, func(io.Reader) (admission.Interface, error) { return New(), nil })
}

// Plugin checks SidecarSets' spec.patchPodMetadata against the allow-list.
type Plugin struct {
	*admission.Handler
	kube      kubernetes.Interface
	namespace string
}

var (
	_ admission.ValidationInterface                 = &Plugin{}
	_ genericinitializer.WantsExternalKubeClientSet = &Plugin{}
	_ appsinitializer.WantsInplaceNamespace         = &Plugin{}
	_ admission.InitializationValidator             = &Plugin{}
)

// New returns the plugin; it acts on CREATE and UPDATE.
func New() *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update)}
}

// SetExternalKubeClientSet gives the plugin the core client it reads the ConfigMap with.
func (p *Plugin) SetExternalKubeClientSet(client kubernetes.Interface) { p.kube = client }

// SetInplaceNamespace gives the plugin the namespace of the ConfigMap.
func (p *Plugin) SetInplaceNamespace(namespace string) { p.namespace = namespace }

// ValidateInitialization fails when the plugin did not get its client or namespace.
func (p *Plugin) ValidateInitialization() error {
	if p.kube == nil {
		return fmt.Errorf("%s admission plugin needs a Kubernetes client", PluginName)
	}
	if p.namespace == "" {
		return fmt.Errorf("%s admission plugin needs inplace's namespace", PluginName)
	}
	return nil
}

// Validate refuses a SidecarSet whose spec.patchPodMetadata the allow-list does not allow.
func (p *Plugin) Validate(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != apps.Resource("sidecarsets") || a.GetSubresource() != "" {
		return nil
	}
	set, ok := a.GetObject().(*apps.SidecarSet)
	if !ok || len(set.Spec.PatchPodMetadata) == 0 {
		return nil
	}
	if old, ok := a.GetOldObject().(*apps.SidecarSet); ok && a.GetOperation() == admission.Update &&
		apiequality.Semantic.DeepEqual(old.Spec.PatchPodMetadata, set.Spec.PatchPodMetadata) &&
		apiequality.Semantic.DeepEqual(old.Labels, set.Labels) {
		return nil
	}
	source := fmt.Sprintf("key %s of ConfigMap %s/%s", sidecarcontrol.PatchMetadataAllowListKey, p.namespace, sidecarcontrol.ConfigurationName)
	path := field.NewPath("spec", "patchPodMetadata")
	allow, err := p.allowList(ctx)
	if err != nil {
		return apierrors.NewInvalid(apps.Kind("SidecarSet"), set.Name, field.ErrorList{field.Forbidden(path,
			fmt.Sprintf("the allow-list (%s) cannot be used, so no annotation may be patched: %v", source, err))})
	}
	patches := make([]map[string]string, len(set.Spec.PatchPodMetadata))
	for i, patch := range set.Spec.PatchPodMetadata {
		patches[i] = patch.Annotations
	}
	if errs := sidecarcontrol.ValidatePatchPodMetadata(set.Labels, patches, allow, source, path); len(errs) > 0 {
		return apierrors.NewInvalid(apps.Kind("SidecarSet"), set.Name, errs)
	}
	return nil
}

// allowList reads the allow-list: nil when the ConfigMap or its key is absent.
func (p *Plugin) allowList(ctx context.Context) (*sidecarcontrol.PatchMetadataAllowList, error) {
	cm, err := p.kube.CoreV1().ConfigMaps(p.namespace).Get(ctx, sidecarcontrol.ConfigurationName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading it: %w", err)
	}
	return sidecarcontrol.ParsePatchMetadataAllowList(cm.Data)
}
