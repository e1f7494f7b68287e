package sidecarcontrol

import (
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// sample is the docs' sample SidecarSet (artifacts/examples/sidecarset.yaml), defaulted as the
// API server stores it.
func sample(t *testing.T) *appsv1alpha1.SidecarSet {
	t.Helper()
	f, err := os.Open("../../artifacts/examples/sidecarset.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := &appsv1alpha1.SidecarSet{}
	if err := yaml.NewYAMLOrJSONDecoder(f, 4096).Decode(s); err != nil {
		t.Fatal(err)
	}
	appsv1alpha1.SetDefaults_SidecarSet(s)
	return s
}

// sidecarSet is a defaulted SidecarSet selecting app=sample.
func sidecarSet(name string, mutate func(*appsv1alpha1.SidecarSet)) *appsv1alpha1.SidecarSet {
	s := &appsv1alpha1.SidecarSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1alpha1.SidecarSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "sample"}},
		},
	}
	if mutate != nil {
		mutate(s)
	}
	appsv1alpha1.SetDefaults_SidecarSet(s)
	return s
}

func sidecar(name string, mutate func(*appsv1alpha1.SidecarContainer)) appsv1alpha1.SidecarContainer {
	c := appsv1alpha1.SidecarContainer{Container: corev1.Container{Name: name, Image: name + ":v1"}}
	if mutate != nil {
		mutate(&c)
	}
	return c
}

func samplePod(containers ...corev1.Container) *corev1.Pod {
	if len(containers) == 0 {
		containers = []corev1.Container{{Name: "main", Image: "app:v1"}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "default", Labels: map[string]string{"app": "sample"}},
		Spec:       corev1.PodSpec{Containers: containers},
	}
}

func names(cs []corev1.Container) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func container(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }
