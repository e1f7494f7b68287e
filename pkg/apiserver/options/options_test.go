package options

import (
	"testing"

	"github.com/spf13/pflag"
	genericfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"

	"github.com/inplace-dev/inplace/pkg/features"
)

// TestFeatureGates: inplace-apiserver's --feature-gates takes OpenKruise's gates, kube's gates of
// the generic server (applied with the emulated version, as before), and ignores a name neither
// has instead of refusing to start.
func TestFeatureGates(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("inplace-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	t.Cleanup(func() {
		_ = features.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.SidecarSetPatchPodMetadataDefaultsAllowed): false})
		_ = utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(genericfeatures.OpenAPIEnums): true})
	})
	err := fs.Parse([]string{"--feature-gates=SidecarSetPatchPodMetadataDefaultsAllowed=true,OpenAPIEnums=false,DaemonSetPruneIneligibleNodes=true"})
	if err != nil {
		t.Fatalf("parsing: %v", err)
	}
	if err := o.componentGlobals.Set(); err != nil {
		t.Fatalf("applying kube's gates: %v", err)
	}
	if !features.Enabled(features.SidecarSetPatchPodMetadataDefaultsAllowed) {
		t.Error("SidecarSetPatchPodMetadataDefaultsAllowed is off, want on")
	}
	if utilfeature.DefaultFeatureGate.Enabled(genericfeatures.OpenAPIEnums) {
		t.Error("kube's OpenAPIEnums is on, want off")
	}
	if got := o.FeatureGates.Ignored; len(got) != 1 || got[0] != "DaemonSetPruneIneligibleNodes" {
		t.Errorf("ignored %v, want [DaemonSetPruneIneligibleNodes]", got)
	}
}
