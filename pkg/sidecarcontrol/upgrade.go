package sidecarcontrol

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
	"github.com/inplace-dev/inplace/pkg/updatesort"
)

// This file holds the SidecarSet controller's decisions after injection, as OpenKruise's
// (pkg/controller/sidecarset and pkg/control/sidecarcontrol): which Pods a SidecarSet counts,
// which are up to date and ready, and which to upgrade next.

// LeaveServiceAnnotation on a SidecarSet makes its in-place sidecar upgrades take the Pod out of
// service (InPlaceUpdateReady False, on Pods with that readiness gate) until the new sidecars run:
// for a sidecar whose restart cuts the Pod's traffic (a mesh proxy). Without it the Pod stays in
// service, as OpenKruise keeps it, which suits a sidecar the traffic does not go through (a log
// agent).
const LeaveServiceAnnotation = "apps.kruise.io/sidecarset-upgrade-leave-service"

// LeavesService is whether the SidecarSet asks its upgrades to take Pods out of service.
func LeavesService(set *appsv1alpha1.SidecarSet) bool {
	return set.Annotations[LeaveServiceAnnotation] == "true"
}

// IsInjected is true when the Pod records the SidecarSet in kruise.io/sidecarset-injected-list.
func IsInjected(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	for _, name := range strings.Split(pod.Annotations[appsv1alpha1.SidecarSetListAnnotation], ",") {
		if name == set.Name {
			return true
		}
	}
	return false
}

// IsMatched says whether the SidecarSet counts the Pod (OpenKruise's getMatchingPods): the Pod is
// active, selected (spec.selector, spec.namespace, spec.namespaceSelector against its namespace's
// labels), was injected by the SidecarSet and still has its containers (a hot-upgrade sidecar as
// its pair). Unlike injection, a paused injectionStrategy does not matter here.
func IsMatched(pod *corev1.Pod, namespaceLabels map[string]string, set *appsv1alpha1.SidecarSet) bool {
	unpaused := set
	if set.Spec.InjectionStrategy.Paused {
		unpaused = set.DeepCopy()
		unpaused.Spec.InjectionStrategy.Paused = false
	}
	if ok, _ := Matches(pod, namespaceLabels, unpaused); !ok || !IsInjected(pod, set) {
		return false
	}
	working := HotUpgradeWorkingContainers(pod)
	for i := range set.Spec.Containers {
		c := &set.Spec.Containers[i]
		if isHotUpgrade(c) {
			one, two := HotUpgradeContainerNames(c.Name)
			if _, ok := working[c.Name]; !ok || podContainer(pod, one) == nil || podContainer(pod, two) == nil {
				return false
			}
		} else if podContainer(pod, c.Name) == nil {
			return false
		}
	}
	return true
}

func isHotUpgrade(c *appsv1alpha1.SidecarContainer) bool {
	return c.UpgradeStrategy.UpgradeType == appsv1alpha1.SidecarContainerHotUpgrade
}

