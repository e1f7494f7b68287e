package features

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/component-base/featuregate"
)

// newGate is a gate with OpenKruise's gates, apart from the process's.
func newGate(t *testing.T) featuregate.MutableFeatureGate {
	t.Helper()
	g := featuregate.NewFeatureGate()
	if err := g.Add(defaultFeatureGates); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestDefaultsAreOpenKruiseV190: every gate of OpenKruise v1.9.0 is known, with its default (a
// few spot checks of defaults that differ: on by default, or beta and off), but for the one
// inplace turns on by default: InPlaceWorkloadVerticalScaling; plus inplace's own gates (inplaceOnly).
func TestDefaultsAreOpenKruiseV190(t *testing.T) {
	// The names of pkg/features/kruise_features.go at openkruise/kruise v1.9.0.
	names := []string{"KruiseDaemon", "PodWebhook", "CloneSetShortHash", "KruisePodReadinessGate",
		"PreDownloadImageForInPlaceUpdate", "CloneSetPartitionRollback", "ResourcesDeletionProtection",
		"PodUnavailableBudgetDeleteGate", "PodUnavailableBudgetUpdateGate", "WorkloadSpread", "DaemonWatchingPod",
		"TemplateNoDefaults", "InPlaceUpdateEnvFromMetadata", "StatefulSetAutoDeletePVC",
		"SidecarSetPatchPodMetadataDefaultsAllowed", "SidecarTerminator", "PodProbeMarkerGate",
		"PreDownloadImageForDaemonSetUpdate", "CloneSetEventHandlerOptimization", "PreparingUpdateAsUpdate",
		"ImagePullJobGate", "ResourceDistributionGate", "DeletionProtectionForCRDCascadingGate", "EnhancedLivenessProbe",
		"RecreatePodWhenChangeVCTInCloneSetGate", "StatefulSetStartOrdinal", "PodIndexLabel", "EnableExternalCerts",
		"StatefulSetAutoResizePVCGate", "ForceDeleteTimeoutExpectationGate", "InPlaceWorkloadVerticalScaling",
		"EnablePodProbeMarkerOnServerless", "EnableSortSidecarContainerByName", "InPlacePodVerticalScaling"}
	all := DefaultMutableFeatureGate.GetAll()
	for _, n := range names {
		if _, ok := all[featuregate.Feature(n)]; !ok {
			t.Errorf("gate %s is not registered", n)
		}
	}
	// inplace's own gates, which OpenKruise does not have, with their defaults.
	inplaceOnly := map[featuregate.Feature]bool{ContainerLaunchPostStartBarrier: true}
	if got := len(defaultFeatureGates) - len(inplaceOnly); got != len(names) {
		t.Errorf("%d of OpenKruise's gates registered, OpenKruise v1.9.0 has %d", got, len(names))
	}
	on := map[featuregate.Feature]bool{PodWebhook: true, KruiseDaemon: true, DaemonWatchingPod: true, WorkloadSpread: true,
		PodUnavailableBudgetDeleteGate: true, InPlaceUpdateEnvFromMetadata: true, StatefulSetAutoDeletePVC: true,
		PodProbeMarkerGate: true, PodIndexLabel: true}
	on[InPlaceWorkloadVerticalScaling] = true // inplace's own default
	for f, def := range inplaceOnly {
		on[f] = def
	}
	for f, spec := range defaultFeatureGates {
		if spec.Default != on[f] {
			t.Errorf("%s default %t, OpenKruise v1.9.0's is %t", f, spec.Default, on[f])
		}
		if DefaultFeatureGate.Enabled(f) != spec.Default {
			t.Errorf("%s enabled %t in a process with no --feature-gates, want its default %t", f, DefaultFeatureGate.Enabled(f), spec.Default)
		}
	}
	if s := defaultFeatureGates[ResourcesDeletionProtection].PreRelease; s != featuregate.Beta {
		t.Errorf("ResourcesDeletionProtection is %s, OpenKruise's is BETA", s)
	}
}

// TestFlagTakesOpenKruiseString: the string of an OpenKruise user parses, names inplace does not
// have (a newer OpenKruise's, a typo) are logged and dropped, and the gates named are set.
func TestFlagTakesOpenKruiseString(t *testing.T) {
	g := newGate(t)
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f := NewFlag(g)
	fs.Var(f, FlagName, "")
	err := fs.Parse([]string{"--feature-gates=PreparingUpdateAsUpdate=true,DaemonSetPruneIneligibleNodes=true, RecreatePodWhenChangeVCTInCloneSetGate = true ,KruiseDaemon=false,,",
		"--feature-gates=NoSuchGate=false"})
	if err != nil {
		t.Fatalf("parsing: %v", err)
	}
	for gate, want := range map[featuregate.Feature]bool{PreparingUpdateAsUpdate: true, RecreatePodWhenChangeVCTInCloneSetGate: true,
		KruiseDaemon: false, StatefulSetStartOrdinal: false, PodWebhook: true} {
		if got := g.Enabled(gate); got != want {
			t.Errorf("%s = %t, want %t", gate, got, want)
		}
	}
	if want := []string{"DaemonSetPruneIneligibleNodes", "NoSuchGate"}; !slices.Equal(f.Ignored, want) {
		t.Errorf("ignored %v, want %v", f.Ignored, want)
	}
	if s := f.String(); s != "KruiseDaemon=false,PreparingUpdateAsUpdate=true,RecreatePodWhenChangeVCTInCloneSetGate=true" {
		t.Errorf("String() = %q", s)
	}
}

// TestFlagRefusesMalformedPairs: a pair with no bool is an error whatever its name, and none of
// the string's gates is set then.
func TestFlagRefusesMalformedPairs(t *testing.T) {
	for _, s := range []string{"PreparingUpdateAsUpdate", "PreparingUpdateAsUpdate=maybe", "NoSuchGate=yes", "StatefulSetStartOrdinal=true,PreparingUpdateAsUpdate"} {
		g := newGate(t)
		if err := NewFlag(g).Set(s); err == nil {
			t.Errorf("Set(%q): no error", s)
		}
		if g.Enabled(StatefulSetStartOrdinal) || g.Enabled(PreparingUpdateAsUpdate) {
			t.Errorf("Set(%q) set a gate although it failed", s)
		}
	}
}

// TestWrapFlag: inplace-apiserver's flag takes OpenKruise's gates and kube's (the generic
// server's flag, here a gate's own), OpenKruise's first where a name is in both, and drops the
// rest.
func TestWrapFlag(t *testing.T) {
	kube := featuregate.NewFeatureGate()
	if err := kube.Add(map[featuregate.Feature]featuregate.FeatureSpec{
		"KubeOnly":                  {Default: false, PreRelease: featuregate.Alpha},
		"InPlacePodVerticalScaling": {Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	}); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	kube.AddFlag(fs)
	ours := newGate(t)
	f, err := wrapFlag(fs, ours, kube)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--feature-gates=KubeOnly=true,InPlacePodVerticalScaling=true,EnableSortSidecarContainerByName=true,Nope=true"}); err != nil {
		t.Fatalf("parsing: %v", err)
	}
	if !kube.Enabled("KubeOnly") || !ours.Enabled(InPlacePodVerticalScaling) || !ours.Enabled(EnableSortSidecarContainerByName) {
		t.Errorf("KubeOnly %t, OpenKruise's InPlacePodVerticalScaling %t, EnableSortSidecarContainerByName %t: want all true",
			kube.Enabled("KubeOnly"), ours.Enabled(InPlacePodVerticalScaling), ours.Enabled(EnableSortSidecarContainerByName))
	}
	if !slices.Equal(f.Ignored, []string{"Nope"}) {
		t.Errorf("ignored %v, want [Nope]", f.Ignored)
	}
	if !strings.Contains(fs.Lookup(FlagName).Usage, "PreparingUpdateAsUpdate") {
		t.Errorf("usage does not list OpenKruise's gates: %s", fs.Lookup(FlagName).Usage)
	}
}
