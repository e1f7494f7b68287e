package sidecarcontrol

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

// ResizedSidecars recomputes, for an in-place resize of a Pod's containers, the resources of the
// sidecars whose resourcesPolicy targets them, so the sidecars follow their app in the same
// update (OpenKruise computes them at injection only, and a resized app leaves its sidecar sized
// for the old one). resized is the Pod with the resize applied to its containers' specs;
// sidecarSets are the SidecarSets to consider (those not injected into the Pod are skipped).
//
// A sidecar is recomputed only while the Pod's kruise.io/sidecarset-hash entry of its SidecarSet
// is the SidecarSet's current hash: the policy is then the one the Pod was injected (or last
// upgraded) with, and a Pod created now would get the same resources. Only the quantities the
// policy computes are returned (a resize sets quantities, it never removes one: a limit the
// policy leaves unlimited stays as it is), and only for sidecars whose resources change. Native
// sidecars (init containers) are left alone: a workload's update never changes init containers.
func ResizedSidecars(resized *corev1.Pod, sidecarSets []*appsv1alpha1.SidecarSet) (map[string]corev1.ResourceRequirements, error) {
	hashes, err := inplaceupdate.SidecarSetHashes(resized, appsv1alpha1.SidecarSetHashAnnotation)
	if err != nil || len(hashes) == 0 {
		return nil, err
	}
	var injected []*appsv1alpha1.SidecarSet
	for _, s := range sidecarSets {
		if _, ok := hashes[s.Name]; ok {
			injected = append(injected, s)
		}
	}
	sidecars := sidecarNames(injected)
	var out map[string]corev1.ResourceRequirements
	for _, s := range injected {
		if hashes[s.Name].Hash != s.Annotations[appsv1alpha1.SidecarSetHashAnnotation] {
			continue
		}
		for i := range s.Spec.Containers {
			c := s.Spec.Containers[i].DeepCopy()
			cur := podContainer(resized, c.Name)
			if c.ResourcesPolicy == nil || cur == nil {
				continue
			}
			if err := applyResourcesPolicy(c, resized, sidecars); err != nil {
				return nil, err
			}
			want := onlyChanged(cur.Resources, c.Resources)
			if len(want.Limits)+len(want.Requests) == 0 {
				continue
			}
			if out == nil {
				out = map[string]corev1.ResourceRequirements{}
			}
			out[c.Name] = want
		}
	}
	return out, nil
}

// onlyChanged is the part of want that differs from cur: the quantities to send in a resize.
func onlyChanged(cur, want corev1.ResourceRequirements) corev1.ResourceRequirements {
	diff := func(cur, want corev1.ResourceList) corev1.ResourceList {
		var out corev1.ResourceList
		for name, q := range want {
			if have, ok := cur[name]; ok && apiequality.Semantic.DeepEqual(have, q) {
				continue
			}
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = q
		}
		return out
	}
	return corev1.ResourceRequirements{Limits: diff(cur.Limits, want.Limits), Requests: diff(cur.Requests, want.Requests)}
}
