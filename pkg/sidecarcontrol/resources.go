package sidecarcontrol

import (
	"fmt"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/resourceexpr"
)

// PodError is an injection that fails because of the Pod itself: a resourcesPolicy that finds
// no target container in it, or whose expression gives no valid resource for its containers.
// OpenKruise refuses such a Pod and so does inplace (other injection failures are admitted as the
// Pod came, with a warning): the Pod would run without the sidecar resources its owner asked for.
type PodError struct{ Err error }

func (e *PodError) Error() string { return e.Err.Error() }
func (e *PodError) Unwrap() error { return e.Err }

// sidecarNames are the names of the containers and init containers of the SidecarSets injected
// into a Pod: they are never targets of a resourcesPolicy (OpenKruise excludes them too).
func sidecarNames(sidecarSets []*appsv1alpha1.SidecarSet) sets.Set[string] {
	names := sets.New[string]()
	for _, s := range sidecarSets {
		for i := range s.Spec.InitContainers {
			names.Insert(s.Spec.InitContainers[i].Name)
		}
		for i := range s.Spec.Containers {
			names.Insert(s.Spec.Containers[i].Name)
		}
	}
	return names
}

// applyResourcesPolicy sets the resources of a sidecar with a resourcesPolicy from the Pod's target
// containers, as OpenKruise v1.9 does when it injects a Pod:
//
//   - targets are the Pod's containers and native-sidecar init containers (restartPolicy Always)
//     whose names match targetContainersNameRegex (unanchored), except those named by an
//     injected SidecarSet (sidecars) or marked as injected; no target refuses the Pod;
//   - their limits and requests are aggregated per resource by targetContainersMode, sum or max;
//     a missing request counts as zero, a missing limit makes the aggregate unlimited;
//   - each expression of resourcesExpr is evaluated with its variable (cpu or memory) set to the
//     aggregate of the same kind (limits or requests); a limit whose aggregate is unlimited stays
//     unset (unlimited), as does a resource without an expression.
//
// The policy's resources replace the sidecar's (validation forbids both).
func applyResourcesPolicy(c *appsv1alpha1.SidecarContainer, pod *corev1.Pod, sidecars sets.Set[string]) error {
	p := c.ResourcesPolicy
	if p == nil {
		return nil
	}
	targets, err := policyTargets(p, pod, sidecars)
	if err != nil {
		return &PodError{Err: err}
	}
	limits, requests := aggregate(targets, p.TargetContainersMode)
	var out corev1.ResourceRequirements
	if l := p.ResourcesExpr.Limits; l != nil {
		if out.Limits, err = evalResources(limits, l.CPU, l.Memory, "limits"); err != nil {
			return &PodError{Err: err}
		}
	}
	if r := p.ResourcesExpr.Requests; r != nil {
		if out.Requests, err = evalResources(requests, r.CPU, r.Memory, "requests"); err != nil {
			return &PodError{Err: err}
		}
	}
	c.Resources = out
	return nil
}

func policyTargets(p *appsv1alpha1.ResourcesPolicy, pod *corev1.Pod, sidecars sets.Set[string]) ([]*corev1.Container, error) {
	pattern := p.TargetContainersNameRegex
	if pattern == "" {
		pattern = appsv1alpha1.DefaultTargetContainersNameRegex
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, fmt.Errorf("resourcesPolicy.targetContainersNameRegex %q: %w", pattern, err)
	}
	var targets []*corev1.Container
	candidate := func(c *corev1.Container) {
		if !sidecars.Has(c.Name) && !isInjectedContainer(c) && re.MatchString(c.Name) {
			targets = append(targets, c)
		}
	}
	for i := range pod.Spec.InitContainers {
		if inplaceupdate.IsNativeSidecar(&pod.Spec.InitContainers[i]) {
			candidate(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		candidate(&pod.Spec.Containers[i])
	}
	if len(targets) == 0 {
		return nil, fmt.Errorf("resourcesPolicy: no container of the Pod matches targetContainersNameRegex %q", pattern)
	}
	return targets, nil
}

// aggregate sums or maxes the targets' cpu and memory; a limit absent from any target is absent
// from the result (unlimited), a request absent counts as zero.
func aggregate(targets []*corev1.Container, mode appsv1alpha1.TargetContainersModeType) (limits, requests corev1.ResourceList) {
	limits, requests = corev1.ResourceList{}, corev1.ResourceList{}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		unlimited := false
		var limit, request resource.Quantity
		for _, t := range targets {
			if l, ok := t.Resources.Limits[name]; ok {
				combineQuantity(&limit, l, mode)
			} else {
				unlimited = true
			}
			if r, ok := t.Resources.Requests[name]; ok {
				combineQuantity(&request, r, mode)
			}
		}
		if !unlimited {
			limits[name] = limit
		}
		requests[name] = request
	}
	return limits, requests
}

func combineQuantity(acc *resource.Quantity, q resource.Quantity, mode appsv1alpha1.TargetContainersModeType) {
	if mode == appsv1alpha1.TargetContainersModeMax {
		if q.Cmp(*acc) > 0 {
			*acc = q.DeepCopy()
		}
		return
	}
	acc.Add(q)
}

// evalResources evaluates the cpu and memory expressions of limits or requests over agg; a
// resource without an expression, or whose aggregate is absent (unlimited), is left out.
func evalResources(agg corev1.ResourceList, cpuExpr, memoryExpr, kind string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, r := range []struct {
		name corev1.ResourceName
		expr string
		v    resourceexpr.Variable
	}{{corev1.ResourceCPU, cpuExpr, resourceexpr.ExprCPU}, {corev1.ResourceMemory, memoryExpr, resourceexpr.ExprMemory}} {
		value, ok := agg[r.name]
		if r.expr == "" || !ok {
			continue
		}
		e, err := resourceexpr.Parse(r.expr, r.v)
		if err != nil {
			return nil, fmt.Errorf("resourcesPolicy.resourcesExpr.%s.%s %q: %w", kind, r.name, r.expr, err)
		}
		q, err := e.Eval(value)
		if err != nil {
			return nil, fmt.Errorf("resourcesPolicy.resourcesExpr.%s.%s with %s=%s: %w", kind, r.name, r.v, value.String(), err)
		}
		out[r.name] = q
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}
