package inplaceupdate

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/launchpriority"
)

// selectBatch picks the containers of spec to update now, as OpenKruise does: every container
// without a launch priority plus the containers of the highest priority among those to update;
// then, repeatedly, every other container that reads (through env) a label or annotation that a
// chosen container's update sets, since that value changes for both at once.
func selectBatch(pod *corev1.Pod, spec *UpdateSpec) map[string]bool {
	toUpdate := spec.containerNames()
	prio := launchpriority.Priorities(pod)
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
