package v1beta1

import (
	"encoding/json"
	"fmt"
	"maps"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/conversion"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
)

// SidecarSet conversion between the hub and v1beta1. The hub holds the union of both versions;
// v1beta1 lacks v1alpha1's spec.namespace and has spec.customVersion where v1alpha1 (and the hub)
// have the label apps.kruise.io/sidecarset-custom-version.
//
// OpenKruise turns a namespace into the namespaceSelector {kubernetes.io/metadata.name: <ns>} and
// forgets it. inplace does the same and also keeps the namespace (and the selector it replaced) in
// V1alpha1FieldsAnnotation, so that the object read back at v1alpha1 is the one written there. A
// v1beta1 client that changes the namespaceSelector means the selector: the carried namespace is
// then dropped.

const (
	// V1alpha1FieldsAnnotation carries, on an object read at v1beta1 (and in etcd, where
	// SidecarSets are stored at v1beta1), the v1alpha1 spec fields v1beta1 has no place for, as
	// JSON. Written back unchanged, it restores them; the hub, and so v1alpha1, never has it.
	V1alpha1FieldsAnnotation = "inplace.dev/v1alpha1-fields"
	// SidecarSetCustomVersionLabel is where v1alpha1 keeps what v1beta1 calls spec.customVersion.
	SidecarSetCustomVersionLabel = "apps.kruise.io/sidecarset-custom-version"
	// namespaceNameLabel is the label kube-apiserver gives every namespace, its name.
	namespaceNameLabel = "kubernetes.io/metadata.name"
)

// sidecarSetV1alpha1Fields are the v1alpha1 spec fields of a SidecarSet v1beta1 cannot hold: the
// namespace, and the namespaceSelector a v1alpha1 object had beside it (validation rejects both
// together, but the conversion does not depend on it).
type sidecarSetV1alpha1Fields struct {
	Namespace         string                `json:"namespace"`
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// namespaceSelectorFor is the v1beta1 selector of the one namespace ns, as OpenKruise converts it.
func namespaceSelectorFor(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{namespaceNameLabel: ns}}
}

// Convert_apps_SidecarSet_To_v1beta1_SidecarSet converts the hub to v1beta1: the custom-version
// label becomes spec.customVersion, a namespace becomes a namespaceSelector and is carried in
// V1alpha1FieldsAnnotation.
func Convert_apps_SidecarSet_To_v1beta1_SidecarSet(in *apps.SidecarSet, out *SidecarSet, s conversion.Scope) error {
	if err := autoConvert_apps_SidecarSet_To_v1beta1_SidecarSet(in, out, s); err != nil {
		return err
	}
	if v, ok := in.Labels[SidecarSetCustomVersionLabel]; ok {
		out.Spec.CustomVersion = v
		out.Labels = withoutKey(out.Labels, SidecarSetCustomVersionLabel)
	}
	if in.Spec.Namespace == "" {
		return nil
	}
	out.Spec.NamespaceSelector = namespaceSelectorFor(in.Spec.Namespace)
	data, err := json.Marshal(sidecarSetV1alpha1Fields{Namespace: in.Spec.Namespace, NamespaceSelector: in.Spec.NamespaceSelector})
	if err != nil {
		return fmt.Errorf("encoding the v1alpha1 fields of SidecarSet %s: %w", in.Name, err)
	}
	// The generated conversion shares the annotation map with in: write into a copy.
	out.Annotations = maps.Clone(out.Annotations)
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[V1alpha1FieldsAnnotation] = string(data)
	return nil
}

// Convert_v1beta1_SidecarSet_To_apps_SidecarSet converts v1beta1 to the hub: spec.customVersion
// becomes the custom-version label, and the namespace carried in V1alpha1FieldsAnnotation comes
// back if the namespaceSelector is still the one it was converted to.
func Convert_v1beta1_SidecarSet_To_apps_SidecarSet(in *SidecarSet, out *apps.SidecarSet, s conversion.Scope) error {
	if err := autoConvert_v1beta1_SidecarSet_To_apps_SidecarSet(in, out, s); err != nil {
		return err
	}
	if in.Spec.CustomVersion != "" {
		out.Labels = maps.Clone(out.Labels)
		if out.Labels == nil {
			out.Labels = map[string]string{}
		}
		out.Labels[SidecarSetCustomVersionLabel] = in.Spec.CustomVersion
	}
	data, ok := in.Annotations[V1alpha1FieldsAnnotation]
	if !ok {
		return nil
	}
	var extra sidecarSetV1alpha1Fields
	if err := json.Unmarshal([]byte(data), &extra); err != nil {
		return fmt.Errorf("metadata.annotations[%s]: not the v1alpha1 fields this server wrote: %w", V1alpha1FieldsAnnotation, err)
	}
	out.Annotations = withoutKey(out.Annotations, V1alpha1FieldsAnnotation)
	if extra.Namespace != "" && apiequality.Semantic.DeepEqual(in.Spec.NamespaceSelector, namespaceSelectorFor(extra.Namespace)) {
		out.Spec.Namespace = extra.Namespace
		out.Spec.NamespaceSelector = extra.NamespaceSelector
	}
	return nil
}

// Convert_apps_SidecarSetSpec_To_v1beta1_SidecarSetSpec converts the fields v1beta1 has; the
// namespace is handled by Convert_apps_SidecarSet_To_v1beta1_SidecarSet.
func Convert_apps_SidecarSetSpec_To_v1beta1_SidecarSetSpec(in *apps.SidecarSetSpec, out *SidecarSetSpec, s conversion.Scope) error {
	return autoConvert_apps_SidecarSetSpec_To_v1beta1_SidecarSetSpec(in, out, s)
}

// Convert_v1beta1_SidecarSetSpec_To_apps_SidecarSetSpec converts the fields the hub has in its
// spec; customVersion is handled by Convert_v1beta1_SidecarSet_To_apps_SidecarSet.
func Convert_v1beta1_SidecarSetSpec_To_apps_SidecarSetSpec(in *SidecarSetSpec, out *apps.SidecarSetSpec, s conversion.Scope) error {
	return autoConvert_v1beta1_SidecarSetSpec_To_apps_SidecarSetSpec(in, out, s)
}

// withoutKey returns a copy of m without key, nil if nothing is left: the generated conversion
// shares metadata maps with its input, which must not change.
func withoutKey(m map[string]string, key string) map[string]string {
	if _, ok := m[key]; !ok {
		return m
	}
	m = maps.Clone(m)
	delete(m, key)
	if len(m) == 0 {
		return nil
	}
	return m
}
