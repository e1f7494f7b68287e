// Package podcreate is what inplace does to a core Pod being created, shared by the Pod admission
// webhook and sidecarsets/NAME/inject, in OpenKruise's order:
//
//  1. a Pod controlled by one of inplace's workloads (an apps.kruise.io owner) gets the
//     InPlaceUpdateReady readiness gate, so that an in-place update can take it out of service;
//  2. the SidecarSets that select it are injected (package sidecarcontrol);
//  3. when it asks for ordered container launch, its containers get their launch barriers
//     (package launchpriority) — after injection, so that injected sidecars take part: the
//     postStart barrier that inplace-daemon answers when it keeps the order exactly and the
//     ContainerLaunchPostStartBarrier gate is on, else OpenKruise's barrier ConfigMap.
//
// It is pure logic: the caller finds the SidecarSets.
package podcreate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/features"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/launchpriority"
	"github.com/inplace-dev/inplace/pkg/sidecarcontrol"
)

// Result is a mutated copy of a Pod being created.
type Result struct {
	Pod *corev1.Pod
	// Changed is false when Pod is the same as the one given.
	Changed bool
	// Injected names the SidecarSets injected, in the order they were applied.
	Injected []string
	// Warnings say what of the Pod's requests was ignored, for the user who created it.
	Warnings []string
}

// Mutate returns the Pod as inplace creates it. sidecarSets are those that match the Pod (see
// sidecarcontrol.Matching); now stamps their hash annotations. An error (a SidecarSet that cannot be
// injected) leaves the Pod as given.
func Mutate(pod *corev1.Pod, sidecarSets []*appsv1alpha1.SidecarSet, now metav1.Time) (*Result, error) {
	out := pod.DeepCopy()
	res := &Result{Pod: out}
	if controlledByWorkload(out) && !inplaceupdate.HasReadinessGate(out) {
		inplaceupdate.InjectReadinessGate(out)
		res.Changed = true
	}
	if len(sidecarSets) > 0 {
		injected, err := sidecarcontrol.Inject(out, sidecarSets, now)
		if err != nil {
			return nil, err
		}
		res.Pod, res.Injected, res.Changed = injected.Pod, injected.Injected, true
	}
	changed, warning := launchpriority.AssignBarrier(res.Pod, barrier(), launchpriority.DefaultHookPort)
	res.Changed = res.Changed || changed
	if warning != "" {
		res.Warnings = append(res.Warnings, warning)
	}
	return res, nil
}

// barrier is the launch barrier the ContainerLaunchPostStartBarrier gate asks for.
func barrier() launchpriority.Barrier {
	if features.Enabled(features.ContainerLaunchPostStartBarrier) {
		return launchpriority.BarrierPostStart
	}
	return launchpriority.BarrierConfigMap
}

// controlledByWorkload is true when the Pod's controller is one of the apps.kruise.io kinds.
func controlledByWorkload(pod *corev1.Pod) bool {
	ref := metav1.GetControllerOfNoCopy(pod)
	return ref != nil && strings.HasPrefix(ref.APIVersion, appsv1alpha1.GroupName+"/")
}
