package daemon

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/inplace-dev/inplace/pkg/features"
)

// TestFeatureGates: inplace-daemon takes the --feature-gates string OpenKruise's chart gives
// kruise-daemon, a gate it does not have included.
func TestFeatureGates(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("inplace-daemon", pflag.ContinueOnError)
	o.AddFlags(fs)
	t.Cleanup(func() {
		_ = features.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.KruiseDaemon): true})
	})
	if err := fs.Parse([]string{"--feature-gates=KruiseDaemon=false,NoSuchGate=true"}); err != nil {
		t.Fatalf("parsing: %v", err)
	}
	if features.Enabled(features.KruiseDaemon) {
		t.Error("KruiseDaemon is on, want off")
	}
	if got := o.FeatureGates.Ignored; len(got) != 1 || got[0] != "NoSuchGate" {
		t.Errorf("ignored %v, want [NoSuchGate]", got)
	}
}
