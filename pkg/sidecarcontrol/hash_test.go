package sidecarcontrol

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"testing"

	kruisev1alpha1 "github.com/openkruise/kruise-api/apps/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// kruiseHash is OpenKruise's sidecarcontrol.SidecarSetHash (pkg/control/sidecarcontrol/hash.go)
// over kruise-api's own v1alpha1 types, written out here to compare with Hash.
func kruiseHash(s *kruisev1alpha1.SidecarSet, withoutImage bool) string {
	s = s.DeepCopy()
	if withoutImage {
		for i := range s.Spec.Containers {
			s.Spec.Containers[i].Image = ""
		}
		for i := range s.Spec.InitContainers {
			s.Spec.InitContainers[i].Image = ""
		}
	}
	m := map[string]interface{}{"containers": s.Spec.Containers}
	for _, c := range s.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			m["initContainers"] = s.Spec.InitContainers
		}
	}
	data, _ := json.Marshal(m)
	return rand.SafeEncodeString(fmt.Sprintf("%x", sha256.Sum256(data)))
}

func TestHashEqualsOpenKruise(t *testing.T) {
	rich := sidecarSet("rich", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{
			sidecar("init", nil),
			sidecar("native", func(c *appsv1alpha1.SidecarContainer) { c.RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways) }),
		}
		s.Spec.Containers = []appsv1alpha1.SidecarContainer{
			sidecar("mesh", func(c *appsv1alpha1.SidecarContainer) {
				c.UpgradeStrategy = appsv1alpha1.SidecarContainerUpgradeStrategy{
					UpgradeType: appsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:v1"}
				c.ShareVolumePolicy.Type = appsv1alpha1.ShareVolumePolicyEnabled
				c.TransferEnv = []appsv1alpha1.TransferEnvVar{{SourceContainerName: "main", EnvNames: []string{"A", "B"}}}
				c.Env = []corev1.EnvVar{{Name: "X", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
				c.Ports = []corev1.ContainerPort{{ContainerPort: 15000}}
			}),
		}
	})
	initOnly := sidecarSet("init-only", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{sidecar("init", nil)}
	})
	for _, tc := range []struct {
		name string
		set  *appsv1alpha1.SidecarSet
	}{{"docs sample", sample(t)}, {"hot upgrade, native sidecar, transferEnv", rich}, {"plain init containers are not hashed", initOnly}} {
		t.Run(tc.name, func(t *testing.T) {
			// The same object as OpenKruise's types: through JSON, as the wire carries it.
			data, err := json.Marshal(tc.set)
			if err != nil {
				t.Fatal(err)
			}
			theirs := &kruisev1alpha1.SidecarSet{}
			if err := json.Unmarshal(data, theirs); err != nil {
				t.Fatal(err)
			}
			for _, withoutImage := range []bool{false, true} {
				hash := Hash
				if withoutImage {
					hash = HashWithoutImage
				}
				got, err := hash(tc.set)
				if err != nil {
					t.Fatal(err)
				}
				if want := kruiseHash(theirs, withoutImage); got != want {
					t.Errorf("withoutImage=%v: hash %s, OpenKruise's %s", withoutImage, got, want)
				}
			}
		})
	}
}

func TestHashProperties(t *testing.T) {
	s := sample(t)
	h, _ := Hash(s)
	hw, _ := HashWithoutImage(s)
	newImage := s.DeepCopy()
	newImage.Spec.Containers[0].Image = "inplace.local/app:v2"
	h2, _ := Hash(newImage)
	hw2, _ := HashWithoutImage(newImage)
	if h == h2 || hw != hw2 {
		t.Errorf("image change: hash %s -> %s (must change), without image %s -> %s (must not)", h, h2, hw, hw2)
	}
	if s.Spec.Containers[0].Image != "inplace.local/app:v1" {
		t.Errorf("HashWithoutImage modified its argument")
	}
	// Only containers count: a selector or volume change keeps the hash.
	other := s.DeepCopy()
	other.Spec.Selector.MatchLabels["tier"] = "x"
	other.Spec.Volumes = nil
	if h3, _ := Hash(other); h3 != h {
		t.Errorf("non-container change altered the hash")
	}
	initOnly := sidecarSet("i", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{sidecar("init", nil)}
	})
	empty := sidecarSet("e", nil)
	if a, b := mustHash(t, initOnly), mustHash(t, empty); a != b {
		t.Errorf("init containers without a native sidecar must not count: %s != %s", a, b)
	}
}

func mustHash(t *testing.T, s *appsv1alpha1.SidecarSet) string {
	t.Helper()
	h, err := Hash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
