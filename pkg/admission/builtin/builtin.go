// Package builtin is inplace-apiserver's built-in admission: plugins that run inside this
// server's own admission chain, after the generic ones (namespace lifecycle, admission webhooks
// and policies), for the kinds of apps.kruise.io — no webhook round trip. Each plugin lives in
// pkg/admission/plugin/<name> with a Register function; adding one is a folder and a line in plugins below.
// In standalone mode (no kube-apiserver) only the plugins that need nothing of the cluster run
// (Standalone); the generic ones and those that read the core API are skipped.
package builtin

import (
	"fmt"
	"io"
	"slices"

	"k8s.io/apiserver/pkg/admission"
	genericinitializer "k8s.io/apiserver/pkg/admission/initializer"
	admissionmetrics "k8s.io/apiserver/pkg/admission/metrics"
	"k8s.io/klog/v2"

	"github.com/inplace-dev/inplace/pkg/admission/plugin/budgetconflict"
	"github.com/inplace-dev/inplace/pkg/admission/plugin/containerrecreaterequest"
	"github.com/inplace-dev/inplace/pkg/admission/plugin/deletionprotection"
	"github.com/inplace-dev/inplace/pkg/admission/plugin/sidecarset"
	"github.com/inplace-dev/inplace/pkg/admission/plugin/sidecarsetpatch"
)

// plugins are the built-in plugins, in the order they run (mutating phase, then validating).
var plugins = []struct {
	name     string
	register func(*admission.Plugins)
}{
	{containerrecreaterequest.PluginName, containerrecreaterequest.Register},
	{sidecarset.PluginName, sidecarset.Register},
	{sidecarsetpatch.PluginName, sidecarsetpatch.Register},
	{deletionprotection.PluginName, deletionprotection.Register},
	{budgetconflict.PluginName, budgetconflict.Register},
}

// Register registers every built-in plugin.
func Register(p *admission.Plugins) {
	for _, plugin := range plugins {
		plugin.register(p)
	}
}

// Names are the built-in plugins in the order they run, to append to the recommended order
// (which also enables them).
func Names() []string {
	names := make([]string, 0, len(plugins))
	for _, plugin := range plugins {
		names = append(names, plugin.name)
	}
	return names
}

// NeedsKube tells what of kube-apiserver a plugin asks for (by the generic initializer's
// interfaces it implements), or "" when it needs nothing of it and so runs in standalone mode.
func NeedsKube(plugin admission.Interface) string {
	switch plugin.(type) {
	case genericinitializer.WantsExternalKubeClientSet:
		return "the core API client"
	case genericinitializer.WantsExternalKubeInformerFactory:
		return "the core API informers"
	case genericinitializer.WantsDynamicClient:
		return "the dynamic client"
	}
	return ""
}

// noConfig gives every plugin no configuration file.
type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }

// kubeProbe records what a plugin instance needs of kube-apiserver, initializing nothing.
type kubeProbe struct{ needs *string }

func (p kubeProbe) Initialize(plugin admission.Interface) { *p.needs = NeedsKube(plugin) }

// Standalone is the admission chain of standalone mode: the built-in plugins, in order, but for
// those in disabled and those that need kube-apiserver (NeedsKube), which are skipped with a log
// line. initializer hands the plugins this group's client and informers.
func Standalone(initializer admission.PluginInitializer, disabled []string) (admission.Interface, error) {
	registry := admission.NewPlugins()
	Register(registry)
	var names []string
	for _, name := range Names() {
		if slices.Contains(disabled, name) {
			continue
		}
		// A throwaway instance tells what the plugin needs; it fails its initialization check
		// (the probe hands it nothing), which is expected.
		var needs string
		_, _ = registry.InitPlugin(name, nil, kubeProbe{needs: &needs})
		if needs != "" {
			klog.InfoS("Admission plugin skipped in standalone mode: it needs kube-apiserver", "plugin", name, "needs", needs)
			continue
		}
		names = append(names, name)
	}
	chain, err := registry.NewFromPlugins(names, noConfig{}, initializer,
		admission.DecoratorFunc(admissionmetrics.WithControllerMetrics))
	if err != nil {
		return nil, fmt.Errorf("building the standalone admission chain: %w", err)
	}
	return admissionmetrics.WithStepMetrics(chain), nil
}
