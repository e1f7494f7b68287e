package sidecarcontrol

import (
	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// IsCanary reports whether sidecarSet is a canary SidecarSet and names its base, as OpenKruise
// master's IsCanarySidecarSet: it is one when its annotation apps.kruise.io/sidecarset-canary is
// exactly "true" (not "True", not "1") and apps.kruise.io/sidecarset-base is not empty. The base
// annotation is returned whether or not the SidecarSet is a canary.
func IsCanary(sidecarSet *appsv1alpha1.SidecarSet) (bool, string) {
	return appsv1alpha1.SidecarSetCanaryBase(sidecarSet.Annotations)
}

// withoutCanaryBases drops from matched, the SidecarSets that inject into one Pod, every base
// SidecarSet one of its canaries also injects into that Pod, as OpenKruise's Pod webhook does: the
// canary wins over its base for the Pods both select, and the base still injects into the Pods
// only it selects. A canary that does not inject (paused, or not selecting the Pod) leaves its
// base in place. The order of matched is kept.
func withoutCanaryBases(matched []*appsv1alpha1.SidecarSet) []*appsv1alpha1.SidecarSet {
	bases := map[string]bool{}
	for _, s := range matched {
		if canary, base := IsCanary(s); canary {
			bases[base] = true
		}
	}
	if len(bases) == 0 {
		return matched
	}
	kept := make([]*appsv1alpha1.SidecarSet, 0, len(matched))
	for _, s := range matched {
		if !bases[s.Name] {
			kept = append(kept, s)
		}
	}
	return kept
}
