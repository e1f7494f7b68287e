package sidecarcontrol

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// Matches reports whether sidecarSet injects into pod and, when it does not, why, in words meant
// for the user (the inject subresource answers 422 with it). namespaceLabels are the labels of the
// Pod's namespace; they matter only to a SidecarSet with a namespaceSelector.
//
// As OpenKruise's Pod webhook: a Pod that is terminated or being deleted is not injected; a
// paused SidecarSet (injectionStrategy.paused) injects nothing; spec.namespace, when set, must be
// the Pod's namespace (an empty Pod namespace counts as "default"); spec.namespaceSelector, when
// set, must match the namespace's labels; spec.selector must be set, not empty, and match the
// Pod's labels.
func Matches(pod *corev1.Pod, namespaceLabels map[string]string, sidecarSet *appsv1alpha1.SidecarSet) (bool, string) {
	if !isActivePod(pod) {
		return false, fmt.Sprintf("pod %s is terminated or being deleted", pod.Name)
	}
	spec := &sidecarSet.Spec
	if spec.InjectionStrategy.Paused {
		return false, fmt.Sprintf("sidecarset %s is paused (spec.injectionStrategy.paused)", sidecarSet.Name)
	}
	namespace := podNamespace(pod)
	if spec.Namespace != "" && spec.Namespace != namespace {
		return false, fmt.Sprintf("sidecarset %s injects only into namespace %s (spec.namespace), not %s",
			sidecarSet.Name, spec.Namespace, namespace)
	}
	if spec.NamespaceSelector != nil {
		selector, err := metav1.LabelSelectorAsSelector(spec.NamespaceSelector)
		if err != nil {
			return false, fmt.Sprintf("sidecarset %s has an invalid spec.namespaceSelector: %v", sidecarSet.Name, err)
		}
		if !selector.Matches(labels.Set(namespaceLabels)) {
			return false, fmt.Sprintf("namespace %s does not match spec.namespaceSelector %s of sidecarset %s",
				namespace, selector, sidecarSet.Name)
		}
	}
	if spec.Selector == nil || len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		return false, fmt.Sprintf("sidecarset %s has no spec.selector and selects no pods", sidecarSet.Name)
	}
	selector, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err != nil {
		return false, fmt.Sprintf("sidecarset %s has an invalid spec.selector: %v", sidecarSet.Name, err)
	}
	if !selector.Matches(labels.Set(pod.Labels)) {
		return false, fmt.Sprintf("pod labels do not match spec.selector %s of sidecarset %s", selector, sidecarSet.Name)
	}
	return true, ""
}

// Matching returns the SidecarSets of all that inject into pod (see Matches), sorted by name: the
// order Inject applies them in. A base SidecarSet is left out when one of its canaries
// (IsCanary) also matches the Pod: the Pod gets the canary's sidecars instead.
func Matching(pod *corev1.Pod, namespaceLabels map[string]string, all []*appsv1alpha1.SidecarSet) []*appsv1alpha1.SidecarSet {
	var matched []*appsv1alpha1.SidecarSet
	for _, s := range all {
		if ok, _ := Matches(pod, namespaceLabels, s); ok {
			matched = append(matched, s)
		}
	}
	matched = withoutCanaryBases(matched)
	sortByName(matched)
	return matched
}

func sortByName(sidecarSets []*appsv1alpha1.SidecarSet) {
	slices.SortStableFunc(sidecarSets, func(a, b *appsv1alpha1.SidecarSet) int { return strings.Compare(a.Name, b.Name) })
}

// podNamespace is the Pod's namespace, "default" when empty (a Pod being created may not carry
// it yet), as OpenKruise.
func podNamespace(pod *corev1.Pod) string {
	if pod.Namespace == "" {
		return metav1.NamespaceDefault
	}
	return pod.Namespace
}

// isActivePod is kubernetes' controller.IsPodActive, which OpenKruise checks before injecting.
func isActivePod(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed &&
		pod.DeletionTimestamp == nil
}
