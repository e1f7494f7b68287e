package inplaceupdate

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
)

// begun is pod after Begin(spec) was written (conditions and Pod), as pods/inplaceupdate does.
func begun(t *testing.T, pod *corev1.Pod, spec *UpdateSpec) *corev1.Pod {
	t.Helper()
	step, err := Begin(pod, spec, t0)
	if err != nil {
		t.Fatal(err)
	}
	return write(t, pod, step)
}

func TestImagesToWatch(t *testing.T) {
	imageSpec := &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": "app:v2"}}
	twoContainers := func() *corev1.Pod {
		return withGate(runningPod(ctr("app", "app:v1"), ctr("sidecar", "sidecar:v1", envLabel("V", "version"))))
	}

	t.Run("image update of the last batch", func(t *testing.T) {
		pod := begun(t, twoContainers(), imageSpec)
		waits, ok := ImagesToWatch(pod)
		want := map[string]ImageWait{"app": {Image: "app:v2", PreviousImageID: imageIDOf("app:v1")}}
		if !ok || !reflect.DeepEqual(waits, want) {
			t.Fatalf("got %v %v, want %v", waits, ok, want)
		}
		// Once the condition is True (set by the daemon, or the update completed), nothing to do.
		SetConditions(&pod.Status, HandedOverConditions(pod, t0.Add(time.Second), ReasonNewImagesRunning)...)
		if c := getCondition(pod, pub.InPlaceUpdateReady); c.Status != corev1.ConditionTrue || c.Reason != ReasonNewImagesRunning {
			t.Fatalf("condition %+v", c)
		}
		if _, ok := ImagesToWatch(pod); ok {
			t.Fatal("watched with the condition True")
		}
		if conds := HandedOverConditions(pod, t0, ReasonNewSpecObserved); conds != nil {
			t.Fatalf("conditions again: %+v", conds)
		}
		// The update still completes from the Pod status, keeping the condition.
		kubeletRestart(pod, "app")
		step, err := Progress(pod, t0.Add(2*time.Second))
		if err != nil || !step.Done || step.Pod == nil || !IsCompleted(step.Pod) || len(step.Conditions) != 0 {
			t.Fatalf("completion after the daemon's condition: %v %+v", err, step)
		}
	})

	t.Run("last batch of a launch-priority update", func(t *testing.T) {
		pod := withGate(runningPod(ctr("main", "main:v1", barrier("0")), ctr("proxy", "proxy:v1", barrier("10"))))
		pod = begun(t, pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"main": "main:v2", "proxy": "proxy:v2"}})
		if waits, ok := ImagesToWatch(pod); ok {
			t.Fatalf("first batch watched while main waits for it: %v", waits)
		}
		kubeletRestart(pod, "proxy")
		step, err := Progress(pod, t0.Add(time.Second))
		if err != nil || step.Pod == nil {
			t.Fatalf("second batch not started: %v %+v", err, step)
		}
		pod = write(t, pod, step)
		waits, ok := ImagesToWatch(pod)
		want := map[string]ImageWait{"main": {Image: "main:v2", PreviousImageID: imageIDOf("main:v1")}}
		if !ok || !reflect.DeepEqual(waits, want) {
			t.Fatalf("got %v %v, want %v", waits, ok, want)
		}
	})

	cases := []struct {
		name string
		pod  func() *corev1.Pod
	}{
		{"no readiness gate", func() *corev1.Pod {
			return begun(t, runningPod(ctr("app", "app:v1")), imageSpec)
		}},
		{"no update", twoContainers},
		{"grace period", func() *corev1.Pod {
			spec := *imageSpec
			spec.GraceSeconds = 5
			return begun(t, twoContainers(), &spec)
		}},
		{"a next batch waits", func() *corev1.Pod {
			pod := withGate(runningPod(ctr("main", "main:v1", barrier("0")), ctr("proxy", "proxy:v1", barrier("10"))))
			return begun(t, pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"main": "main:v2", "proxy": "proxy:v2"}})
		}},
		{"env from metadata restart", func() *corev1.Pod {
			return begun(t, twoContainers(), &UpdateSpec{Revision: "rev-2",
				ContainerRefMetadata: map[string]metav1.ObjectMeta{"sidecar": {Labels: map[string]string{"version": "v2"}}}})
		}},
		{"image and env restart", func() *corev1.Pod {
			return begun(t, twoContainers(), &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": "app:v2"},
				ContainerRefMetadata: map[string]metav1.ObjectMeta{"sidecar": {Labels: map[string]string{"version": "v2"}}}})
		}},
		{"resize", func() *corev1.Pod {
			pod := withGate(runningPod(ctr("app", "app:v1", res("cpu=100m", "cpu=200m"))))
			return begun(t, pod, &UpdateSpec{Revision: "rev-2", ContainerImages: map[string]string{"app": "app:v2"},
				ContainerResources: map[string]corev1.ResourceRequirements{"app": resources("cpu=150m", "cpu=200m")}})
		}},
		{"completed", func() *corev1.Pod {
			pod := begun(t, twoContainers(), imageSpec)
			kubeletRestart(pod, "app")
			step, err := Progress(pod, t0.Add(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			pod = write(t, pod, step)
			// A leftover False condition must not make a completed update watched.
			SetConditions(&pod.Status, corev1.PodCondition{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionFalse, Reason: ReasonStartInPlaceUpdate})
			return pod
		}},
		{"being deleted", func() *corev1.Pod {
			pod := begun(t, twoContainers(), imageSpec)
			pod.DeletionTimestamp = &metav1.Time{Time: t0}
			return pod
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if waits, ok := ImagesToWatch(tc.pod()); ok {
				t.Fatalf("watched: %v", waits)
			}
		})
	}
}

func TestKubeletObservedSpec(t *testing.T) {
	for _, tc := range []struct {
		generation, observed int64
		want                 bool
	}{
		{0, 0, false}, // no generation tracking
		{3, 0, false}, // a kubelet that does not report it
		{3, 2, false},
		{3, 3, true},
		{3, 4, true},
	} {
		pod := runningPod(ctr("app", "app:v1"))
		pod.Generation, pod.Status.ObservedGeneration = tc.generation, tc.observed
		if got := KubeletObservedSpec(pod); got != tc.want {
			t.Errorf("generation %d observed %d: %v, want %v", tc.generation, tc.observed, got, tc.want)
		}
	}
}
