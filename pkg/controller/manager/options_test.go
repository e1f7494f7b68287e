package manager

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/inplace-dev/inplace/pkg/features"
)

// TestFeatureGates: inplace-controller takes the --feature-gates string of OpenKruise's chart,
// a gate it does not have included.
func TestFeatureGates(t *testing.T) {
	o := NewOptions()
	fs := pflag.NewFlagSet("inplace-controller", pflag.ContinueOnError)
	o.AddFlags(fs)
	t.Cleanup(func() {
		_ = features.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(features.PreparingUpdateAsUpdate): false})
	})
	if err := fs.Parse([]string{"--feature-gates=PreparingUpdateAsUpdate=true,NoSuchGate=true"}); err != nil {
		t.Fatalf("parsing: %v", err)
	}
	if !features.Enabled(features.PreparingUpdateAsUpdate) {
		t.Error("PreparingUpdateAsUpdate is off, want on")
	}
	if got := o.FeatureGates.Ignored; len(got) != 1 || got[0] != "NoSuchGate" {
		t.Errorf("ignored %v, want [NoSuchGate]", got)
	}
}
