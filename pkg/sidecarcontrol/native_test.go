package sidecarcontrol

import (
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	appsv1alpha1 "github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/inplaceupdate"
)

// nativeSet is SidecarSet "mesh" with the native sidecar proxy (restartPolicy Always) on image and
// the plain init container setup on setupImage.
func nativeSet(image, setupImage string, mutate func(*appsv1alpha1.SidecarSet)) *appsv1alpha1.SidecarSet {
	return sidecarSet("mesh", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.InitContainers = []appsv1alpha1.SidecarContainer{
			sidecar("proxy", func(c *appsv1alpha1.SidecarContainer) {
				c.Image = image
				c.RestartPolicy = ptrTo(corev1.ContainerRestartPolicyAlways)
			}),
			sidecar("setup", func(c *appsv1alpha1.SidecarContainer) { c.Image = setupImage }),
		}
		if mutate != nil {
			mutate(s)
		}
	})
}

// nativePod is a running, ready Pod injected by nativeSet("proxy:v1", "setup:v1"): setup completed,
// proxy running and ready.
func nativePod(t *testing.T) *corev1.Pod {
	t.Helper()
	res, err := Inject(samplePod(), []*appsv1alpha1.SidecarSet{nativeSet("proxy:v1", "setup:v1", nil)}, metav1.Now())
	if err != nil {
		t.Fatal(err)
	}
	pod := res.Pod
	setRunning(pod)
	for _, c := range pod.Spec.InitContainers {
		s := corev1.ContainerStatus{Name: c.Name, Image: c.Image, ImageID: c.Image + "@id"}
		if c.Name == "proxy" {
			s.Ready, s.State.Running = true, &corev1.ContainerStateRunning{}
		} else {
			s.State.Terminated = &corev1.ContainerStateTerminated{Reason: "Completed"}
		}
		pod.Status.InitContainerStatuses = append(pod.Status.InitContainerStatuses, s)
	}
	return pod
}

// An image-only change of a native sidecar (or of a plain init container beside one) changes the
// hash and keeps the hash without images: it is an in-place upgrade, not a recreate-only change
// (as OpenKruise hashes it). Any other change of a native sidecar is recreate-only.
func TestNativeSidecarHash(t *testing.T) {
	base := nativeSet("proxy:v1", "setup:v1", nil)
	for name, tc := range map[string]struct {
		set     *appsv1alpha1.SidecarSet
		inPlace bool
	}{
		"native sidecar image": {nativeSet("proxy:v2", "setup:v1", nil), true},
		"plain init image":     {nativeSet("proxy:v1", "setup:v2", nil), true},
		"native sidecar env": {nativeSet("proxy:v1", "setup:v1", func(s *appsv1alpha1.SidecarSet) {
			s.Spec.InitContainers[0].Env = []corev1.EnvVar{{Name: "MODE", Value: "x"}}
		}), false},
	} {
		h1, h2 := mustHash(t, base), mustHash(t, tc.set)
		w1, _ := HashWithoutImage(base)
		w2, _ := HashWithoutImage(tc.set)
		if h1 == h2 || (w1 == w2) != tc.inPlace {
			t.Errorf("%s: hash %s -> %s (must change), without image %s -> %s (equal: want %v)", name, h1, h2, w1, w2, tc.inPlace)
		}
	}
}

