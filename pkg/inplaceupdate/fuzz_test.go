package inplaceupdate

import (
	"encoding/json"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/inplace-dev/inplace/pkg/apis/apps"
	"github.com/inplace-dev/inplace/pkg/apis/apps/pub"
	"github.com/inplace-dev/inplace/pkg/apis/apps/v1alpha1"
	"github.com/inplace-dev/inplace/pkg/apis/apps/validation"
)

// FuzzPodUpdate feeds the engine what reaches it from outside: the body of a pods/inplaceupdate
// request (validated first, as the server does) and the Pod annotations anyone who may patch the
// Pod can write — the update state and grace period, the daemon's runtime-containers-meta, the
// SidecarSet hashes and upgrade states. Whatever they hold, SpecFromRequest, Begin, Progress and
// the readers the controllers and the daemon use return a value or an error; none panics.
func FuzzPodUpdate(f *testing.F) {
	f.Add(`{"revision":"r1","updateTimestamp":"2026-11-25T10:00:00Z","lastContainerStatuses":{"main":{"imageID":"sha256:a"}}}`,
		`{"revision":"r2","containerImages":{"main":"app:2"}}`,
		`{"containers":[{"name":"main","containerID":"containerd://1","plainHash":1,"hashes":{"plainHash":1}}]}`,
		`{"agent":{"updateTimestamp":"2026-11-25T10:00:00Z","hash":"h","sidecarSetControllerRevision":"rev"}}`,
		`{"agent":{"revision":"rev","updateTimestamp":"2026-11-25T10:00:00Z"}}`,
		[]byte(`{"spec":{"revision":"r2","containers":[{"name":"main","image":"app:2"}]}}`))
	f.Add("", "", "", "", "", []byte(`{"spec":{"containers":[{"name":"main","resources":{"limits":{"cpu":"2"}}}]}}`))
	// Regression: a SidecarSet upgrade state of null panicked SidecarSetUpgradesInProgress.
	f.Add("{", "[]", "null", `{"agent":"h"}`, `{"agent":null}`, []byte(`{"spec":{"labels":{"a":"b"},"env":{"main":{"X":"1"}}}}`))
	f.Add(`{"revision":"r1","nextContainerImages":{"main":"app:3"},"containerBatchesRecord":[{"containers":["main"]}]}`, "", "", "", "",
		[]byte(`{"spec":{"sidecarSet":{"name":"agent","revision":"rev","containers":[{"name":"agent","image":"agent:2"}]}}}`))

	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, state, grace, meta, sidecarHash, sidecarState string, body []byte) {
		pod := fuzzPod(map[string]string{
			pub.InPlaceUpdateStateKey:                   state,
			pub.InPlaceUpdateGraceKey:                   grace,
			pub.RuntimeContainerMetaKey:                 meta,
			pub.SidecarSetHashKey:                       sidecarHash,
			pub.SidecarSetInPlaceUpdateStateKey:         sidecarState,
			pub.SidecarSetHashWithoutImageKey:           sidecarHash,
			pub.SidecarSetWorkingHotUpgradeContainerKey: sidecarHash,
		})

		// The readers.
		_, _, _ = GetState(pod)
		_ = IsInProgress(pod)
		_ = InGracePeriod(pod)
		_ = IsCompleted(pod)
		_ = AnyInProgress(pod)
		_ = EnvRestartContainers(pod)
		_ = UnconfirmedImages(pod)
		_, _ = ImagesToWatch(pod)
		_ = KubeletObservedSpec(pod)
		_ = SidecarSetUpgradesInProgress(pod)
		_, _, _ = SidecarSetUpgradeState(pod, "agent")
		_, _ = SidecarSetHashes(pod, pub.SidecarSetHashKey)
		if step, err := Progress(pod.DeepCopy(), now); err == nil && step == nil {
			t.Fatalf("Progress returned neither a step nor an error")
		}

		// A request, as the server takes it: decode, convert, validate, then the engine.
		var in v1alpha1.InPlaceUpdate
		if json.Unmarshal(body, &in) != nil {
			return
		}
		req := &apps.InPlaceUpdate{}
		if err := v1alpha1.Convert_v1alpha1_InPlaceUpdate_To_apps_InPlaceUpdate(&in, req, nil); err != nil {
			return
		}
		if len(validation.ValidateInPlaceUpdate(req)) > 0 {
			return
		}
		spec, err := SpecFromRequest(pod, req)
		if err != nil || spec == nil {
			return
		}
		_ = spec.String()
		_, _ = Begin(pod.DeepCopy(), spec, now)
	})
}

// fuzzPod is a running Pod of two containers with the given annotations (empty values left out).
func fuzzPod(annotations map[string]string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			NodeName:       "node",
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: pub.InPlaceUpdateReady}},
			Containers: []corev1.Container{
				{Name: "main", Image: "app:1", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}},
				{Name: "agent", Image: "agent:1"},
			},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: pub.InPlaceUpdateReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "main", Image: "app:1", ImageID: "sha256:a", ContainerID: "containerd://1", Ready: true,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
				{Name: "agent", Image: "agent:1", ImageID: "sha256:b", ContainerID: "containerd://2", Ready: true,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			},
		},
	}
	for k, v := range annotations {
		if v != "" {
			pod.Annotations[k] = v
		}
	}
	return pod
}
