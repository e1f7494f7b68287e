package sidecarcontrol

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

func TestMatches(t *testing.T) {
	nsLabels := map[string]string{"kubernetes.io/metadata.name": "default", "env": "prod"}
	cases := []struct {
		name       string
		set        *appsv1alpha1.SidecarSet
		pod        func(*corev1.Pod)
		nsLabels   map[string]string
		want       bool
		wantReason string
	}{
		{name: "docs sample", set: nil, want: true},
		{name: "other labels", set: sidecarSet("s", nil), pod: func(p *corev1.Pod) { p.Labels = map[string]string{"app": "x"} },
			wantReason: "pod labels do not match spec.selector app=sample"},
		{name: "paused", set: sidecarSet("s", func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true }),
			wantReason: "sidecarset s is paused"},
		{name: "nil selector", set: sidecarSet("s", func(s *appsv1alpha1.SidecarSet) { s.Spec.Selector = nil }),
			wantReason: "selects no pods"},
		{name: "empty selector", set: sidecarSet("s", func(s *appsv1alpha1.SidecarSet) { s.Spec.Selector = &metav1.LabelSelector{} }),
			wantReason: "selects no pods"},
		{name: "namespace", set: sidecarSet("s", func(s *appsv1alpha1.SidecarSet) { s.Spec.Namespace = "default" }), want: true},
		{name: "empty pod namespace is default", set: sidecarSet("s", func(s *appsv1alpha1.SidecarSet) { s.Spec.Namespace = "default" }),
			pod: func(p *corev1.Pod) { p.Namespace = "" }, want: true},
		{name: "other namespace", set: sidecarSet("s", func(s *appsv1alpha1.SidecarSet) { s.Spec.Namespace = "kube-system" }),
			wantReason: "injects only into namespace kube-system (spec.namespace), not default"},
		{name: "namespace selector", set: sidecarSet("s", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}
		}), nsLabels: nsLabels, want: true},
		{name: "namespace selector mismatch", set: sidecarSet("s", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"env": "dev"}}
		}), nsLabels: nsLabels, wantReason: "namespace default does not match spec.namespaceSelector env=dev"},
		{name: "terminated pod", set: sidecarSet("s", nil), pod: func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded },
			wantReason: "terminated or being deleted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := tc.set
			if set == nil {
				set = sample(t)
			}
			pod := samplePod()
			if tc.pod != nil {
				tc.pod(pod)
			}
			got, reason := Matches(pod, tc.nsLabels, set)
			if got != tc.want || !strings.Contains(reason, tc.wantReason) || (got && reason != "") {
				t.Errorf("Matches = %v, %q; want %v, reason containing %q", got, reason, tc.want, tc.wantReason)
			}
		})
	}
}

func TestMatchingSortsByName(t *testing.T) {
	b, a := sidecarSet("b", nil), sidecarSet("a", nil)
	paused := sidecarSet("c", func(s *appsv1alpha1.SidecarSet) { s.Spec.InjectionStrategy.Paused = true })
	got := Matching(samplePod(), nil, []*appsv1alpha1.SidecarSet{paused, b, a})
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("Matching = %v", got)
	}
}
