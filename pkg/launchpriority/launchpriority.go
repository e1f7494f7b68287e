// Package launchpriority is container launch priority, as OpenKruise defines it: the containers of
// a Pod start in order of priority, highest first. A Pod asks for it with the annotation
// apps.kruise.io/container-launch-priority: Ordered (the order of spec.containers) or with env
// KRUISE_CONTAINER_PRIORITY (an integer, 0 when absent) in its containers.
//
// Two barriers hold a container back until its turn. The postStart barrier (poststart.go,
// AssignBarrier), by default, costs no object per Pod: a postStart hook that inplace-daemon
// answers. OpenKruise's ConfigMap barrier is for the Pods the hook cannot order exactly, with the
// gate ContainerLaunchPostStartBarrier off, and for the Pods created with it before:
//
// at creation the Pod webhook (Assign) gives each container env KRUISE_CONTAINER_BARRIER, read
// from key p_<priority> of ConfigMap <pod>-barrier. The kubelet cannot start a container whose
// env refers to a missing key (CreateContainerConfigError) and tries again at its next sync of the
// Pod, so a container waits until that key exists. inplace-controller (Next) creates the ConfigMap,
// owned by the Pod, and adds the keys one priority at a time, each once every container of a higher
// priority is ready, then marks the Pod apps.kruise.io/container-launch-priority-completed.
//
// Everything here is pure logic over a Pod and its barrier ConfigMap.
package launchpriority

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

const (
	// keyPrefix prefixes the priority in the barrier ConfigMap's keys: p_10, p_0, p_-1.
	keyPrefix = "p_"
	// barrierSuffix makes a Pod's name into its barrier ConfigMap's.
	barrierSuffix = "-barrier"
)

// Key is the barrier ConfigMap key that releases the containers of one priority.
func Key(priority int) string { return keyPrefix + strconv.Itoa(priority) }

// BarrierName is the name of the Pod's barrier ConfigMap.
func BarrierName(podName string) string { return podName + barrierSuffix }

// barrierPriority returns the priority of a container that has the injected
// KRUISE_CONTAINER_BARRIER env. As in OpenKruise, a key that does not parse counts as 0.
func barrierPriority(c *corev1.Container) (int, bool) {
	for _, e := range c.Env {
		if e.Name != pub.ContainerLaunchBarrierEnvName || e.ValueFrom == nil || e.ValueFrom.ConfigMapKeyRef == nil {
			continue
		}
		p, _ := strconv.Atoi(strings.TrimPrefix(e.ValueFrom.ConfigMapKeyRef.Key, keyPrefix))
		return p, true
	}
	return 0, false
}

// HasBarrier is true when some container of the Pod waits on a barrier key.
func HasBarrier(pod *corev1.Pod) bool {
	for i := range pod.Spec.Containers {
		if _, ok := barrierPriority(&pod.Spec.Containers[i]); ok {
			return true
		}
	}
	return false
}

// Priorities returns the launch priority of each container that has one; containers without a
// priority are absent. It gives the same answer whether or not the webhook has run:
//
//   - when any container has the injected KRUISE_CONTAINER_BARRIER env, its key p_<N> is the
//     priority (all OpenKruise's in-place update looks at);
//   - else, with annotation apps.kruise.io/container-launch-priority: Ordered and more than one
//     container, container i has priority -i (the first container is the highest);
//   - else, when some container has a non-zero KRUISE_CONTAINER_PRIORITY and not all containers
//     have the same one, every container has its value (0 when it has no such env, or one that
//     is not an integer);
//   - else no container has a priority.
func Priorities(pod *corev1.Pod) map[string]int {
	prio := map[string]int{}
	for i := range pod.Spec.Containers {
		if p, ok := barrierPriority(&pod.Spec.Containers[i]); ok {
			prio[pod.Spec.Containers[i].Name] = p
		}
	}
	if len(prio) > 0 {
		return prio
	}
	values, _ := wanted(pod)
	for i, v := range values {
		prio[pod.Spec.Containers[i].Name] = v
	}
	return prio
}

