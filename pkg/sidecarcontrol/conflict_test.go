package sidecarcontrol

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

func TestConflicts(t *testing.T) {
	selector := func(s *appsv1alpha1.SidecarSet, kv ...string) {
		s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{}}
		for i := 0; i < len(kv); i += 2 {
			s.Spec.Selector.MatchLabels[kv[i]] = kv[i+1]
		}
	}
	withSidecar1 := func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers = []appsv1alpha1.SidecarContainer{sidecar("sidecar1", nil)}
	}
	cases := []struct {
		name string
		b    *appsv1alpha1.SidecarSet
		want []string
	}{
		{name: "same container name, same selector", b: sidecarSet("other", withSidecar1),
			want: []string{"container sidecar1 already exists in sidecarset other"}},
		{name: "itself", b: func() *appsv1alpha1.SidecarSet { s := sidecarSet("log-agent", withSidecar1); return s }()},
		{name: "disjoint selectors", b: sidecarSet("other", func(s *appsv1alpha1.SidecarSet) { withSidecar1(s); selector(s, "app", "x") })},
		{name: "overlapping selectors (other keys)", b: sidecarSet("other", func(s *appsv1alpha1.SidecarSet) { withSidecar1(s); selector(s, "app", "sample", "tier", "x") }),
			want: []string{"container sidecar1 already exists in sidecarset other"}},
		{name: "selector In overlapping", b: sidecarSet("other", func(s *appsv1alpha1.SidecarSet) {
			withSidecar1(s)
			s.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "sample"}}}}
		}), want: []string{"container sidecar1 already exists in sidecarset other"}},
		{name: "selector NotIn excluding", b: sidecarSet("other", func(s *appsv1alpha1.SidecarSet) {
			withSidecar1(s)
			s.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"sample"}}}}
		})},
		{name: "other namespace", b: sidecarSet("other", func(s *appsv1alpha1.SidecarSet) { withSidecar1(s); s.Spec.Namespace = "ns2" })},
		{name: "namespace selector excluding by name", b: sidecarSet("other", func(s *appsv1alpha1.SidecarSet) {
			withSidecar1(s)
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "ns2"}}
		})},
		{name: "same volume name, same content", b: sidecarSet("other", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.Volumes = []corev1.Volume{{Name: "log-volume", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		})},
		{name: "same volume name, other content", b: sidecarSet("other", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.Volumes = []corev1.Volume{{Name: "log-volume", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/log"}}}}
		}), want: []string{"volume log-volume is in conflict with sidecarset other"}},
		{name: "overwritten annotation", b: sidecarSet("other", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.PatchPodMetadata = []appsv1alpha1.SidecarSetPatchPodMetadata{{PatchPolicy: appsv1alpha1.SidecarSetOverwritePatchPolicy, Annotations: map[string]string{"k": "2"}}}
		}), want: []string{"annotation k is in conflict with sidecarset other"}},
		{name: "both merge the annotation", b: sidecarSet("other", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.PatchPodMetadata = []appsv1alpha1.SidecarSetPatchPodMetadata{{PatchPolicy: appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{"j": "{}"}}}
		})},
	}
	a := sample(t)
	a.Spec.Namespace = "default"
	a.Spec.PatchPodMetadata = []appsv1alpha1.SidecarSetPatchPodMetadata{
		{PatchPolicy: appsv1alpha1.SidecarSetMergePatchJsonPatchPolicy, Annotations: map[string]string{"k": "{}", "j": "{}"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Conflicts(a, tc.b); !slices.Equal(got, tc.want) {
				t.Errorf("Conflicts = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSelectorsOverlap(t *testing.T) {
	sel := func(labels map[string]string, exprs ...metav1.LabelSelectorRequirement) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: labels, MatchExpressions: exprs}
	}
	req := func(key string, op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values}
	}
	cases := []struct {
		name   string
		s1, s2 *metav1.LabelSelector
		want   bool
	}{
		{"a=b, c=d", sel(map[string]string{"a": "b"}), sel(map[string]string{"c": "d"}), true},
		{"a=b, a=c", sel(map[string]string{"a": "b"}), sel(map[string]string{"a": "c"}), false},
		{"a in [b,c], a notin [b,c]", sel(nil, req("a", metav1.LabelSelectorOpIn, "b", "c")), sel(nil, req("a", metav1.LabelSelectorOpNotIn, "b", "c", "d")), false},
		{"a exists, a doesnotexist", sel(nil, req("a", metav1.LabelSelectorOpExists)), sel(nil, req("a", metav1.LabelSelectorOpDoesNotExist)), false},
		{"a exists, a=b", sel(nil, req("a", metav1.LabelSelectorOpExists)), sel(map[string]string{"a": "b"}), true},
		{"nil selects nothing", nil, sel(map[string]string{"a": "b"}), false},
		{"empty selects nothing", sel(nil), sel(map[string]string{"a": "b"}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := SelectorsOverlap(tc.s1, tc.s2); got != tc.want {
				t.Errorf("SelectorsOverlap = %v, want %v", got, tc.want)
			}
		})
	}
}
