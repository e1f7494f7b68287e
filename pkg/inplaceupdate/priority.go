package inplaceupdate

import (
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// barrierKeyPrefix prefixes the priority in the configMapKeyRef key of KRUISE_CONTAINER_BARRIER.
const barrierKeyPrefix = "p_"

// containerPriorities returns the launch priority of each container that has one; containers
// without a priority are absent. It reads the priorities the way OpenKruise's Pod webhook assigns
// them, so it gives the same answer whether or not the webhook has run:
//
//   - when any container has the injected KRUISE_CONTAINER_BARRIER env, its configMapKeyRef key
//     p_<N> is the priority (this is all OpenKruise's in-place update looks at);
//   - else, with annotation apps.kruise.io/container-launch-priority: Ordered and more than one
//     container, container i has priority -i (the first container is the highest);
//   - else, when some container has a non-zero KRUISE_CONTAINER_PRIORITY and not all containers
//     have the same one, every container has its value (0 when it has no such env);
//   - else no container has a priority.
func containerPriorities(pod *corev1.Pod) map[string]int {
	containers := pod.Spec.Containers
	prio := map[string]int{}
	injected := false
	for i := range containers {
		for _, e := range containers[i].Env {
			if e.Name != pub.ContainerLaunchBarrierEnvName || e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil {
				continue
			}
			injected = true
			// As in OpenKruise, a key that does not parse counts as priority 0.
			p, _ := strconv.Atoi(strings.TrimPrefix(e.ValueFrom.ConfigMapKeyRef.Key, barrierKeyPrefix))
			prio[containers[i].Name] = p
		}
	}
	if injected {
		return prio
	}
	if len(containers) > 1 && pod.Annotations[pub.ContainerLaunchPriorityKey] == pub.ContainerLaunchOrdered {
		for i := range containers {
			prio[containers[i].Name] = -i
		}
		return prio
	}
	values := make([]int, len(containers))
	for i := range containers {
		for _, e := range containers[i].Env {
			if e.Name == pub.ContainerLaunchPriorityEnvName {
				values[i], _ = strconv.Atoi(e.Value)
			}
		}
	}
	if len(containers) == 0 || !slices.ContainsFunc(values, func(v int) bool { return v != values[0] }) {
		return map[string]int{}
	}
	for i := range containers {
		prio[containers[i].Name] = values[i]
	}
	return prio
}

// selectBatch picks the containers of spec to update now, as OpenKruise does: every container
// without a launch priority plus the containers of the highest priority among those to update;
// then, repeatedly, every other container that reads (through env) a label or annotation that a
// chosen container's update sets, since that value changes for both at once.
func selectBatch(pod *corev1.Pod, spec *UpdateSpec) map[string]bool {
	toUpdate := spec.containerNames()
	prio := containerPriorities(pod)
	batch := map[string]bool{}
	var highest *int
	for i := range pod.Spec.Containers {
		name := pod.Spec.Containers[i].Name
		if !toUpdate[name] {
			continue
		}
		p, ok := prio[name]
		if !ok {
			batch[name] = true
		} else if highest == nil || p > *highest {
			highest = &p
		}
	}
	if highest != nil {
		for name := range toUpdate {
			if p, ok := prio[name]; ok && p == *highest {
				batch[name] = true
			}
		}
	}

	// Containers sharing a changed label or annotation go together.
	for grown := true; grown; {
		grown = false
		labels, annotations := map[string]bool{}, map[string]bool{}
		for name := range batch {
			for k := range spec.ContainerRefMetadata[name].Labels {
				labels[k] = true
			}
			for k := range spec.ContainerRefMetadata[name].Annotations {
				annotations[k] = true
			}
		}
		for name, meta := range spec.ContainerRefMetadata {
			if batch[name] {
				continue
			}
			if sharesKey(meta.Labels, labels) || sharesKey(meta.Annotations, annotations) {
				batch[name] = true
				grown = true
			}
		}
	}
	return batch
}

func sharesKey(m map[string]string, keys map[string]bool) bool {
	for k := range m {
		if keys[k] {
			return true
		}
	}
	return false
}
