package sidecarcontrol

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// Conflicts says why SidecarSet a cannot be stored beside SidecarSet b, as OpenKruise's SidecarSet
// validation (validateSidecarConflict) judges; nil when they may coexist. Two SidecarSets
// conflict only when they may select the same Pods — their namespaces overlap and their
// selectors overlap (SelectorsOverlap) — and then when:
//
//   - an init container, or a container, of a has the name of one of b's (whatever its content:
//     both would be injected into one Pod);
//   - a volume of a has the name of one of b's with different content;
//   - an annotation is patched by both with a policy other than Retain, and either overwrites it.
//
// Namespaces overlap unless both spec.namespace are set and differ, both namespaceSelectors are
// set and do not overlap, or one SidecarSet's spec.namespace is excluded by the other's
// namespaceSelector on the label kubernetes.io/metadata.name (OpenKruise reads the namespace's
// labels there; this pure check knows only that label, which every namespace carries).
func Conflicts(a, b *appsv1alpha1.SidecarSet) []string {
	if a.Name == b.Name || !namespacesOverlap(a, b) || !SelectorsOverlap(a.Spec.Selector, b.Spec.Selector) {
		return nil
	}
	var out []string
	for _, c := range a.Spec.InitContainers {
		if slices.ContainsFunc(b.Spec.InitContainers, func(o appsv1alpha1.SidecarContainer) bool { return o.Name == c.Name }) {
			out = append(out, fmt.Sprintf("init container %s already exists in sidecarset %s", c.Name, b.Name))
		}
	}
	for _, c := range a.Spec.Containers {
		if slices.ContainsFunc(b.Spec.Containers, func(o appsv1alpha1.SidecarContainer) bool { return o.Name == c.Name }) {
			out = append(out, fmt.Sprintf("container %s already exists in sidecarset %s", c.Name, b.Name))
		}
	}
	for i := range a.Spec.Volumes {
		v := &a.Spec.Volumes[i]
		for j := range b.Spec.Volumes {
			if o := &b.Spec.Volumes[j]; o.Name == v.Name && !equality.Semantic.DeepEqual(v, o) {
				out = append(out, fmt.Sprintf("volume %s is in conflict with sidecarset %s", v.Name, b.Name))
			}
		}
	}
	others := map[string]appsv1alpha1.SidecarSetPatchPolicyType{}
	for _, p := range b.Spec.PatchPodMetadata {
		if !isRetain(p.PatchPolicy) {
			for k := range p.Annotations {
				others[k] = p.PatchPolicy
			}
		}
	}
	for _, p := range a.Spec.PatchPodMetadata {
		if isRetain(p.PatchPolicy) {
			continue
		}
		for _, k := range sortedKeys(p.Annotations) {
			if other, ok := others[k]; ok && (p.PatchPolicy == appsv1alpha1.SidecarSetOverwritePatchPolicy ||
				other == appsv1alpha1.SidecarSetOverwritePatchPolicy) {
				out = append(out, fmt.Sprintf("annotation %s is in conflict with sidecarset %s", k, b.Name))
			}
		}
	}
	return out
}

func isRetain(p appsv1alpha1.SidecarSetPatchPolicyType) bool {
	return p == appsv1alpha1.SidecarSetRetainPatchPolicy || p == ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func namespacesOverlap(a, b *appsv1alpha1.SidecarSet) bool {
	na, nb := a.Spec.Namespace, b.Spec.Namespace
	sa, sb := a.Spec.NamespaceSelector, b.Spec.NamespaceSelector
	switch {
	case na != "" && nb != "" && na != nb:
		return false
	case sa != nil && sb != nil && !selectorsOverlap(sa, sb):
		return false
	case na != "" && sb != nil && !selectorsOverlap(namespaceNameSelector(na), sb):
		return false
	case nb != "" && sa != nil && !selectorsOverlap(namespaceNameSelector(nb), sa):
		return false
	}
	return true
}

// namespaceNameSelector is what is known of a namespace's labels from its name alone.
func namespaceNameSelector(name string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{corev1LabelMetadataName: name}}
}

// corev1LabelMetadataName is the label kube-apiserver sets on every namespace to its name.
const corev1LabelMetadataName = "kubernetes.io/metadata.name"

// SelectorsOverlap reports whether two Pod selectors of SidecarSets may select a same Pod, as
// OpenKruise's util.IsSelectorOverlapping judges: they are disjoint only when one requires of a
// key something the other's requirement on the same key excludes (a=b and a=c; a in [b] and
// a notin [b]; a exists and a doesnotexist; ...). A nil or empty selector selects no Pod (see
// Matches), so it overlaps nothing.
func SelectorsOverlap(s1, s2 *metav1.LabelSelector) bool {
	if isEmptySelector(s1) || isEmptySelector(s2) {
		return false
	}
	return selectorsOverlap(s1, s2)
}

func isEmptySelector(s *metav1.LabelSelector) bool {
	return s == nil || len(s.MatchLabels)+len(s.MatchExpressions) == 0
}

func selectorsOverlap(s1, s2 *metav1.LabelSelector) bool {
	return !disjoint(s1, s2) && !disjoint(s2, s1)
}

// disjoint is OpenKruise's isDisjoint: s1's matchLabels and In/Exists requirements as the values
// each key may take, checked against each requirement of s2.
func disjoint(s1, s2 *metav1.LabelSelector) bool {
	const all = "ALL" // the key exists with any value
	values := map[string][]string{}
	for k, v := range s1.MatchLabels {
		values[k] = []string{v}
	}
	for _, r := range s1.MatchExpressions {
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			values[r.Key] = append(values[r.Key], r.Values...)
		case metav1.LabelSelectorOpExists:
			values[r.Key] = []string{all}
		}
	}
	for k, v := range s2.MatchLabels {
		if vs, ok := values[k]; ok && !slices.Contains(vs, all) && !slices.Contains(vs, v) {
			return true
		}
	}
	for _, r := range s2.MatchExpressions {
		vs, ok := values[r.Key]
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			if ok && !slices.Contains(vs, all) && !slices.ContainsFunc(r.Values, func(v string) bool { return slices.Contains(vs, v) }) {
				return true
			}
		case metav1.LabelSelectorOpNotIn:
			if ok && !slices.ContainsFunc(vs, func(v string) bool { return !slices.Contains(r.Values, v) }) {
				return true
			}
		case metav1.LabelSelectorOpExists:
			if !ok {
				return true
			}
		case metav1.LabelSelectorOpDoesNotExist:
			if ok {
				return true
			}
		}
	}
	return false
}
