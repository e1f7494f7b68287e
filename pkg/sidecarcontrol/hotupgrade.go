package sidecarcontrol

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

const (
	// WorkingHotUpgradeContainerAnnotation is the Pod annotation recording, as a JSON object,
	// which container of each hot-upgrade pair works: SidecarSet container name -> Pod container
	// name, e.g. {"mesh":"mesh-1"}.
	WorkingHotUpgradeContainerAnnotation = pub.SidecarSetWorkingHotUpgradeContainerKey
	// VersionEnvName is the env var of a hot-upgrade container carrying its version, read from
	// the Pod annotation version.sidecarset.kruise.io/<container>.
	VersionEnvName = "SIDECARSET_VERSION"
	// VersionAltEnvName is the env var carrying the version of the other container of the pair,
	// read from the Pod annotation versionalt.sidecarset.kruise.io/<container>.
	VersionAltEnvName = "SIDECARSET_VERSION_ALT"
)

// HotUpgradeContainerNames are the names of a hot-upgrade pair: <name>-1 and <name>-2.
func HotUpgradeContainerNames(name string) (string, string) {
	return name + "-1", name + "-2"
}

// VersionAnnotation is the Pod annotation holding a hot-upgrade container's version.
func VersionAnnotation(container string) string {
	return pub.SidecarSetVersionAnnotationPrefix + container
}

// VersionAltAnnotation is the Pod annotation holding the version of the other container of a
// hot-upgrade container's pair.
func VersionAltAnnotation(container string) string {
	return pub.SidecarSetVersionAltAnnotationPrefix + container
}

// HotUpgradeWorkingContainers reads WorkingHotUpgradeContainerAnnotation; a missing or invalid
// value reads as no pair (as OpenKruise).
func HotUpgradeWorkingContainers(pod *corev1.Pod) map[string]string {
	working := map[string]string{}
	if value, ok := pod.Annotations[WorkingHotUpgradeContainerAnnotation]; ok {
		if err := json.Unmarshal([]byte(value), &working); err != nil {
			return map[string]string{}
		}
	}
	return working
}

// hotUpgradePair turns a prepared HotUpgrade container into the pair OpenKruise injects:
// <name>-1, the working container, and <name>-2, the idle one running hotUpgradeEmptyImage; both
// get SIDECARSET_VERSION and SIDECARSET_VERSION_ALT read from their version annotations, which are
// set to 1/0 for <name>-1 and 0/1 for <name>-2 ("1": first injected; "0": the empty container).
// The working-container annotation records <name>-1.
func (b *builder) hotUpgradePair(c *appsv1alpha1.SidecarContainer) []*appsv1alpha1.SidecarContainer {
	name1, name2 := HotUpgradeContainerNames(c.Name)
	c1, c2 := c.DeepCopy(), c.DeepCopy()
	c1.Name, c2.Name = name1, name2
	c2.Image = c.UpgradeStrategy.HotUpgradeEmptyImage
	setVersionEnv(&c1.Container)
	setVersionEnv(&c2.Container)
	b.annotations[VersionAnnotation(name1)] = "1"
	b.annotations[VersionAltAnnotation(name1)] = "0"
	b.annotations[VersionAnnotation(name2)] = "0"
	b.annotations[VersionAltAnnotation(name2)] = "1"
	b.hotUpgradeWorking[c.Name] = name1
	data, _ := json.Marshal(b.hotUpgradeWorking) // a map[string]string always encodes
	b.annotations[WorkingHotUpgradeContainerAnnotation] = string(data)
	return []*appsv1alpha1.SidecarContainer{c1, c2}
}

func setVersionEnv(c *corev1.Container) {
	for _, e := range []struct{ name, annotation string }{
		{VersionEnvName, VersionAnnotation(c.Name)},
		{VersionAltEnvName, VersionAltAnnotation(c.Name)},
	} {
		c.Env = append(c.Env, corev1.EnvVar{Name: e.name, ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.annotations['%s']", e.annotation)},
		}})
	}
}

// UpgradeChange is what one step of a SidecarSet's upgrade writes to a Pod: container images and
// (for a hot upgrade) the pair's annotations.
type UpgradeChange struct {
	Images      map[string]string
	Annotations map[string]string
}

// IsEmpty is true when the change writes nothing.
func (c *UpgradeChange) IsEmpty() bool {
	return len(c.Images) == 0 && len(c.Annotations) == 0
}

func (c *UpgradeChange) image(container, image string) {
	if c.Images == nil {
		c.Images = map[string]string{}
	}
	c.Images[container] = image
}

func (c *UpgradeChange) annotate(key, value string) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[key] = value
}

