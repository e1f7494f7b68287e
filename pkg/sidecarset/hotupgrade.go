package sidecarset

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
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