// wanted is the priority of every container the Pod asks for, in container order, nil when it asks
// for none; err names the first KRUISE_CONTAINER_PRIORITY that is not an integer (taken as 0).
func wanted(pod *corev1.Pod) ([]int, error) {
	containers := pod.Spec.Containers
	if len(containers) < 2 {
		return nil, nil
	}
	values := make([]int, len(containers))
	if pod.Annotations[pub.ContainerLaunchPriorityKey] == pub.ContainerLaunchOrdered {
		for i := range values {
			values[i] = -i
		}
		return values, nil
	}
	var firstErr error
	for i := range containers {
		for j, e := range containers[i].Env {
			if e.Name != pub.ContainerLaunchPriorityEnvName {
				continue
			}
			v, err := strconv.Atoi(e.Value)
			if err != nil && firstErr == nil {
				firstErr = fmt.Errorf("spec.containers[%d].env[%d].value: %s must be an integer, not %q",
					i, j, pub.ContainerLaunchPriorityEnvName, e.Value)
			}
			values[i] = v
		}
	}
	if !slices.ContainsFunc(values, func(v int) bool { return v != values[0] }) {
		return nil, firstErr
	}
	return values, firstErr
}

// Assign prepares a Pod being created for ordered launch, as OpenKruise's Pod webhook does: when
// the Pod asks for launch priorities (see Priorities), every container gets env
// KRUISE_CONTAINER_BARRIER from key p_<its priority> of the Pod's barrier ConfigMap. A Pod with
// only generateName is given its name here, since the ConfigMap's name depends on it. It says
// whether it changed the Pod; a Pod already prepared is left as it is. warning, when not empty,
// says what of the Pod's request was ignored (a priority that is not an integer counts as 0).
func Assign(pod *corev1.Pod) (changed bool, warning string) {
	if HasBarrier(pod) {
		return false, ""
	}
	values, err := wanted(pod)
	if err != nil {
		warning = err.Error() + "; taken as 0"
	}
	if values == nil {
		return false, warning
	}
	if pod.Name == "" && pod.GenerateName != "" {
		pod.Name = names.SimpleNameGenerator.GenerateName(pod.GenerateName)
	}
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Env = append(pod.Spec.Containers[i].Env, corev1.EnvVar{
			Name: pub.ContainerLaunchBarrierEnvName,
			ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: BarrierName(pod.Name)},
				Key:                  Key(values[i]),
			}},
		})
	}
	return true, warning
}

// Completed is true when the Pod is marked as having released every priority.
func Completed(pod *corev1.Pod) bool {
	return pod.Annotations[pub.ContainerLaunchPriorityCompletedKey] == "true"
}

// Step is what Next decides for a Pod.
type Step struct {
	// Release is the barrier key to add now, empty when none.
	Release string
	// Complete is true when the Pod is to be marked completed (after Release is added).
	Complete bool
}

// Next decides the next step of a Pod's ordered launch, given the data of its barrier ConfigMap
// (nil when it does not exist yet): the highest priority among the containers not ready yet is
// released, and once the lowest one is, the launch is complete. A container counts as ready when
// the kubelet says so: running, and past its readiness and startup probes if it has them.
func Next(pod *corev1.Pod, barrier map[string]string) Step {
	if Completed(pod) || !HasBarrier(pod) {
		return Step{}
	}
	ready := map[string]bool{}
	for _, s := range pod.Status.ContainerStatuses {
		ready[s.Name] = s.Ready
	}
	var waiting []int
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if p, ok := barrierPriority(c); ok && !ready[c.Name] {
			waiting = append(waiting, p)
		}
	}
	if len(waiting) == 0 {
		return Step{Complete: true}
	}
	lowest, highest := slices.Min(waiting), slices.Max(waiting)
	if _, ok := barrier[Key(lowest)]; ok {
		return Step{Complete: true}
	}
	step := Step{Complete: lowest == highest}
	if _, ok := barrier[Key(highest)]; !ok {
		step.Release = Key(highest)
	}
	return step
}
