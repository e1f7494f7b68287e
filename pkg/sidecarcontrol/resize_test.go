package sidecarcontrol

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// A resize of the app recomputes the resourcesPolicy sidecar of the SidecarSet that injected the
// Pod at its current hash: only the quantities that change, only while the hashes agree.
func TestResizedSidecars(t *testing.T) {
	set := sidecarSet("mesh", func(s *appsv1alpha1.SidecarSet) {
		s.Annotations = map[string]string{appsv1alpha1.SidecarSetHashAnnotation: "h1"}
		s.Spec.Containers = []appsv1alpha1.SidecarContainer{sidecar("proxy", func(c *appsv1alpha1.SidecarContainer) {
			c.ResourcesPolicy = policy(appsv1alpha1.TargetContainersModeSum, "^app$", "cpu*50%", "200Mi", "cpu*50%", "100Mi")
		})}
	})
	pod := func(appResources, podHash string) *corev1.Pod {
		p := samplePod(app("app", appResources), app("proxy", "100m,200Mi,50m,100Mi"))
		hashes, _ := json.Marshal(map[string]pub.SidecarSetUpgradeSpec{"mesh": {SidecarSetName: "mesh", Hash: podHash}})
		p.Annotations = map[string]string{appsv1alpha1.SidecarSetHashAnnotation: string(hashes)}
		return p
	}
	other := sidecarSet("other", nil)
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		sets []*appsv1alpha1.SidecarSet
		want map[string]string
	}{
		{"app resized", pod("400m,400Mi,200m,200Mi", "h1"), []*appsv1alpha1.SidecarSet{other, set}, map[string]string{"proxy": "200m,,100m,"}},
		{"app as injected", pod("200m,400Mi,100m,200Mi", "h1"), []*appsv1alpha1.SidecarSet{set}, nil},
		{"pod injected at another hash", pod("400m,400Mi,200m,200Mi", "h0"), []*appsv1alpha1.SidecarSet{set}, nil},
		{"pod not injected by it", pod("400m,400Mi,200m,200Mi", "h1"), []*appsv1alpha1.SidecarSet{other}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ResizedSidecars(tc.pod, tc.sets)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("resized sidecars %v, want %v", got, tc.want)
			}
			for name, want := range tc.want {
				if !sameResources(got[name], res(want)) {
					t.Errorf("%s: resources %v, want %s", name, got[name], want)
				}
			}
		})
	}
}