// The rollout of a native sidecar's new image: the Pod is upgradable, the new image is the native
// sidecar's (the plain init container keeps its image), and the Pod counts ready only while the
// native sidecar is ready.
func TestNativeSidecarUpgrade(t *testing.T) {
	pod := nativePod(t)
	v2 := nativeSet("proxy:v2", "setup:v2", nil)
	if IsUpdated(pod, v2) || !IsUpgradable(pod, v2) || !IsMatched(pod, nil, v2) {
		t.Fatalf("updated=%v upgradable=%v matched=%v, want a matched Pod to upgrade in place",
			IsUpdated(pod, v2), IsUpgradable(pod, v2), IsMatched(pod, nil, v2))
	}
	if got := UpgradeImages(pod, v2); !maps.Equal(got, map[string]string{"proxy": "proxy:v2"}) {
		t.Errorf("images %v, want the native sidecar's only", got)
	}
	plan, err := NextUpgrades(v2, []*corev1.Pod{pod})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Upgrade) != 1 || len(plan.NotUpgradable) != 0 {
		t.Fatalf("plan %+v, want the Pod upgraded", plan)
	}
	if st := ComputeStatus(v2, []*corev1.Pod{pod}); st.MatchedPods != 1 || st.ReadyPods != 1 || st.UpdatedPods != 0 {
		t.Errorf("status %+v, want 1 matched and ready, none updated", st)
	}

	// Upgrade begun (image in spec.initContainers, state recorded), the kubelet not yet there: the
	// next pass waits for the ready native sidecar to restart, and the Pod is updated, not ready.
	markUpgraded(t, pod, v2)
	inplaceupdate.FindContainer(pod.Spec.InitContainers, "proxy").Image = "proxy:v2"
	pod.Annotations[pub.SidecarSetInPlaceUpdateStateKey] = `{"mesh":{"revision":"h2","updateTimestamp":"2026-01-01T00:00:00Z",` +
		`"lastContainerStatuses":{"proxy":{"imageID":"proxy:v1@id"}},"containerBatchesRecord":[{"timestamp":"2026-01-01T00:00:00Z","containers":["proxy"]}]}}`
	if !upgrading(pod, v2) {
		t.Error("upgrading=false while the ready native sidecar still runs proxy:v1")
	}
	if st := ComputeStatus(v2, []*corev1.Pod{pod}); st.UpdatedPods != 1 || st.ReadyPods != 0 {
		t.Errorf("status %+v, want updated and not ready (upgrade under way)", st)
	}
	if len(UpgradeImages(pod, v2)) != 0 {
		t.Errorf("images %v after the upgrade began, want none", UpgradeImages(pod, v2))
	}

	// The kubelet restarted the native sidecar; the Pod's Ready may still lag its readiness.
	s := inplaceupdate.FindInitStatus(pod, "proxy")
	s.Image, s.ImageID, s.Ready = "proxy:v2", "proxy:v2@id", false
	if IsReady(pod, v2) {
		t.Error("ready while the native sidecar is not")
	}
	s.Ready = true
	pod.Annotations[pub.SidecarSetInPlaceUpdateStateKey] = `{"mesh":{"revision":"h2","updateTimestamp":"2026-01-01T00:00:00Z",` +
		`"completedTimestamp":"2026-01-01T00:00:03Z","lastContainerStatuses":{"proxy":{"imageID":"proxy:v1@id"}}}}`
	if st := ComputeStatus(v2, []*corev1.Pod{pod}); st.UpdatedPods != 1 || st.ReadyPods != 1 || st.UpdatedReadyPods != 1 {
		t.Errorf("status %+v, want updated and ready", st)
	}
}

// A hot-upgrade native sidecar (a pair of init containers) is not upgraded in place.
func TestNativeSidecarHotUpgradeLeftOut(t *testing.T) {
	hot := nativeSet("proxy:v1", "setup:v1", func(s *appsv1alpha1.SidecarSet) {
		s.Spec.InitContainers[0].UpgradeStrategy = appsv1alpha1.SidecarContainerUpgradeStrategy{
			UpgradeType: appsv1alpha1.SidecarContainerHotUpgrade, HotUpgradeEmptyImage: "empty:v1"}
	})
	pod := nativePod(t)
	hot.Spec.InitContainers[0].Image = "proxy:v2"
	if got := UpgradeImages(pod, hot); len(got) != 0 {
		t.Errorf("images %v for a hot-upgrade native sidecar, want none", got)
	}
}