func podContainer(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// nativeSidecars are the SidecarSet's native sidecars (init containers with restartPolicy Always,
// not hot-upgraded) that the Pod has as native sidecars: the init containers its upgrade changes
// in place and whose readiness counts, beside its containers.
func nativeSidecars(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) []*appsv1alpha1.SidecarContainer {
	var out []*appsv1alpha1.SidecarContainer
	for i := range set.Spec.InitContainers {
		c := &set.Spec.InitContainers[i]
		if !inplaceupdate.IsNativeSidecar(&c.Container) || isHotUpgrade(c) {
			continue
		}
		if pc := inplaceupdate.FindContainer(pod.Spec.InitContainers, c.Name); pc != nil && inplaceupdate.IsNativeSidecar(pc) {
			out = append(out, c)
		}
	}
	return out
}

// podHash is the Pod's entry of the SidecarSet in kruise.io/sidecarset-hash (or -without-image).
func podHash(pod *corev1.Pod, set *appsv1alpha1.SidecarSet, key string) string {
	hashes, err := inplaceupdate.SidecarSetHashes(pod, key)
	if err != nil {
		return ""
	}
	return hashes[set.Name].Hash
}

// IsUpdated is true when the Pod's sidecars follow the SidecarSet's current hash (an upgrade to it
// may still be under way).
func IsUpdated(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	hash, err := revisionOf(set, false)
	return err == nil && podHash(pod, set, pub.SidecarSetHashKey) == hash
}

// IsUpgradable is true when the Pod's sidecars differ from the SidecarSet's at most in images
// (equal kruise.io/sidecarset-hash-without-image), so they can be upgraded in place.
func IsUpgradable(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	hash, err := revisionOf(set, true)
	return err == nil && podHash(pod, set, pub.SidecarSetHashWithoutImageKey) == hash
}

// IsConsistent is true when the Pod runs what its spec says for this SidecarSet: every container
// and native sidecar of the SidecarSet has a status and no upgrade of the SidecarSet's sidecars is
// under way (OpenKruise's IsPodStateConsistent: the imageIDs changed since the upgrade began).
func IsConsistent(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	if len(pod.Spec.Containers) != len(pod.Status.ContainerStatuses) {
		return false
	}
	for _, c := range nativeSidecars(pod, set) {
		if inplaceupdate.FindInitStatus(pod, c.Name) == nil {
			return false
		}
	}
	_, completed, ok := inplaceupdate.SidecarSetUpgradeState(pod, set.Name)
	return !ok || completed
}

// IsReady is OpenKruise's readiness of a Pod for a SidecarSet: running, Ready, and each idle
// container of a hot-upgrade pair runs the empty image; and, beyond OpenKruise, each native
// sidecar of the SidecarSet is ready. The kubelet counts a native sidecar's readiness in the Pod's
// Ready, but it writes the two in separate status fields: the Pod is not counted ready on a Ready
// condition that has not caught up with a native sidecar just restarted on its new image.
func IsReady(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	for _, c := range nativeSidecars(pod, set) {
		if s := inplaceupdate.FindInitStatus(pod, c.Name); s == nil || !s.Ready {
			return false
		}
	}
	working := HotUpgradeWorkingContainers(pod)
	for i := range set.Spec.Containers {
		c := &set.Spec.Containers[i]
		if !isHotUpgrade(c) {
			continue
		}
		if idle := podContainer(pod, idleContainer(c.Name, working)); idle != nil && idle.Image != c.UpgradeStrategy.HotUpgradeEmptyImage {
			return false
		}
	}
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// idleContainer is the container of a hot-upgrade pair that does not work now.
func idleContainer(name string, working map[string]string) string {
	one, two := HotUpgradeContainerNames(name)
	if working[name] == two {
		return one
	}
	return two
}

// ComputeStatus counts the SidecarSet's Pods (those IsMatched) as OpenKruise does: updated Pods
// follow its hash; ready Pods are consistent and ready; updatedReadyPods are both.
// latestRevision and collisionCount are the caller's.
func ComputeStatus(set *appsv1alpha1.SidecarSet, pods []*corev1.Pod) appsv1alpha1.SidecarSetStatus {
	st := appsv1alpha1.SidecarSetStatus{ObservedGeneration: set.Generation, MatchedPods: int32(len(pods))}
	for _, pod := range pods {
		updated := IsUpdated(pod, set)
		if updated {
			st.UpdatedPods++
		}
		if IsConsistent(pod, set) && IsReady(pod, set) {
			st.ReadyPods++
			if updated {
				st.UpdatedReadyPods++
			}
		}
	}
	return st
}

// Plan is what one pass of a SidecarSet's rolling upgrade does.
type Plan struct {
	// Upgrade are the Pods whose sidecars to upgrade now, in order.
	Upgrade []*corev1.Pod
	// NotUpgradable are the Pods, selected for the upgrade and not updated, whose sidecars differ
	// from the SidecarSet's in more than images: they keep their sidecars until recreated.
	NotUpgradable []*corev1.Pod
	// Waiting is how many Pods wait for their turn (partition, maxUnavailable, an upgrade or
	// another in-place update of the Pod still under way).
	Waiting int
}

// NextUpgrades decides which of the SidecarSet's Pods (those IsMatched) to upgrade now, as
// OpenKruise's GetNextUpgradePods: among the Pods not updated and selected by
// updateStrategy.selector, those IsUpgradable and not in the middle of an upgrade, in update order
// (not ready first, priorityStrategy, default order, scatterStrategy with "key=*" terms expanded to
// the values the Pods have), the last `partition` of them left out, then taken while the updated
// Pods not yet consistent and ready stay within maxUnavailable (default 1; a Pod that is not ready
// is upgraded without counting against it).
func NextUpgrades(set *appsv1alpha1.SidecarSet, pods []*corev1.Pod) (*Plan, error) {
	strategy := &set.Spec.UpdateStrategy
	selected := func(*corev1.Pod) bool { return true }
	if strategy.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(strategy.Selector)
		if err != nil {
			return nil, fmt.Errorf("spec.updateStrategy.selector: %w", err)
		}
		selected = func(p *corev1.Pod) bool { return sel.Matches(labels.Set(p.Labels)) }
	}
	plan := &Plan{}
	var waiting []*corev1.Pod
	for _, pod := range pods {
		if IsUpdated(pod, set) || !selected(pod) {
			continue
		}
		switch {
		case !IsUpgradable(pod, set):
			plan.NotUpgradable = append(plan.NotUpgradable, pod)
		case upgrading(pod, set):
			plan.Waiting++
		default:
			waiting = append(waiting, pod)
		}
	}
	ready := func(p *corev1.Pod) bool { return IsReady(p, set) }
	updatesort.Sort(waiting, strategy.PriorityStrategy, expandScatter(strategy.ScatterStrategy, pods), ready)

	partition := updatesort.Partition(strategy.Partition, len(pods))
	if len(waiting) <= partition {
		plan.Waiting += len(waiting)
		return plan, nil
	}
	plan.Waiting += partition
	waiting = waiting[:len(waiting)-partition]

	maxUnavailable := 1
	if strategy.MaxUnavailable != nil {
		n, err := intstr.GetScaledValueFromIntOrPercent(strategy.MaxUnavailable, len(pods), true)
		if err != nil {
			return nil, fmt.Errorf("spec.updateStrategy.maxUnavailable: %w", err)
		}
		maxUnavailable = n
	}
	unavailable := 0
	for _, pod := range pods {
		if IsUpdated(pod, set) && (!IsConsistent(pod, set) || !IsReady(pod, set)) {
			unavailable++
		}
	}
	for i, pod := range waiting {
		if !IsReady(pod, set) {
			plan.Upgrade = append(plan.Upgrade, pod)
			continue
		}
		if unavailable >= maxUnavailable {
			plan.Waiting += len(waiting) - i
			break
		}
		unavailable++
		plan.Upgrade = append(plan.Upgrade, pod)
	}
	return plan, nil
}

// upgrading is true when a ready sidecar of the SidecarSet is in the middle of an upgrade (to an
// older hash): the kubelet has not restarted it on its new image yet, and OpenKruise waits for
// that before the next upgrade (IsSidecarSetUpgradable's "consistent"). A sidecar of an unfinished
// upgrade that is not ready holds nothing: its image may never be pulled or start, and the next
// hash (the user's fix) must supersede that upgrade, as a CloneSet's next revision supersedes an
// in-place update that cannot finish.
func upgrading(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) bool {
	for _, name := range inplaceupdate.SidecarSetUpgradePending(pod, set.Name) {
		if containerReady(pod, name) {
			return true
		}
	}
	return false
}

// expandScatter turns scatter terms "key=*" into one term per value the Pods have for key.
func expandScatter(terms pub.UpdateScatterStrategy, pods []*corev1.Pod) pub.UpdateScatterStrategy {
	var out pub.UpdateScatterStrategy
	add := func(t pub.UpdateScatterTerm) {
		for _, o := range out {
			if o == t {
				return
			}
		}
		out = append(out, t)
	}
	for _, t := range terms {
		if t.Value != "*" {
			add(t)
			continue
		}
		for _, p := range pods {
			if v, ok := p.Labels[t.Key]; ok {
				add(pub.UpdateScatterTerm{Key: t.Key, Value: v})
			}
		}
	}
	return out
}

// UpgradeImages are the images to set for the Pod's cold-upgrade sidecars of the SidecarSet,
// its native sidecars included (pods/inplaceupdate sets those in spec.initContainers): container
// name to the SidecarSet's image, for those that differ. Plain init containers are left as they
// are: they ran before the app containers and never run again (their image is in the hash, so a
// change of it is recorded, as in OpenKruise, and changes nothing in the Pod).
func UpgradeImages(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) map[string]string {
	images := map[string]string{}
	for i := range set.Spec.Containers {
		c := &set.Spec.Containers[i]
		if isHotUpgrade(c) {
			continue
		}
		if pc := podContainer(pod, c.Name); pc != nil && pc.Image != c.Image {
			images[c.Name] = c.Image
		}
	}
	for _, c := range nativeSidecars(pod, set) {
		if pc := inplaceupdate.FindContainer(pod.Spec.InitContainers, c.Name); pc.Image != c.Image {
			images[c.Name] = c.Image
		}
	}
	return images
}

// Upgrade is what upgrading the Pod's sidecars of the SidecarSet writes: the new images of its
// cold-upgrade sidecars (UpgradeImages), the first step of the hot upgrade of its pairs
// (HotUpgrade), and the annotations spec.patchPodMetadata changes (PatchPodMetadata over the
// Pod's), as OpenKruise's upgrade writes them in the same update of the Pod. A change of
// patchPodMetadata alone changes no hash and reaches no Pod; it comes with the next upgrade. The
// error is a patch that does not apply to the Pod's annotation.
func Upgrade(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) (UpgradeChange, error) {
	change := HotUpgrade(pod, set)
	for name, image := range UpgradeImages(pod, set) {
		change.image(name, image)
	}
	patched, err := PatchedAnnotations(pod, set)
	if err != nil {
		return UpgradeChange{}, err
	}
	for k, v := range patched {
		change.annotate(k, v)
	}
	return change, nil
}

// PatchedAnnotations are the annotations of the Pod that the SidecarSet's spec.patchPodMetadata
// changes, with their new values.
func PatchedAnnotations(pod *corev1.Pod, set *appsv1alpha1.SidecarSet) (map[string]string, error) {
	if len(set.Spec.PatchPodMetadata) == 0 {
		return nil, nil
	}
	meta := pod.ObjectMeta.DeepCopy()
	if _, err := PatchPodMetadata(meta, set.Spec.PatchPodMetadata); err != nil {
		return nil, fmt.Errorf("spec.patchPodMetadata: %w", err)
	}
	changed := map[string]string{}
	for k, v := range meta.Annotations {
		if old, ok := pod.Annotations[k]; !ok || old != v {
			changed[k] = v
		}
	}
	return changed, nil
}

// UpgradableCondition is the Pod's SidecarSetUpgradable condition after recording whether this
// SidecarSet can upgrade it, as OpenKruise writes it: the message is a JSON object of SidecarSet
// name to true/false; the status is True (reason AllSidecarsetUpgradable) when every SidecarSet
// recorded there can, else False (reason UpdateImmutableField). changed is false when the Pod
// already has that condition. now stamps a transition.
func UpgradableCondition(pod *corev1.Pod, set *appsv1alpha1.SidecarSet, upgradable bool, now metav1.Time) (corev1.PodCondition, bool) {
	cond := corev1.PodCondition{Type: pub.SidecarSetUpgradable}
	var old *corev1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == pub.SidecarSetUpgradable {
			old = &pod.Status.Conditions[i]
			cond = *old.DeepCopy()
		}
	}
	kv := map[string]bool{}
	if cond.Message != "" {
		_ = json.Unmarshal([]byte(cond.Message), &kv) // an unreadable message starts afresh
	}
	kv[set.Name] = upgradable
	all := true
	for _, v := range kv {
		all = all && v
	}
	status, reason := corev1.ConditionTrue, "AllSidecarsetUpgradable"
	if !all {
		status, reason = corev1.ConditionFalse, "UpdateImmutableField"
	}
	msg, _ := json.Marshal(kv) // map keys sorted
	if old != nil && old.Status == status && old.Reason == reason && old.Message == string(msg) {
		return *old, false
	}
	if old == nil || old.Status != status {
		cond.LastTransitionTime = now
	}
	cond.Status, cond.Reason, cond.Message = status, reason, string(msg)
	return cond, true
}
