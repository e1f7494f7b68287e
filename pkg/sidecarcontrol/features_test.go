package sidecarcontrol

import (
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	featuregatetesting "k8s.io/component-base/featuregate/testing"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/features"
)

// TestEnableSortSidecarContainerByName: OpenKruise's gate puts the injected sidecar containers
// in name order; off (the default), they keep their SidecarSet's order.
func TestEnableSortSidecarContainerByName(t *testing.T) {
	s := sidecarSet("mesh", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers = []appsv1alpha1.SidecarContainer{sidecar("zeta", nil), sidecar("alpha", nil)}
	})
	for on, want := range map[bool][]string{false: {"zeta", "alpha", "main"}, true: {"alpha", "zeta", "main"}} {
		t.Run(fmt.Sprint(on), func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.EnableSortSidecarContainerByName, on)
			res, err := Inject(samplePod(), []*appsv1alpha1.SidecarSet{s}, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(res.Pod.Spec.Containers); !slices.Equal(got, want) {
				t.Errorf("containers %v, want %v", got, want)
			}
		})
	}
}

// TestSidecarSetPatchPodMetadataDefaultsAllowed: with OpenKruise's gate, patchPodMetadata needs no
// allow-list, nor a rule for the SidecarSet; a rule that exists still decides.
func TestSidecarSetPatchPodMetadataDefaultsAllowed(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, features.DefaultFeatureGate, features.SidecarSetPatchPodMetadataDefaultsAllowed, true)
	patches := []map[string]string{{"mesh.io/inject": "x"}}
	path := field.NewPath("spec", "patchPodMetadata")
	if errs := ValidatePatchPodMetadata(nil, patches, nil, "cm", path); len(errs) != 0 {
		t.Errorf("no allow-list: %v", errs)
	}
	if errs := ValidatePatchPodMetadata(nil, patches, allowList(t), "cm", path); len(errs) != 0 {
		t.Errorf("no rule: %v", errs)
	}
	other := allowList(t, PatchMetadataAllowRule{AllowedAnnotationKeyExprs: []string{`^other/`}})
	if errs := ValidatePatchPodMetadata(nil, patches, other, "cm", path); len(errs) != 1 {
		t.Errorf("a rule that does not allow the key: errors %v, want one", errs)
	}
}
