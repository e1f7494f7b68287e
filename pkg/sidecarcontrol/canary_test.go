package sidecarcontrol

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// The cases of OpenKruise master's TestIsCanarySidecarSet.
func TestIsCanary(t *testing.T) {
	cases := []struct {
		name        string
		annotations map[string]string
		want        bool
		wantBase    string
	}{
		{name: "canary with base", annotations: map[string]string{
			appsv1alpha1.SidecarSetCanaryAnnotation: "true", appsv1alpha1.SidecarSetBaseAnnotation: "base"}, want: true, wantBase: "base"},
		{name: "canary without base", annotations: map[string]string{appsv1alpha1.SidecarSetCanaryAnnotation: "true"}},
		{name: "canary with empty base", annotations: map[string]string{
			appsv1alpha1.SidecarSetCanaryAnnotation: "true", appsv1alpha1.SidecarSetBaseAnnotation: ""}},
		{name: "canary false, base set", annotations: map[string]string{
			appsv1alpha1.SidecarSetCanaryAnnotation: "false", appsv1alpha1.SidecarSetBaseAnnotation: "base"}, wantBase: "base"},
		{name: "only base", annotations: map[string]string{appsv1alpha1.SidecarSetBaseAnnotation: "base"}, wantBase: "base"},
		{name: "no annotations"},
		{name: "canary 1 is not true", annotations: map[string]string{
			appsv1alpha1.SidecarSetCanaryAnnotation: "1", appsv1alpha1.SidecarSetBaseAnnotation: "base"}, wantBase: "base"},
		{name: "canary TRUE: case matters", annotations: map[string]string{
			appsv1alpha1.SidecarSetCanaryAnnotation: "TRUE", appsv1alpha1.SidecarSetBaseAnnotation: "base"}, wantBase: "base"},
		{name: "canary True: case matters", annotations: map[string]string{
			appsv1alpha1.SidecarSetCanaryAnnotation: "True", appsv1alpha1.SidecarSetBaseAnnotation: "base"}, wantBase: "base"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &appsv1alpha1.SidecarSet{ObjectMeta: metav1.ObjectMeta{Name: "s", Annotations: tc.annotations}}
			got, base := IsCanary(s)
			if got != tc.want || base != tc.wantBase {
				t.Errorf("IsCanary = %v, %q; want %v, %q", got, base, tc.want, tc.wantBase)
			}
		})
	}
}

func canaryOf(name, base string, mutate func(*appsv1alpha1.SidecarSet)) *appsv1alpha1.SidecarSet {
	return sidecarSet(name, func(s *appsv1alpha1.SidecarSet) {
		s.Annotations = map[string]string{appsv1alpha1.SidecarSetCanaryAnnotation: "true", appsv1alpha1.SidecarSetBaseAnnotation: base}
		s.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample", "track": "canary"}}
		if mutate != nil {
			mutate(s)
		}
	})
}

func setNames(sets []*appsv1alpha1.SidecarSet) []string {
	var out []string
	for _, s := range sets {
		out = append(out, s.Name)
	}
	return out
}

// A Pod selected by a base and its canary gets the canary only; a Pod only the base selects gets the
// base; an inactive canary (paused, or not selecting the Pod) leaves the base in place; other
// SidecarSets are not affected; the canary marker is case-sensitive.
func TestMatchingCanaryWinsOverBase(t *testing.T) {
	base := sidecarSet("base", nil)
	other := sidecarSet("other", nil)
	canary := canaryOf("canary", "base", nil)
	pod := func(track string) map[string]string {
		l := map[string]string{"app": "sample"}
		if track != "" {
			l["track"] = track
		}
		return l
	}
	cases := []struct {
		name   string
		labels map[string]string
		sets   []*appsv1alpha1.SidecarSet
		want   []string
	}{
		{name: "pod matched by both gets the canary", labels: pod("canary"), sets: []*appsv1alpha1.SidecarSet{base, canary, other},
			want: []string{"canary", "other"}},
		{name: "listing order does not matter", labels: pod("canary"), sets: []*appsv1alpha1.SidecarSet{canary, other, base},
			want: []string{"canary", "other"}},
		{name: "pod only the base selects gets the base", labels: pod(""), sets: []*appsv1alpha1.SidecarSet{base, canary, other},
			want: []string{"base", "other"}},
		{name: "paused canary leaves the base", labels: pod("canary"),
			sets: []*appsv1alpha1.SidecarSet{base, canaryOf("canary", "base", func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true })},
			want: []string{"base"}},
		{name: "canary of another base leaves this base", labels: pod("canary"), sets: []*appsv1alpha1.SidecarSet{base, canaryOf("canary", "elsewhere", nil)},
			want: []string{"base", "canary"}},
		{name: "canary annotation TRUE is not a canary", labels: pod("canary"),
			sets: []*appsv1alpha1.SidecarSet{base, canaryOf("canary", "base", func(s *appsv1alpha1.SidecarSet) {
				s.Annotations[appsv1alpha1.SidecarSetCanaryAnnotation] = "TRUE"
			})},
			want: []string{"base", "canary"}},
		{name: "two canaries of one base", labels: pod("canary"), sets: []*appsv1alpha1.SidecarSet{base, canary, canaryOf("canary2", "base", nil)},
			want: []string{"canary", "canary2"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := samplePod()
			p.Labels = tc.labels
			if got := setNames(Matching(p, nil, tc.sets)); !slices.Equal(got, tc.want) {
				t.Errorf("Matching = %v; want %v", got, tc.want)
			}
		})
	}
}
