package sidecarcontrol

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
)

// meshSet is SidecarSet "mesh" with the hot-upgrade sidecar envoy on image, empty image empty:1.
func meshSet(image, resourceVersion string) *appsv1alpha1.SidecarSet {
	s := sidecarSet("mesh", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.Containers = []appsv1alpha1.SidecarContainer{sidecar("envoy", func(c *appsv1alpha1.SidecarContainer) {
			c.Image = image
			c.UpgradeStrategy = appsv1alpha1.SidecarContainerUpgradeStrategy{
				UpgradeType: appsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:1"}
		})}
	})
	s.ResourceVersion = resourceVersion
	return s
}

// hotPod is a running, ready Pod injected by meshSet("envoy:v1"), every container ready.
func hotPod(t *testing.T) *corev1.Pod {
	t.Helper()
	res, err := Inject(samplePod(), []*appsv1alpha1.SidecarSet{meshSet("envoy:v1", "10")}, metav1.Now())
	if err != nil {
		t.Fatal(err)
	}
	pod := res.Pod
	setRunning(pod)
	return pod
}

// setRunning makes every container of the Pod run its spec image, ready, and the Pod Ready.
func setRunning(pod *corev1.Pod) {
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	for _, c := range pod.Spec.Containers {
		pod.Status.ContainerStatuses = append(pod.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image + "@id", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})
	}
}

// apply writes a change to the Pod as the in-place engine would (images, annotations), and marks
// the changed containers not ready and the Pod not Ready, as right after the kubelet restarts them.
func apply(pod *corev1.Pod, change UpgradeChange) {
	for name, image := range change.Images {
		podContainer(pod, name).Image = image
		for i := range pod.Status.ContainerStatuses {
			if pod.Status.ContainerStatuses[i].Name == name {
				pod.Status.ContainerStatuses[i].Ready = false
			}
		}
		pod.Status.Conditions[0].Status = corev1.ConditionFalse
	}
	for k, v := range change.Annotations {
		pod.Annotations[k] = v
	}
}

func TestHotUpgradeAlternates(t *testing.T) {
	pod := hotPod(t)
	if HotUpgradeResetDue(pod, meshSet("envoy:v1", "10")) {
		t.Fatal("a freshly injected pair (idle on the empty image) needs no reset")
	}
	if change := HotUpgrade(pod, meshSet("envoy:v1", "10")); !change.IsEmpty() {
		t.Fatalf("the working container already runs the image: want no change, got %+v", change)
	}

	// v1 -> v2: into envoy-2 (on the empty image), which works at once; envoy-1 keeps running.
	v2 := meshSet("envoy:v2", "20")
	change := HotUpgrade(pod, v2)
	want := map[string]string{
		WorkingHotUpgradeContainerAnnotation: `{"envoy":"envoy-2"}`,
		VersionAnnotation("envoy-2"):         "20",
		VersionAltAnnotation("envoy-2"):      "1",
		VersionAltAnnotation("envoy-1"):      "20",
	}
	if len(change.Images) != 1 || change.Images["envoy-2"] != "envoy:v2" {
		t.Errorf("images %v, want envoy-2=envoy:v2 only", change.Images)
	}
	checkAnnotations(t, change.Annotations, want)
	if got, err := Upgrade(pod, v2); err != nil || got.Images["envoy-2"] != "envoy:v2" || len(got.Images) != 1 {
		t.Errorf("Upgrade = %+v, %v, want the hot step", got, err)
	}
	apply(pod, change)

	// Not yet: envoy-2 is not ready.
	if HotUpgradeResetDue(pod, v2) {
		t.Error("reset due while the new container is not ready")
	}
	setRunning(pod)
	// The engine records the upgrade under way until the new image runs: not consistent.
	pod.Annotations["kruise.io/sidecarset-inplace-update-state"] = `{"mesh":{"revision":"h2","updateTimestamp":"2026-01-01T00:00:00Z","lastContainerStatuses":{"envoy-2":{"imageID":"empty:1@id"}}}}`
	if HotUpgradeResetDue(pod, v2) {
		t.Error("reset due while the upgrade is not completed")
	}
	pod.Annotations["kruise.io/sidecarset-inplace-update-state"] = `{"mesh":{"revision":"h2","updateTimestamp":"2026-01-01T00:00:00Z","completedTimestamp":"2026-01-01T00:00:02Z"}}`
	if !HotUpgradeResetDue(pod, v2) {
		t.Fatal("reset not due once envoy-2 runs and the Pod is ready")
	}
	if IsReady(pod, v2) {
		t.Error("a Pod whose idle container does not run the empty image is not ready for the SidecarSet")
	}
	reset := HotUpgradeReset(pod, v2)
	if len(reset.Images) != 1 || reset.Images["envoy-1"] != "empty:1" {
		t.Errorf("reset images %v, want envoy-1 back to empty:1", reset.Images)
	}
	checkAnnotations(t, reset.Annotations, map[string]string{VersionAnnotation("envoy-1"): "0", VersionAltAnnotation("envoy-2"): "0"})
	apply(pod, reset)
	setRunning(pod)
	if HotUpgradeResetDue(pod, v2) || !IsReady(pod, v2) {
		t.Error("after the reset: no reset due, and the Pod is ready")
	}

	// v2 -> v3 goes the other way: into envoy-1.
	v3 := meshSet("envoy:v3", "30")
	change = HotUpgrade(pod, v3)
	if change.Images["envoy-1"] != "envoy:v3" || len(change.Images) != 1 {
		t.Errorf("images %v, want envoy-1=envoy:v3", change.Images)
	}
	checkAnnotations(t, change.Annotations, map[string]string{
		WorkingHotUpgradeContainerAnnotation: `{"envoy":"envoy-1"}`,
		VersionAnnotation("envoy-1"):         "30",
		VersionAltAnnotation("envoy-1"):      "20",
		VersionAltAnnotation("envoy-2"):      "30",
	})
}

// Without an empty container, the one not ready gets the image; with both ready, the one not working.
func TestHotUpgradeTargetWithoutEmptyContainer(t *testing.T) {
	pod := hotPod(t)
	podContainer(pod, "envoy-2").Image = "envoy:v0" // both run a real image
	set := meshSet("envoy:v2", "20")
	if got := HotUpgrade(pod, set).Images; got["envoy-2"] != "envoy:v2" {
		t.Errorf("both ready: want the one not working (envoy-2), got %v", got)
	}
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == "envoy-1" {
			pod.Status.ContainerStatuses[i].Ready = false
		}
	}
	if got := HotUpgrade(pod, set).Images; got["envoy-1"] != "envoy:v2" {
		t.Errorf("envoy-1 not ready: want it upgraded, got %v", got)
	}
}

func checkAnnotations(t *testing.T, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("annotations %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, got[k], v)
		}
	}
}
