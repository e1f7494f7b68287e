package inplaceupdate

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// resizable are the resources Kubernetes can change in a running container.
var resizable = map[corev1.ResourceName]bool{corev1.ResourceCPU: true, corev1.ResourceMemory: true}

// PodQOSClass is the Pod's QoS class as Kubernetes computes it (qos.GetPodQOS): status.qosClass
// when set, else ComputeQOSClass of its spec.
func PodQOSClass(pod *corev1.Pod) corev1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputeQOSClass(&pod.Spec)
}

// ComputeQOSClass computes the QoS class of a Pod spec like Kubernetes' qos.ComputePodQOS, after
// the API server's defaulting of container requests from limits (a template is not defaulted,
// the Pod created from it is). Pod-level resources, when set, decide alone.
func ComputeQOSClass(spec *corev1.PodSpec) corev1.PodQOSClass {
	requests := corev1.ResourceList{}
	limits := corev1.ResourceList{}
	guaranteed := true
	add := func(into corev1.ResourceList, from corev1.ResourceList) (found map[corev1.ResourceName]bool) {
		found = map[corev1.ResourceName]bool{}
		for name, q := range from {
			if !resizable[name] || q.Sign() <= 0 {
				continue
			}
			found[name] = true
			sum := q.DeepCopy()
			if prev, ok := into[name]; ok {
				sum.Add(prev)
			}
			into[name] = sum
		}
		return found
	}
	if spec.Resources != nil && len(spec.Resources.Requests)+len(spec.Resources.Limits) > 0 {
		add(requests, spec.Resources.Requests)
		if found := add(limits, spec.Resources.Limits); !found[corev1.ResourceCPU] || !found[corev1.ResourceMemory] {
			guaranteed = false
		}
	} else {
		all := slices.Concat(spec.Containers, spec.InitContainers)
		for i := range all {
			res := all[i].Resources
			add(requests, defaultedRequests(res))
			if found := add(limits, res.Limits); !found[corev1.ResourceCPU] || !found[corev1.ResourceMemory] {
				guaranteed = false
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// defaultedRequests are the container's requests with every limit that has no request copied
// into the requests, as the API server defaults a Pod.
func defaultedRequests(res corev1.ResourceRequirements) corev1.ResourceList {
	out := res.Requests.DeepCopy()
	for name, q := range res.Limits {
		if _, ok := out[name]; !ok {
			if out == nil {
				out = corev1.ResourceList{}
			}
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// diffResources compares a container's old and new requests and limits. It returns whether they
// differ and, if they do, the cpu and memory requirements the container must reach. A removed
// request or limit, or a change of a resource other than cpu and memory, cannot be made in place.
// Claims are not looked at.
func diffResources(fldPath *field.Path, oldRes, newRes corev1.ResourceRequirements) (bool, corev1.ResourceRequirements, *NotInPlaceError) {
	changed := false
	for _, part := range []struct {
		name     string
		old, new corev1.ResourceList
	}{{"requests", oldRes.Requests, newRes.Requests}, {"limits", oldRes.Limits, newRes.Limits}} {
		for _, name := range sortedResourceNames(part.old) {
			if _, ok := part.new[name]; !ok {
				return false, corev1.ResourceRequirements{}, &NotInPlaceError{
					Field:  fldPath.Child(part.name).Key(string(name)).String(),
					Reason: fmt.Sprintf("removed: %s cannot be removed from a running container", part.name),
				}
			}
		}
		for _, name := range sortedResourceNames(part.new) {
			if prev, ok := part.old[name]; ok && prev.Cmp(part.new[name]) == 0 {
				continue
			}
			if !resizable[name] {
				return false, corev1.ResourceRequirements{}, &NotInPlaceError{
					Field:  fldPath.Child(part.name).Key(string(name)).String(),
					Reason: "changed: only cpu and memory can be resized in place",
				}
			}
			changed = true
		}
	}
	if !changed {
		return false, corev1.ResourceRequirements{}, nil
	}
	return true, resizableOnly(newRes), nil
}

// resizableOnly keeps the cpu and memory requests and limits.
func resizableOnly(res corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := corev1.ResourceRequirements{}
	for name, q := range res.Requests {
		if resizable[name] {
			if out.Requests == nil {
				out.Requests = corev1.ResourceList{}
			}
			out.Requests[name] = q.DeepCopy()
		}
	}
	for name, q := range res.Limits {
		if resizable[name] {
			if out.Limits == nil {
				out.Limits = corev1.ResourceList{}
			}
			out.Limits[name] = q.DeepCopy()
		}
	}
	return out
}

// mergeResources is cur with the requests and limits of req set over it, as a strategic merge
// patch of the container's resources would.
// MergeResources is cur with every quantity of req set over it: the resources a container has
// after a resize request (which sets quantities and never removes one).
func MergeResources(cur, req corev1.ResourceRequirements) corev1.ResourceRequirements {
	return mergeResources(cur, req)
}

func mergeResources(cur, req corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := *cur.DeepCopy()
	for name, q := range req.Requests {
		if out.Requests == nil {
			out.Requests = corev1.ResourceList{}
		}
		out.Requests[name] = q.DeepCopy()
	}
	for name, q := range req.Limits {
		if out.Limits == nil {
			out.Limits = corev1.ResourceList{}
		}
		out.Limits[name] = q.DeepCopy()
	}
	return out
}

// covers is true when every request and limit of want has an equal quantity in have.
func covers(have, want corev1.ResourceRequirements) bool {
	return listCovers(have.Requests, want.Requests) && listCovers(have.Limits, want.Limits)
}

func listCovers(have, want corev1.ResourceList) bool {
	for name, q := range want {
		h, ok := have[name]
		if !ok || h.Cmp(q) != 0 {
			return false
		}
	}
	return true
}

// resizeNeedsRestart is true when resizing c to want changes a resource whose resize policy is
// RestartContainer (the default, NotRequired, resizes the running container).
func resizeNeedsRestart(c *corev1.Container, want corev1.ResourceRequirements) bool {
	for _, p := range c.ResizePolicy {
		if p.RestartPolicy != corev1.RestartContainer {
			continue
		}
		if quantityChanged(c.Resources.Requests, want.Requests, p.ResourceName) ||
			quantityChanged(c.Resources.Limits, want.Limits, p.ResourceName) {
			return true
		}
	}
	return false
}

func quantityChanged(have, want corev1.ResourceList, name corev1.ResourceName) bool {
	w, ok := want[name]
	if !ok {
		return false
	}
	h, ok := have[name]
	return !ok || h.Cmp(w) != 0
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
