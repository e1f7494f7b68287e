// Package admission is inplace-apiserver's built-in admission: plugins that run inside this
// server's own admission chain, after the generic ones (namespace lifecycle, admission webhooks
// and policies), for the kinds of apps.kruise.io — no webhook round trip. Each plugin lives in
// plugin/<name> with a Register function; adding one is a folder and a line in plugins below.
// The chain runs in aggregated mode only: standalone mode has no cluster to check against.
package admission

import (
	"k8s.io/apiserver/pkg/admission"

	"github.com/inplace-dev/inplace/pkg/admission/plugin/containerrecreaterequest"
	"github.com/inplace-dev/inplace/pkg/admission/plugin/sidecarset"
)

// plugins are the built-in plugins, in the order they run (mutating phase, then validating).
var plugins = []struct {
	name     string
	register func(*admission.Plugins)
}{
	{containerrecreaterequest.PluginName, containerrecreaterequest.Register},
	{sidecarset.PluginName, sidecarset.Register},
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