// HotUpgrade is the first step of the hot upgrade of the Pod's pairs to the SidecarSet's images,
// as OpenKruise takes it: for each HotUpgrade sidecar whose working container does not run the
// SidecarSet's image, the image goes into the container to upgrade (the one on the empty image;
// else the one not ready; else the one not working), which is recorded as the working container
// at once (the sidecar hands its traffic over when it starts, reading SIDECARSET_VERSION and
// SIDECARSET_VERSION_ALT); its version becomes the SidecarSet's resourceVersion and the other
// container's alt version too. The other container keeps running until HotUpgradeReset.
func HotUpgrade(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) UpgradeChange {
	var change UpgradeChange
	working := HotUpgradeWorkingContainers(pod)
	changed := false
	for i := range set.Spec.Containers {
		c := &set.Spec.Containers[i]
		if !isHotUpgrade(c) {
			continue
		}
		target, other := containerToHotUpgrade(c, pod)
		tc, oc := podContainer(pod, target), podContainer(pod, other)
		if tc == nil || oc == nil || oc.Image == c.Image {
			continue
		}
		change.image(target, c.Image)
		working[c.Name] = target
		changed = true
		change.annotate(VersionAnnotation(target), set.ResourceVersion)
		change.annotate(VersionAltAnnotation(target), pod.Annotations[VersionAnnotation(other)])
		change.annotate(VersionAltAnnotation(other), set.ResourceVersion)
	}
	if changed {
		data, _ := json.Marshal(working) // a map[string]string always encodes
		change.annotate(WorkingHotUpgradeContainerAnnotation, string(data))
	}
	return change
}

// containerToHotUpgrade picks the container of the pair to put the new image into, and the other.
func containerToHotUpgrade(c *appsv1alpha1.SidecarContainer, pod *corev1.Pod) (string, string) {
	one, two := HotUpgradeContainerNames(c.Name)
	empty := c.UpgradeStrategy.HotUpgradeEmptyImage
	if pc := podContainer(pod, one); pc != nil && pc.Image == empty {
		return one, two
	}
	if pc := podContainer(pod, two); pc != nil && pc.Image == empty {
		return two, one
	}
	ready1, ready2 := containerReady(pod, one), containerReady(pod, two)
	if ready1 && !ready2 {
		return two, one
	}
	if !ready1 && ready2 {
		return one, two
	}
	if HotUpgradeWorkingContainers(pod)[c.Name] == one {
		return two, one
	}
	return one, two
}

func containerReady(pod *corev1.Pod, name string) bool {
	for _, s := range pod.Status.ContainerStatuses {
		if s.Name == name {
			return s.Ready
		}
	}
	// A native sidecar's readiness is among the init containers'.
	s := inplaceupdate.FindInitStatus(pod, name)
	return s != nil && s.Ready
}

// HotUpgradeResetDue tells whether the Pod's hot upgrade is ready for its second step
// (OpenKruise's flip): an idle container of a pair does not run the empty image, the upgrade
// finished (the new container runs its image), and every container but the idle ones is ready.
func HotUpgradeResetDue(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	idle := map[string]bool{}
	upgrading := false
	working := HotUpgradeWorkingContainers(pod)
	for i := range set.Spec.Containers {
		c := &set.Spec.Containers[i]
		if !isHotUpgrade(c) {
			continue
		}
		name := idleContainer(c.Name, working)
		idle[name] = true
		if pc := podContainer(pod, name); pc != nil && pc.Image != c.UpgradeStrategy.HotUpgradeEmptyImage {
			upgrading = true
		}
	}
	if !upgrading || !IsConsistent(pod, set) {
		return false
	}
	for _, s := range pod.Status.ContainerStatuses {
		if !idle[s.Name] && !s.Ready {
			return false
		}
	}
	return true
}

// HotUpgradeReset is the second step of a hot upgrade: each idle container of a pair goes back to
// the empty image, with version "0", and the working container's alt version "0".
func HotUpgradeReset(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) UpgradeChange {
	var change UpgradeChange
	working := HotUpgradeWorkingContainers(pod)
	for i := range set.Spec.Containers {
		c := &set.Spec.Containers[i]
		if !isHotUpgrade(c) {
			continue
		}
		idle := idleContainer(c.Name, working)
		pc := podContainer(pod, idle)
		if pc == nil || pc.Image == c.UpgradeStrategy.HotUpgradeEmptyImage {
			continue
		}
		change.image(idle, c.UpgradeStrategy.HotUpgradeEmptyImage)
		change.annotate(VersionAnnotation(idle), "0")
		one, two := HotUpgradeContainerNames(c.Name)
		work := one
		if idle == one {
			work = two
		}
		change.annotate(VersionAltAnnotation(work), "0")
	}
	return change
}
